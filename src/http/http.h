/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP endpoints' server (http stage): what libkiln.so's public API
 * (libkiln/api.c: kiln_http_start() and the rest, which keep kiln's own
 * allocations out of the program's heap profile around these) and the
 * KILN_HTTP server (envserve.c) call.  The endpoints are docs/http.md's.
 */
#ifndef KILN_HTTP_HTTP_H
#define KILN_HTTP_HTTP_H

struct kiln_http;
struct kiln_prof;
struct kiln_buf;

/* Starts a server on addr (HOST:PORT, :PORT, PORT); *out is the
 * caller's until kiln_httpd_stop().  0 or -errno (-EADDRINUSE). */
int kiln_httpd_start(const char *addr, struct kiln_http **out);

/* The port srv listens on, -EINVAL for NULL. */
int kiln_httpd_port(const struct kiln_http *srv);

/* Stops srv (answers under way let out first) and frees it.  0 or
 * -errno. */
int kiln_httpd_stop(struct kiln_http *srv);

/*
 * In a forked child: the servers are the parent's (their threads stayed
 * there); the child's copies of their listening sockets and wake fds are
 * closed if still kiln's, so that a daemon that keeps its inherited fds
 * does not hold the port its heir must bind once the parent is gone.
 */
void kiln_httpd_fork_child(void);

/*
 * How the endpoints draw a profile for a browser (?format=svg, html):
 * kiln's flame graph and kiln serve's saved page belong to the CLI's
 * stages (render/, web/), linked into the .so but not below http/:
 * libkiln/draw.c hands them over before any server starts.  Each returns
 * 0 or -errno; p is the endpoint's (copied where kept), `type` the sample
 * type shown.  Without them those formats answer 501.
 */
struct kiln_http_draw {
	int (*flame_svg)(struct kiln_prof *p, int type, const char *title,
			 struct kiln_buf *out);
	int (*page)(struct kiln_prof *p, int type, const char *title,
		    struct kiln_buf *out);
};
void kiln_http_set_draw(const struct kiln_http_draw *d);

/* ---- hooks libkiln/life.c calls (envserve.c) ---- */

void kiln_http_load(void);		/* KILN_HTTP's server */
void kiln_http_fork_prepare(void);	/* KILN_HTTP_CHILDREN's channel */
void kiln_http_fork_child(void);	/* the server's heir */

#endif
