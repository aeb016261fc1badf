/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request plumbing of the /debug/pprof/ server (http stage, inside
 * the profiled process): libmicrohttpd's request callbacks, run on its
 * polling thread -- the bearer token and the browser checks from the
 * headers before any body is read, the body kept up to its cap, the path
 * dispatched to the endpoints, the request's end counted.  The server
 * and its threads are http.c's (httpint.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/httpint.h"
#include "runtime/log.h"
#include "util/origin.h"

/* ---- dispatch ---- */

/* Collects the query string of a GET symbol request ("?0xA+0xB"). */
static enum MHD_Result add_query_key(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	struct kiln_buf *b = cls;

	/* MHD turns the '+' of the query into spaces: both separate. */
	kiln_buf_adds(b, key);
	kiln_buf_addc(b, '+');
	if (value) {
		kiln_buf_adds(b, value);
		kiln_buf_addc(b, '+');
	}
	return MHD_YES;
}

static enum MHD_Result refuse_unauthorized(struct MHD_Connection *c)
{
	struct MHD_Response *r = khttp_text_response("unauthorized: this server wants "
					       "'Authorization: Bearer TOKEN' (KILN_HTTP_TOKEN)");

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"kiln\"");
	return khttp_queue(c, MHD_HTTP_UNAUTHORIZED, r);
}

/* Whether the request has the "Authorization: Bearer TOKEN" asked for. */
static bool authorized(const struct kiln_http *srv, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);

	if (!srv->token)
		return true;
	if (!h || strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return false;
	return kiln_origin_token_eq(srv->token, h + 7);
}

/* Why a browser's request is refused (util/origin.h), NULL if it is not. */
static const char *origin_refusal(const struct kiln_http *srv,
				  struct MHD_Connection *c, const char *method)
{
	struct kiln_origin_req rq = {
		method,
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site"),
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Mode"),
	};

	return kiln_origin_refusal(&rq, srv->port, srv->loopback);
}

enum MHD_Result khttp_on_request(void *cls, struct MHD_Connection *c,
				 const char *url, const char *method,
				 const char *version, const char *upload,
				 size_t *upload_size, void **ctx)
{
	struct kiln_http *srv = cls;
	struct req *rq = *ctx;
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) ||
		   !strcmp(method, MHD_HTTP_METHOD_HEAD);
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
	const char *path;

	if (!rq) {
		struct conn *k = khttp_conn_of(c);
		const char *why;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*ctx = rq;
		/* The headers are in, no byte of a body has been read: a page
		 * of another site (or a DNS-rebound name), and a client without
		 * the token, are answered now, their bodies never buffered. */
		why = origin_refusal(srv, c, method);
		if (why)
			return khttp_queue(c, MHD_HTTP_FORBIDDEN,
					   khttp_text_response("refused: %s", why));
		if (!authorized(srv, c))
			return refuse_unauthorized(c);
		if (k) {
			pthread_mutex_lock(&srv->glock);
			khttp_conn_set_proven(srv, k, true);
			/* a profile's own seconds are added by its handler */
			k->deadline_ms = khttp_now_ms() + HTTP_REQUEST_DEADLINE * 1000;
			pthread_mutex_unlock(&srv->glock);
		}
		return MHD_YES;
	}
	if (rq->state == REQ_SUSPENDED) {
		/* Resumed by the CPU profile worker with the answer. */
		struct MHD_Response *r = rq->resp;

		rq->resp = NULL;
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
					  HTTP_IDLE_TIMEOUT);
		return khttp_queue(c, rq->code, r);
	}
	if (*upload_size) {
		struct conn *k = khttp_conn_of(c);

		if (k) {
			int64_t deadline;

			pthread_mutex_lock(&srv->glock);
			deadline = k->deadline_ms;
			pthread_mutex_unlock(&srv->glock);
			if (khttp_now_ms() > deadline)
				return MHD_NO;	/* a body trickled past it */
		}
		/* Only symbol lookups have a body worth keeping; without a
		 * token anyone may send one, so a small one. */
		if (post && !rq->body_too_big) {
			if (rq->body.len + *upload_size > khttp_body_max(srv)) {
				rq->body_too_big = true;
				rq->body_max = khttp_body_max(srv);
				kiln_buf_release(&rq->body);
			} else if (kiln_buf_add(&rq->body, upload, *upload_size)) {
				return MHD_NO;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}

	kiln_rt_log(KILN_LOG_DEBUG, "http: %s %s", method, url);
	if (strncmp(url, "/debug/pprof", 12))
		goto not_found;
	path = url + 12;
	if (*path == '/')
		path++;
	else if (*path)
		goto not_found;

	if (!strcmp(path, "symbol")) {
		struct kiln_buf query = KILN_BUF_INIT;
		enum MHD_Result ret;

		if (!get && !post)
			goto bad_method;
		if (!post)
			MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query_key,
						  &query);
		ret = khttp_do_symbol(c, rq, query.data ? query.data : "");
		kiln_buf_release(&query);
		return ret;
	}
	if (!get)
		goto bad_method;
	if (!*path)
		return khttp_do_index(c);
	if (!strcmp(path, "profile"))
		return khttp_do_profile(srv, c, rq);
	if ((!strcmp(path, "heap") || !strcmp(path, "allocs")) && !kiln_htrace_available())
		return khttp_do_heap_off(c, path);
	if (!strcmp(path, "heap") || !strcmp(path, "allocs"))
		return khttp_do_heap(srv, c, rq, path);
	if (!strcmp(path, "cmdline"))
		return khttp_do_cmdline(c);
	if (!strcmp(path, "mutex") || !strcmp(path, "block"))
		return khttp_do_contention(c, path);
	if (!strcmp(path, "goroutine") || !strcmp(path, "threadcreate"))
		return khttp_do_goroutine(c);
not_found:
	return khttp_queue(c, MHD_HTTP_NOT_FOUND,
			   khttp_text_response("404 page not found: %s (the profiles are under "
					 "/debug/pprof/)", url));
bad_method:
	{
		struct MHD_Response *r = khttp_text_response("method %s not allowed here", method);

		if (r)
			MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
						!strcmp(path, "symbol") ?
						"GET, HEAD, POST" : "GET, HEAD");
		return khttp_queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	}
}

void khttp_on_completed(void *cls, struct MHD_Connection *c, void **ctx,
			enum MHD_RequestTerminationCode why)
{
	struct kiln_http *srv = cls;
	struct req *rq = *ctx;

	if (!rq)
		return;
	{
		/* A kept-alive connection waits for its next request: it has
		 * the deadline and quota of a new one. */
		struct conn *k = khttp_conn_of(c);

		if (k) {
			pthread_mutex_lock(&srv->glock);
			if (k->fd >= 0) {
				khttp_conn_set_proven(srv, k, false);
				k->deadline_ms = khttp_now_ms() +
						 HTTP_REQUEST_DEADLINE * 1000;
			}
			pthread_mutex_unlock(&srv->glock);
		}
	}
	if (rq->state == REQ_SUSPENDED) {
		pthread_mutex_lock(&srv->lock);
		if (!--srv->suspended)
			pthread_cond_broadcast(&srv->idle);
		pthread_mutex_unlock(&srv->lock);
	}
	if (rq->resp)
		MHD_destroy_response(rq->resp);
	kiln_buf_release(&rq->body);
	free(rq);
	*ctx = NULL;
}

/* MHD's own messages, at KILN_LOG=debug. */
void khttp_on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	kiln_rt_log(KILN_LOG_DEBUG, "http: libmicrohttpd: %s", buf);
}
