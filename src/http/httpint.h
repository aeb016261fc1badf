/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP part's insides, shared by its files (the interface is
 * kiln/kiln.h's kiln_http_* and docs/http.md):
 *
 *   http.c       libmicrohttpd loaded, the servers, the connection guard,
 *                the listening socket, the API
 *   request.c    the dispatch of a request (libmicrohttpd's callbacks)
 *   respond.c    responses and query parameters
 *   profile.c    the endpoints answered by a worker thread: CPU profiles,
 *                heap and allocs
 *   endpoints.c  the other endpoints (index, goroutine, cmdline, symbol,
 *                the empty mutex/block profiles)
 *   workers.c    KILN_HTTP_CHILDREN: the forked workers' share of a CPU
 *                profile (workers.h)
 */
#ifndef KILN_HTTP_HTTPINT_H
#define KILN_HTTP_HTTPINT_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "runtime/kfd.h"
#include "heap/htrace.h"
#include "util/buf.h"
#include "util/mhd.h"

#define KHTTP_HIDDEN __attribute__((visibility("hidden")))

#define KILN_API __attribute__((visibility("default")))

#define HTTP_CONN_LIMIT 64
#define HTTP_IDLE_TIMEOUT 30		/* seconds */
/* Seconds a connection has to send a whole request (headers and body),
 * and to read an answer, however slowly it trickles. */
#define HTTP_REQUEST_DEADLINE 20
/* Connections that have waited over HTTP_GRACE_MS without an authorized
 * request (clients still sending headers, kept-alive or refused ones)
 * kept at once; all loopback clients share one address, so a
 * per-address limit would not separate them.  A burst of fast clients is
 * younger than the grace and never shed. */
#define HTTP_UNPROVEN_QUOTA 8
#define HTTP_GRACE_MS 1000
#define HTTP_BODY_MAX (4u << 20)	/* symbol lookups: ~250k addresses */
/* Without a token: ~1,000 addresses, and 60 clients hold 1 MB, not 240. */
#define HTTP_BODY_MAX_OPEN (16u << 10)
#define HTTP_TOP_ROWS 200		/* rows of the ?debug=1 table */
/* How long a CPU profile waits, after its window, for the forked
 * workers' answers (KILN_HTTP_CHILDREN=1: each symbolizes its own). */
#define HTTP_WORKERS_GRACE_MS 15000
/* How long kiln_http_stop() lets the answers of suspended requests go
 * out (a 503 is small; a profile finished just then, to a slow reader,
 * may not make it). */
#define HTTP_STOP_FLUSH_MS 3000

/* libmicrohttpd is loaded when the first server starts, not with
 * libkiln.so (util/mhd.h: the MHD_* calls go through its table). */

struct kiln_http {
	struct MHD_Daemon *mhd;
	int port;
	char name[INET6_ADDRSTRLEN + 16];	/* "127.0.0.1:6060", "[::1]:6060" */
	char *token;				/* KILN_HTTP_TOKEN, or NULL */
	bool loopback;				/* listening on loopback only */
	size_t token_len;
	/* eventfd: readable once the server stops (kiln's fd, checked) */
	struct kiln_kfd wake;
	struct kiln_kfd listen;	/* the socket MHD got: closed if still ours */
	pthread_mutex_t lock;
	pthread_cond_t idle;	/* CLOCK_MONOTONIC; jobs or suspended dropped to 0 */
	unsigned jobs;		/* CPU profile workers still running */
	/* Requests suspended for a worker and not yet completed by MHD
	 * (their answer sent, or their connection gone). */
	unsigned suspended;
	bool stopping;
	/* Every open connection, oldest first (the connection guard's),
	 * under glock.  MHD's thread adds and removes them; the guard thread
	 * sheds them every second, since a server full of slow clients
	 * accepts no connection that would run the shedding on MHD's side. */
	pthread_mutex_t glock;
	struct conn *conns_head, *conns_tail;
	unsigned unproven;	/* connections with proven == false */
	pthread_t guard;
	bool guard_on;
	pthread_cond_t guard_cv;	/* CLOCK_MONOTONIC; signalled at stop */
	pid_t pid;		/* the process whose threads serve */
	struct kiln_http *next;	/* running servers (servers_lock) */
};

/*
 * A connection as the guard sees it (MHD's socket context), under the
 * server's glock.  libmicrohttpd closes a connection's socket only after
 * its NOTIFY_CLOSED callback, which takes glock to unlist it: while it is
 * listed, and glock held, its socket is still the connection's, so
 * shutting it down never reaches a descriptor the host has reused.
 */
struct conn {
	struct kiln_http *srv;
	struct conn *prev, *next;
	int fd;
	dev_t dev;		/* the socket's identity, checked before */
	ino_t ino;		/* a shutdown (a host may close any fd) */
	int64_t deadline_ms;	/* CLOCK_MONOTONIC: shut down after this */
	int64_t waiting_ms;	/* when it last became unproven */
	bool proven;		/* an authorized request is being answered */
};

enum req_state { REQ_NEW, REQ_SUSPENDED };

/* One request (MHD's per-connection request context). */
struct req {
	enum req_state state;
	struct kiln_buf body;		/* POST body (symbol lookups) */
	bool body_too_big;
	size_t body_max;	/* the cap it went over */
	/* Set by a CPU profile worker before it resumes the connection. */
	struct MHD_Response *resp;
	unsigned code;
};

/* How a CPU profile is answered. */
enum out_fmt { OUT_PPROF, OUT_TEXT, OUT_HTML, OUT_SVG };

/* What a suspended request waits for. */
enum job_kind {
	JOB_CPU,	/* a CPU profile over seconds */
	JOB_HEAP,	/* /heap: in-use now, or the difference over seconds */
	JOB_ALLOCS,	/* /allocs: since start, or during the next seconds */
};

/* A profile being taken for a suspended request. */
struct job {
	struct kiln_http *srv;
	struct MHD_Connection *conn;
	struct req *req;
	enum job_kind kind;
	int seconds;		/* heap, allocs: 0 for none */
	int hz;
	enum out_fmt fmt;
	int client_fd;
	struct kiln_htrace_snap base;	/* heap, allocs with seconds */
};

/* The most bytes of a request body kept: small where no token is asked. */
static inline size_t khttp_body_max(const struct kiln_http *srv)
{
	return srv->token ? HTTP_BODY_MAX : HTTP_BODY_MAX_OPEN;
}

static inline int64_t khttp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* respond.c: answers (NULL: no memory) and the query's parameters. */
KHTTP_HIDDEN struct MHD_Response *khttp_response_take(struct kiln_buf *b,
						      const char *ctype);
KHTTP_HIDDEN struct MHD_Response *khttp_text_response(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
KHTTP_HIDDEN enum MHD_Result khttp_queue(struct MHD_Connection *c,
					 unsigned code, struct MHD_Response *r);
KHTTP_HIDDEN const char *khttp_quote(const char *v, char *out, size_t n);
KHTTP_HIDDEN const char *khttp_arg(struct MHD_Connection *c, const char *key);
KHTTP_HIDDEN int khttp_int_arg(struct MHD_Connection *c, const char *key,
			       long lo, long hi, long def, const char *what,
			       long *out, struct MHD_Response **resp);

/* profile.c: /profile, /heap and /allocs, answered by a worker thread. */
KHTTP_HIDDEN enum MHD_Result khttp_do_profile(struct kiln_http *srv,
					      struct MHD_Connection *c,
					      struct req *rq);
KHTTP_HIDDEN enum MHD_Result khttp_do_heap(struct kiln_http *srv,
					   struct MHD_Connection *c,
					   struct req *rq, const char *what);

/* endpoints.c: the paths answered at once. */
KHTTP_HIDDEN enum MHD_Result khttp_do_index(struct MHD_Connection *c);
KHTTP_HIDDEN enum MHD_Result khttp_do_contention(struct MHD_Connection *c,
						 const char *what);
KHTTP_HIDDEN enum MHD_Result khttp_do_heap_off(struct MHD_Connection *c,
					       const char *what);
KHTTP_HIDDEN enum MHD_Result khttp_do_goroutine(struct MHD_Connection *c);
KHTTP_HIDDEN enum MHD_Result khttp_do_cmdline(struct MHD_Connection *c);
KHTTP_HIDDEN enum MHD_Result khttp_do_symbol(struct MHD_Connection *c,
					     struct req *rq, const char *query);

/* http.c: the guard's deadline of connection c pushed seconds further. */
KHTTP_HIDDEN void khttp_conn_extend(struct MHD_Connection *c, long seconds);
/* The guard's record of connection c, NULL if it has none. */
KHTTP_HIDDEN struct conn *khttp_conn_of(struct MHD_Connection *c);
/* Connection k (un)proven, with srv->glock held. */
KHTTP_HIDDEN void khttp_conn_set_proven(struct kiln_http *srv, struct conn *k,
					bool proven);

/* request.c: libmicrohttpd's request callbacks (see MHD_start_daemon()). */
KHTTP_HIDDEN enum MHD_Result khttp_on_request(void *cls,
					      struct MHD_Connection *c,
					      const char *url,
					      const char *method,
					      const char *version,
					      const char *upload,
					      size_t *upload_size, void **ctx);
KHTTP_HIDDEN void khttp_on_completed(void *cls, struct MHD_Connection *c,
				     void **ctx,
				     enum MHD_RequestTerminationCode why);
KHTTP_HIDDEN void khttp_on_mhd_log(void *cls, const char *fmt, va_list ap);

#endif
