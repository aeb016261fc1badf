/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Requests a web page could make a browser send to a local server (util
 * stage; used by kiln serve and by libkiln.so's /debug/pprof server):
 *
 * - DNS rebinding: a page on evil.example has its name resolve to
 *   127.0.0.1 and reads the answers as its own.  The browser still sends
 *   "Host: evil.example": a loopback server answers only Host values
 *   that name loopback (localhost, 127.x.y.z, [::1], this machine's own
 *   name) at its own port.
 * - Cross-site requests: a page's <img>, form or fetch reaching the
 *   server with the user's browser.  It cannot read the answer, but the
 *   request acts (starts an hour-long profile, posts a body).  Browsers
 *   say where a request comes from (Origin, Sec-Fetch-Site): one from
 *   another site is refused, but a top-level GET navigation (the user
 *   following a link, seeing where it goes; a form's POST is refused).
 *   Clients that are not browsers (go tool pprof, curl, scrapers) send
 *   neither header.
 *
 * Pure functions of the header values: no I/O but gethostname().
 */
#ifndef KILN_UTIL_ORIGIN_H
#define KILN_UTIL_ORIGIN_H

#include <stdbool.h>

struct kiln_origin_req {
	const char *method;		/* "GET", "POST", ... */
	const char *host;		/* Host header, NULL: none */
	const char *origin;		/* Origin header, NULL: none */
	const char *fetch_site;		/* Sec-Fetch-Site, NULL: none */
	const char *fetch_mode;		/* Sec-Fetch-Mode, NULL: none */
};

/*
 * Whether a request may be answered by a server listening on port,
 * loopback only or not: NULL if it may, else why not (a static sentence
 * for a 403 answer).  A server that listens beyond loopback checks no
 * Host (any name may reach it; its token guards it) but still refuses
 * cross-site requests.
 */
const char *kiln_origin_refusal(const struct kiln_origin_req *rq, int port,
				bool loopback);

/*
 * Whether given (a header's or a parameter's value, blanks around it
 * ignored) is token, compared in constant time.  An empty token matches
 * nothing.
 */
bool kiln_origin_token_eq(const char *token, const char *given);

/*
 * Whether the Host header value names loopback at port (a missing port
 * means 80).  Exposed for the tests.
 */
bool kiln_origin_host_loopback(const char *host, int port);

#endif
