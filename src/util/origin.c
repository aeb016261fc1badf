/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Requests a web page could make a browser send (util stage; origin.h).
 */
#include "util/origin.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Whether name (len bytes, no port) is a loopback name or address. */
static bool loopback_name(const char *name, size_t len)
{
	char buf[256], own[256];
	struct in_addr a4;
	struct in6_addr a6;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (buf[0] == '[') {
		if (buf[len - 1] != ']')
			return false;
		buf[len - 1] = '\0';
		return inet_pton(AF_INET6, buf + 1, &a6) == 1 &&
		       (IN6_IS_ADDR_LOOPBACK(&a6) ||
			(IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127));
	}
	/* A trailing dot is the same name ("localhost."). */
	if (buf[len - 1] == '.')
		buf[--len] = '\0';
	if (!strcasecmp(buf, "localhost") ||
	    (len > 10 && !strcasecmp(buf + len - 10, ".localhost")))
		return true;
	/* inet_aton() would take "127.1" and "0x7f.1": browsers write
	 * dotted quads in the Host header, nothing else is needed. */
	if (inet_pton(AF_INET, buf, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	/* This machine's own name: a page elsewhere cannot make the
	 * browser send it (Debian resolves it to 127.0.1.1). */
	if (!gethostname(own, sizeof(own))) {
		own[sizeof(own) - 1] = '\0';
		if (own[0] && !strcasecmp(buf, own))
			return true;
	}
	return false;
}

bool kiln_origin_host_loopback(const char *host, int port)
{
	const char *colon, *end;
	long p = 80;
	char *e;

	if (!host)
		return false;
	end = host + strlen(host);
	if (host[0] == '[') {
		const char *close = strchr(host, ']');

		if (!close)
			return false;
		colon = close[1] == ':' ? close + 1 : NULL;
		if (!colon && close[1])
			return false;
	} else {
		colon = strchr(host, ':');
		if (colon && strchr(colon + 1, ':'))
			return false;
	}
	if (colon) {
		if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return false;
		p = strtol(colon + 1, &e, 10);
		end = colon;
	}
	return p == port && loopback_name(host, (size_t)(end - host));
}

/* Whether origin ("http://HOST[:PORT]") names the same host as host. */
static bool same_origin(const char *origin, const char *host)
{
	if (!host || strncasecmp(origin, "http://", 7))
		return false;
	return !strcasecmp(origin + 7, host);
}

const char *kiln_origin_refusal(const struct kiln_origin_req *rq, int port,
				bool loopback)
{
	bool safe = rq->method && (!strcmp(rq->method, "GET") ||
				   !strcmp(rq->method, "HEAD"));
	bool navigate = safe && rq->fetch_mode &&
			!strcasecmp(rq->fetch_mode, "navigate");

	if (loopback && rq->host && !kiln_origin_host_loopback(rq->host, port))
		return "the Host header does not name this loopback server "
		       "(use http://127.0.0.1:PORT/ or http://localhost:PORT/)";
	if (loopback && !rq->host && (rq->origin || rq->fetch_site))
		return "a browser's request without a Host header";
	/* A browser says where the request comes from: another site's page
	 * may only navigate here (the user sees where it goes). */
	if (rq->fetch_site && strcasecmp(rq->fetch_site, "same-origin") &&
	    strcasecmp(rq->fetch_site, "none") && !navigate)
		return "a request from another site's page";
	/* Browsers without Sec-Fetch-* still send Origin on cross-origin
	 * fetches and on every POST ("null" from sandboxed and file: pages,
	 * never this server's). */
	if (rq->origin && !same_origin(rq->origin, rq->host) && !navigate)
		return "a request from another origin's page";
	return NULL;
}

bool kiln_origin_token_eq(const char *token, const char *given)
{
	size_t n = strlen(token), m, i;
	unsigned char diff;

	while (*given == ' ' || *given == '\t')
		given++;
	m = strlen(given);
	while (m && (given[m - 1] == ' ' || given[m - 1] == '\t'))
		m--;
	/* Constant time in the token's length: no byte-by-byte guessing. */
	diff = m != n;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)((i < m ? given[i] : 0) ^ token[i]);
	return !diff && n;
}
