/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the HTTP server parses itself (http stage): the Accept header and
 * the listening address.  Plain functions of strings, apart from the
 * server so that tests/fuzz/fuzz-http.c reaches them without one.
 */
#include "http/parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Keeps the q-value of the most specific media range matching so far. */
static void consider(int spec, double q, int *best_spec, double *best_q)
{
	if (spec > *best_spec) {
		*best_spec = spec;
		*best_q = q;
	} else if (spec == *best_spec && q > *best_q) {
		*best_q = q;
	}
}

/*
 * Whether an Accept header prefers text/html to a binary answer.  Each
 * side takes the q-value of its most specific matching range (2: exact
 * type, 1: "text/" or "application/" wildcard, 0: any), as RFC 9110 says;
 * html wins on a higher q, or on the same q with a more specific match.
 * So a browser's "text/html,...,STAR/STAR;q=0.8" gets the flame graph, and
 * curl's "STAR/STAR" or no header at all (go tool pprof) gets protobuf.
 */
bool kiln_http_prefers_html(const char *accept)
{
	double qh = 0, qb = 0;
	int sh = -1, sb = -1;
	const char *p = accept;

	if (!accept)
		return false;
	while (*p) {
		const char *range = p, *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[128], *s, *t, *semi;
		double q = 1.0;

		p = end ? end + 1 : p + len;
		if (len >= sizeof(item))
			continue;	/* no media range of ours is that long */
		memcpy(item, range, len);
		item[len] = '\0';
		semi = strchr(item, ';');
		if (semi) {
			*semi = '\0';
			for (s = semi + 1; s; s = strchr(s, ';') ? strchr(s, ';') + 1 : NULL) {
				while (*s == ' ' || *s == '\t')
					s++;
				if ((s[0] == 'q' || s[0] == 'Q') && s[1] == '=')
					q = strtod(s + 2, NULL);
			}
		}
		for (s = item; *s == ' ' || *s == '\t'; s++)
			;
		t = s + strlen(s);
		while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
			*--t = '\0';
		if (!strcasecmp(s, "*/*")) {
			consider(0, q, &sh, &qh);
			consider(0, q, &sb, &qb);
		} else if (!strcasecmp(s, "text/*")) {
			consider(1, q, &sh, &qh);
		} else if (!strcasecmp(s, "text/html")) {
			consider(2, q, &sh, &qh);
		} else if (!strcasecmp(s, "application/*")) {
			consider(1, q, &sb, &qb);
		} else if (!strcasecmp(s, "application/octet-stream") ||
			   !strcasecmp(s, "application/x-protobuf") ||
			   !strcasecmp(s, "application/vnd.google.protobuf")) {
			consider(2, q, &sb, &qb);
		}
	}
	if (sh < 0 || qh <= 0)
		return false;
	return qh > qb || (qh == qb && sh > sb);
}

/*
 * Splits "HOST:PORT", "[V6]:PORT", ":PORT" (host "") or "PORT" (loopback).
 * host receives the address without brackets.  0 or -EINVAL.
 */
int kiln_http_parse_addr(const char *addr, char *host, size_t hostsz,
			 unsigned *port)
{
	const char *colon, *p;
	size_t hl;
	unsigned long x;
	char *end;

	if (!addr || !*addr)
		return -EINVAL;
	for (p = addr; isdigit((unsigned char)*p); p++)
		;
	if (!*p) {
		/* KILN_HTTP=6060: loopback, as the safe default */
		snprintf(host, hostsz, "127.0.0.1");
		p = addr;
	} else if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - addr - 1);
		if (!hl || hl >= hostsz)
			return -EINVAL;
		memcpy(host, addr + 1, hl);
		host[hl] = '\0';
		if (!strchr(host, ':'))
			return -EINVAL;
		p = close + 2;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - addr);
		if (hl >= hostsz || memchr(addr, ':', hl))
			return -EINVAL;	/* an IPv6 address wants brackets */
		memcpy(host, addr, hl);
		host[hl] = '\0';
		p = colon + 1;
	}
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	errno = 0;
	x = strtoul(p, &end, 10);
	if (*end || errno || x > 65535)
		return -EINVAL;
	*port = (unsigned)x;
	return 0;
}
