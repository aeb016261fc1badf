/*
 * The /debug/pprof/ HTTP endpoints (http stage), served by libmicrohttpd
 * from inside the profiled process, compatible with Go's net/http/pprof
 * so that `go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=5`,
 * Grafana Alloy/Pyroscope and Parca can fetch CPU profiles of a running
 * program (SPEC section 4, docs/http.md).
 *
 * The server must never hurt its host:
 * - one internal polling thread (epoll) serves every connection; a CPU
 *   profile request is suspended (MHD suspend/resume) while a worker
 *   thread of its own waits out the seconds, so a 30 s profile blocks
 *   nothing else;
 * - at most HTTP_CONN_LIMIT connections, idle ones closed after
 *   HTTP_IDLE_TIMEOUT s, request bodies capped at HTTP_BODY_MAX bytes;
 * - slow clients cannot lock the others out (see "the connection guard"):
 *   a connection has HTTP_REQUEST_DEADLINE s to send a whole request,
 *   however it trickles its bytes, and at most HTTP_UNPROVEN_QUOTA
 *   connections may wait longer than HTTP_GRACE_MS without having sent
 *   an authorized request: a new one sheds the oldest of them;
 * - the bearer token is checked from the headers, before any body is read;
 * - its threads start with every asynchronous signal blocked: the host's
 *   SIGTERM/SIGINT handlers never run on them, SIGPROF timers aimed at
 *   them stay pending (the sampler does not count the server as the
 *   host's work), and a SIGPIPE from a socket whose peer left (MHD sends
 *   with MSG_NOSIGNAL anyway) can never kill the process;
 * - the listening socket is close-on-exec.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "agent/agent.h"
#include "agent/kfd.h"
#include "format/format.h"
#include "heap/heap.h"
#include "http/parse.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "web/web.h"
#include "runtime/env.h"
#include "profile/top.h"
#include "render/flame.h"
#include "symbolize/symbolize.h"
#include "util/file.h"

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
#define HTTP_TOP_ROWS 200		/* rows of the ?debug=1 table */
/* How long kiln_http_stop() lets the answers of suspended requests go
 * out (a 503 is small; a profile finished just then, to a slow reader,
 * may not make it). */
#define HTTP_STOP_FLUSH_MS 3000

/*
 * libmicrohttpd is loaded when the first server starts, not with
 * libkiln.so: Debian's build brings GnuTLS, p11-kit and eight more
 * libraries, whose constructors and destructors would otherwise run in
 * every program the agent is preloaded into, HTTP or not.  The functions
 * are called through this table; the macros keep the code reading as
 * plain MHD calls.
 */
#define MHD_SONAME "libmicrohttpd.so.12"

static struct {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_quiesce_daemon) *quiesce_daemon;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_lookup_connection_value) *lookup_connection_value;
	__typeof__(MHD_get_connection_values) *get_connection_values;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_set_connection_option) *set_connection_option;
	__typeof__(MHD_suspend_connection) *suspend_connection;
	__typeof__(MHD_resume_connection) *resume_connection;
} mhd;

static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static int mhd_err;

static void mhd_load(void)
{
	void *h = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		kiln_agent_log(KILN_LOG_ERROR, "http: cannot load %s: %s", MHD_SONAME,
			       dlerror());
		mhd_err = -ELIBACC;
		return;
	}
#define LOAD(f) \
	if (!(*(void **)&mhd.f = dlsym(h, "MHD_" #f))) { \
		kiln_agent_log(KILN_LOG_ERROR, "http: no MHD_" #f " in %s", MHD_SONAME); \
		mhd_err = -ELIBBAD; \
		return; \
	}
	LOAD(start_daemon)
	LOAD(stop_daemon)
	LOAD(quiesce_daemon)
	LOAD(create_response_from_buffer)
	LOAD(add_response_header)
	LOAD(destroy_response)
	LOAD(queue_response)
	LOAD(lookup_connection_value)
	LOAD(get_connection_values)
	LOAD(get_connection_info)
	LOAD(set_connection_option)
	LOAD(suspend_connection)
	LOAD(resume_connection)
#undef LOAD
	/* never closed: its threads and callbacks may outlive any server */
}

#define MHD_start_daemon mhd.start_daemon
#define MHD_stop_daemon mhd.stop_daemon
#define MHD_quiesce_daemon mhd.quiesce_daemon
#define MHD_create_response_from_buffer mhd.create_response_from_buffer
#define MHD_add_response_header mhd.add_response_header
#define MHD_destroy_response mhd.destroy_response
#define MHD_queue_response mhd.queue_response
#define MHD_lookup_connection_value mhd.lookup_connection_value
#define MHD_get_connection_values mhd.get_connection_values
#define MHD_get_connection_info mhd.get_connection_info
#define MHD_set_connection_option mhd.set_connection_option
#define MHD_suspend_connection mhd.suspend_connection
#define MHD_resume_connection mhd.resume_connection

struct kiln_http {
	struct MHD_Daemon *mhd;
	int port;
	char name[INET6_ADDRSTRLEN + 16];	/* "127.0.0.1:6060", "[::1]:6060" */
	char *token;				/* KILN_HTTP_TOKEN, or NULL */
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
 * The servers running, stopped when the process exits so that requests
 * still waiting (a CPU profile over seconds) get a 503 instead of a
 * connection closed without an answer.  A forked child's copies are not
 * its own (their threads stayed in the parent) and are left alone.
 */
static pthread_mutex_t servers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kiln_http *servers;
static pthread_once_t servers_once = PTHREAD_ONCE_INIT;

static void servers_stop_at_exit(void)
{
	struct kiln_http *srv;

	for (;;) {
		pthread_mutex_lock(&servers_lock);
		for (srv = servers; srv && srv->pid != getpid(); srv = srv->next)
			;
		pthread_mutex_unlock(&servers_lock);
		if (!srv)
			return;
		kiln_agent_log(KILN_LOG_DEBUG, "http: stopping %s at exit", srv->name);
		kiln_http_stop(srv);
	}
}

static void servers_init(void)
{
	atexit(servers_stop_at_exit);
}

static void servers_add(struct kiln_http *srv)
{
	pthread_once(&servers_once, servers_init);
	srv->pid = getpid();
	pthread_mutex_lock(&servers_lock);
	srv->next = servers;
	servers = srv;
	pthread_mutex_unlock(&servers_lock);
}

static void servers_del(struct kiln_http *srv)
{
	struct kiln_http **pp;

	pthread_mutex_lock(&servers_lock);
	for (pp = &servers; *pp && *pp != srv; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = srv->next;
	pthread_mutex_unlock(&servers_lock);
}

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

static void conn_extend(struct MHD_Connection *c, long seconds);

enum req_state { REQ_NEW, REQ_SUSPENDED };

/* One request (MHD's per-connection request context). */
struct req {
	enum req_state state;
	struct kiln_buf body;		/* POST body (symbol lookups) */
	bool body_too_big;
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
	struct kiln_heap_snap base;	/* heap, allocs with seconds */
};

/* ---- responses ---- */

static struct MHD_Response *response_take(struct kiln_buf *b, const char *ctype)
{
	struct MHD_Response *r;
	size_t len = b->len;
	char *data = kiln_buf_detach(b, NULL);

	if (!data && len)
		return NULL;
	r = MHD_create_response_from_buffer(len, data ? data : (char *)"",
					    data ? MHD_RESPMEM_MUST_FREE :
					    MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(data);
		return NULL;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	return r;
}

/* A plain-text answer (errors and small pages): "message\n". */
static struct MHD_Response *text_response(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static struct MHD_Response *text_response(const char *fmt, ...)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct MHD_Response *r;
	va_list ap;

	va_start(ap, fmt);
	kiln_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	kiln_buf_addc(&b, '\n');
	r = response_take(&b, "text/plain; charset=utf-8");
	kiln_buf_release(&b);
	return r;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned code,
			     struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;	/* out of memory: MHD closes the connection */
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * Copies a client-supplied value for an error message: at most 64 bytes,
 * anything but printable ASCII shown as '?'.
 */
static const char *quote(const char *v, char *out, size_t n)
{
	size_t i;

	for (i = 0; v[i] && i + 1 < n && i < 64; i++)
		out[i] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
	out[i] = '\0';
	return out;
}

/* ---- parameters ---- */

static const char *arg(struct MHD_Connection *c, const char *key)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
}

/*
 * Parses a decimal integer parameter in [lo, hi]; def when absent.
 * 0, or -EINVAL with *resp set to the 400 answer naming the parameter.
 */
static int int_arg(struct MHD_Connection *c, const char *key, long lo, long hi,
		   long def, const char *what, long *out, struct MHD_Response **resp)
{
	const char *v = arg(c, key);
	char q[80];
	char *end;
	long x;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = strtol(v, &end, 10);
	if (!*v || *end || errno || x < lo || x > hi || !isdigit((unsigned char)*v)) {
		*resp = text_response("bad %s '%s': want %s from %ld to %ld",
				      key, quote(v, q, sizeof(q)), what, lo, hi);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

/* ---- the CPU profile: rendering ---- */

/* The sample type shown: "cpu", else the profile's default type. */
static int shown_type(const struct kiln_prof *p)
{
	size_t i;

	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(kiln_prof_str(p, p->types[i].type), "cpu"))
			return (int)i;
	for (i = 0; i < p->ntypes; i++)
		if (p->default_type && p->types[i].type == p->default_type)
			return (int)i;
	return p->ntypes ? (int)p->ntypes - 1 : -1;
}

/* The table of `kiln top` (flat, flat%, sum%, cum, cum%, name). */
static int render_text(struct kiln_prof *p, int type, struct kiln_buf *out)
{
	struct kiln_top t = KILN_TOP_INIT;
	const char *unit = kiln_prof_str(p, p->types[type].unit);
	char a[32], b[32], c[32];
	int64_t shown = 0, sum = 0;
	size_t i, n;
	double total;
	int err;

	err = kiln_top_build(&t, p, type, false, false);
	if (err)
		return err;
	n = t.n < HTTP_TOP_ROWS ? t.n : HTTP_TOP_ROWS;
	total = t.total ? (double)t.total : 1.0;
	for (i = 0; i < n; i++)
		shown += t.rows[i].flat;
	kiln_buf_addf(out, "Type: %s\n", kiln_prof_str(p, p->types[type].type));
	kiln_value_str(p->duration_nanos, "nanoseconds", a, sizeof(a));
	kiln_value_str(t.total, unit, b, sizeof(b));
	if (!strcmp(kiln_prof_str(p, p->period_type.type), "space")) {
		/* A heap profile: no rate; a duration only for a difference. */
		if (p->duration_nanos)
			kiln_buf_addf(out, "Duration: %s, ", a);
		kiln_buf_addf(out, "Total = %s (%zu stacks, one sample per %lld bytes)\n",
			      b, p->nsamples, (long long)p->period);
	} else {
		kiln_buf_addf(out, "Duration: %s, Total samples = %s (%zu samples, %lld Hz)\n",
			      a, b, p->nsamples ? p->nsamples : (size_t)0,
			      p->period > 0 ? (long long)(1000000000 / p->period) : 0LL);
	}
	kiln_value_str(shown, unit, a, sizeof(a));
	kiln_buf_addf(out, "Showing nodes accounting for %s, %.2f%% of %s total\n",
		      a, 100.0 * (double)shown / total, b);
	if (n < t.n)
		kiln_buf_addf(out, "Dropped %zu nodes\n", t.n - n);
	kiln_buf_addf(out, "%10s %6s %6s %10s %6s\n", "flat", "flat%", "sum%",
		      "cum", "cum%");
	for (i = 0; i < n; i++) {
		const struct kiln_top_row *r = &t.rows[i];

		sum += r->flat;
		kiln_value_str(r->flat, unit, a, sizeof(a));
		kiln_value_str(r->cum, unit, c, sizeof(c));
		kiln_buf_addf(out, "%10s %5.2f%% %5.2f%% %10s %5.2f%%  %s\n", a,
			      100.0 * (double)r->flat / total,
			      100.0 * (double)sum / total, c,
			      100.0 * (double)r->cum / total,
			      kiln_prof_str(p, r->name));
	}
	kiln_top_release(&t);
	return out->cap ? 0 : -ENOMEM;
}

/* The program's name for titles: the basename of argv[0]. */
static void program_name(char *out, size_t n)
{
	char buf[512];
	const char *base;
	ssize_t len;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	snprintf(out, n, "pid %d", (int)getpid());
	if (fd < 0)
		return;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = '\0';
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	if (*base)
		snprintf(out, n, "%.200s (pid %d)", base, (int)getpid());
}

/* The flame graph SVG (?format=svg). */
static int render_flame(struct kiln_prof *p, int type, const struct job *j,
			struct kiln_buf *out)
{
	struct kiln_flame_opts o = { 0 };
	char prog[300], title[400];

	program_name(prog, sizeof(prog));
	if (j->kind == JOB_CPU)
		snprintf(title, sizeof(title), "CPU Flame Graph: %s, %d s", prog,
			 j->seconds);
	else if (j->seconds)
		snprintf(title, sizeof(title), "Heap Flame Graph (%s, %s %d s): %s",
			 kiln_prof_str(p, p->types[type].type),
			 j->kind == JOB_HEAP ? "change over" : "during", j->seconds,
			 prog);
	else
		snprintf(title, sizeof(title), "Heap Flame Graph (%s): %s",
			 kiln_prof_str(p, p->types[type].type), prog);
	o.title = title;
	return kiln_flame_svg(p, type, &o, out);
}

static const char *page_arg(void *ctx, const char *key)
{
	return !strcmp(key, "type") ? ctx : NULL;
}

/*
 * A browser's answer: kiln serve's page, saved with the profile's data in
 * it (kiln_web_save_html), so the same page serves a profile file and a
 * live process: flame graph and icicle, search, the top table.  No call
 * graph (graphviz is never loaded into the program).
 */
static int render_page(struct kiln_prof *p, int type, const struct job *j,
		       struct kiln_buf *out)
{
	struct kiln_buf msg = KILN_BUF_INIT;
	struct kiln_web_req r = { "/api/download", page_arg, NULL, NULL, "" };
	struct kiln_prof *copy = kiln_prof_new();
	struct kiln_web_model *m;
	const char *name, *fmt = "pprof";
	char prog[300], title[400], ts[16];
	int status, err;

	if (!copy)
		return -ENOMEM;
	err = kiln_prof_merge(copy, p, NULL);
	if (err) {
		kiln_prof_free(copy);
		return err;
	}
	program_name(prog, sizeof(prog));
	if (j->kind == JOB_CPU)
		snprintf(title, sizeof(title), "CPU profile of %s over %d s", prog,
			 j->seconds);
	else if (j->seconds)
		snprintf(title, sizeof(title), "Heap profile (%s %s %d s) of %s",
			 j->kind == JOB_HEAP ? "change over" : "allocations during",
			 kiln_prof_str(p, p->types[type].type), j->seconds, prog);
	else
		snprintf(title, sizeof(title), "Heap profile (%s) of %s",
			 kiln_prof_str(p, p->types[type].type), prog);
	name = title;
	m = kiln_web_model_new(&copy, &name, &fmt, 1);	/* takes copy */
	if (!m)
		return -ENOMEM;
	snprintf(ts, sizeof(ts), "%d", type);
	r.ctx = ts;
	status = kiln_web_save_html(m, &r, out, &msg);
	kiln_web_model_free(m);
	kiln_buf_release(&msg);
	return status == 200 ? 0 : status == 500 ? -ENOMEM : -EINVAL;
}

/* Builds the answer for a finished CPU profile; *code receives the status. */
static struct MHD_Response *profile_response(struct kiln_prof *p,
					     const struct job *j, unsigned *code)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct MHD_Response *r = NULL;
	const char *ctype = "application/octet-stream";
	int type = shown_type(p), err;

	*code = MHD_HTTP_OK;
	switch (j->fmt) {
	case OUT_PPROF:
		err = kiln_pprof_write(p, &b, true);
		break;
	case OUT_TEXT:
		err = type < 0 ? -EINVAL : render_text(p, type, &b);
		ctype = "text/plain; charset=utf-8";
		break;
	case OUT_HTML:
		err = type < 0 ? -EINVAL : render_page(p, type, j, &b);
		ctype = "text/html; charset=utf-8";
		break;
	default:
		err = type < 0 ? -EINVAL : render_flame(p, type, j, &b);
		ctype = "image/svg+xml";
		break;
	}
	if (!err) {
		r = response_take(&b, ctype);
		if (r && j->fmt == OUT_PPROF)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
						j->kind == JOB_HEAP ? "attachment; filename=\"heap\"" :
						j->kind == JOB_ALLOCS ? "attachment; filename=\"allocs\"" :
						"attachment; filename=\"profile\"");
	} else {
		*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = text_response("could not write the profile: %s", strerror(-err));
	}
	kiln_buf_release(&b);
	return r;
}

/* ---- the CPU profile: the worker ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The answer of a heap or allocs request once its seconds are over: a
 * snapshot of the heap profiler's aggregate, minus the one taken when the
 * request came when it asked for seconds.
 */
static void heap_answer(struct job *j, bool gone, bool stopped)
{
	struct kiln_heap_snap now;
	struct kiln_prof *p = NULL;
	unsigned code = MHD_HTTP_OK;
	struct MHD_Response *r;
	int err;

	if (gone || stopped) {
		j->req->code = MHD_HTTP_SERVICE_UNAVAILABLE;
		j->req->resp = text_response("the heap profile was cut short: %s",
					     gone ? "the client went away" :
					     "the server stops");
		return;
	}
	kiln_heap_quiet_begin();
	err = kiln_heap_snap_take(&now);
	if (!err)
		err = kiln_agent_heap_prof(&now, j->seconds ? &j->base : NULL,
					   j->kind == JOB_ALLOCS, &p);
	if (err) {
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = text_response("could not take the heap profile: %s", strerror(-err));
	} else {
		r = profile_response(p, j, &code);
	}
	kiln_prof_free(p);
	kiln_heap_snap_release(&now);
	kiln_heap_quiet_end();
	j->req->resp = r;
	j->req->code = code;
}

/*
 * Waits out the profile's seconds, or less when the server stops or the
 * client goes away (as Go's handler does), then takes the profile,
 * renders it and resumes the connection with the answer.
 */
static void *job_main(void *arg)
{
	struct job *j = arg;
	struct kiln_http *srv = j->srv;
	struct kiln_prof *p = NULL;
	struct MHD_Response *r;
	int64_t deadline = now_ms() + (int64_t)j->seconds * 1000;
	bool gone = false, stopped = false;
	unsigned code;
	int err;

	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = srv->wake.fd, .events = POLLIN },
			{ .fd = j->client_fd, .events = POLLRDHUP },
		};
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			break;
		n = poll(fds, j->client_fd >= 0 ? 2 : 1,
			 left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (fds[0].revents) {
			stopped = true;
			break;
		}
		if (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
			gone = true;
			break;
		}
	}
	if (j->kind != JOB_CPU) {
		heap_answer(j, gone, stopped);
		goto resume;
	}
	err = kiln_agent_cpu_end(&p);
	if (gone || stopped) {
		kiln_agent_log(KILN_LOG_DEBUG, "http: CPU profile cut short (%s)",
			       gone ? "the client went away" : "the server stops");
		code = MHD_HTTP_SERVICE_UNAVAILABLE;
		r = text_response("the CPU profile was cut short: %s",
				  gone ? "the client went away" : "the server stops");
	} else if (err == -ENOENT) {
		/* Someone else ended it: the program installed its own SIGPROF
		 * handler meanwhile (the agent steps aside), or stopped it. */
		code = MHD_HTTP_SERVICE_UNAVAILABLE;
		r = text_response("the CPU profile was stopped in the program before "
				  "its end (its own SIGPROF handler?)");
	} else if (err) {
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = text_response("could not take the CPU profile: %s", strerror(-err));
	} else {
		r = profile_response(p, j, &code);
	}
	kiln_prof_free(p);
	j->req->resp = r;
	j->req->code = code;
resume:
	/* From here on the request may be answered and freed at any time. */
	MHD_resume_connection(j->conn);
	kiln_heap_snap_release(&j->base);
	free(j);
	pthread_mutex_lock(&srv->lock);
	if (!--srv->jobs)
		pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/*
 * The answer's format: ?format= wins over ?debug=, which wins over the
 * Accept header.  0, or -EINVAL with *resp set to the 400 answer.
 */
static int out_format(struct MHD_Connection *c, long debug, enum out_fmt *fmt,
		      struct MHD_Response **resp)
{
	const char *v = arg(c, "format");
	char q[80];

	*fmt = OUT_PPROF;
	if (v) {
		if (!strcmp(v, "pprof") || !strcmp(v, "proto"))
			*fmt = OUT_PPROF;
		else if (!strcmp(v, "text"))
			*fmt = OUT_TEXT;
		else if (!strcmp(v, "html"))
			*fmt = OUT_HTML;
		else if (!strcmp(v, "svg"))
			*fmt = OUT_SVG;
		else {
			*resp = text_response("bad format '%s': want pprof, text, html or svg",
					      quote(v, q, sizeof(q)));
			return -EINVAL;
		}
	} else if (debug > 0) {
		*fmt = OUT_TEXT;
	} else if (kiln_http_prefers_html(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							    MHD_HTTP_HEADER_ACCEPT))) {
		*fmt = OUT_HTML;
	}
	return 0;
}

/*
 * Suspends request rq until a worker resumes it with the answer; counted
 * until on_completed(), so that kiln_http_stop() can let the answer out.
 */
static void suspend(struct kiln_http *srv, struct MHD_Connection *c,
		    struct req *rq)
{
	pthread_mutex_lock(&srv->lock);
	srv->suspended++;
	pthread_mutex_unlock(&srv->lock);
	rq->state = REQ_SUSPENDED;
	MHD_suspend_connection(c);
}

/* /debug/pprof/profile */
static enum MHD_Result do_profile(struct kiln_http *srv, struct MHD_Connection *c,
				  struct req *rq)
{
	struct MHD_Response *r = NULL;
	const union MHD_ConnectionInfo *ci;
	enum out_fmt fmt = OUT_PPROF;
	long seconds, hz, debug;
	pthread_t t;
	struct job *j;
	int err;

	if (int_arg(c, "seconds", 1, 3600, 30, "a whole number of seconds", &seconds, &r) ||
	    int_arg(c, "frequency", 1, 100000, 99, "samples per second", &hz, &r) ||
	    int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r))
		return queue(c, MHD_HTTP_BAD_REQUEST, r);
	if (out_format(c, debug, &fmt, &r))
		return queue(c, MHD_HTTP_BAD_REQUEST, r);

	j = calloc(1, sizeof(*j));
	if (!j)
		return MHD_NO;
	pthread_mutex_lock(&srv->lock);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->lock);
		free(j);
		return queue(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			     text_response("the server is stopping"));
	}
	err = kiln_agent_cpu_begin((int)hz, false);
	if (!err)
		srv->jobs++;
	pthread_mutex_unlock(&srv->lock);
	switch (err) {
	case 0:
		break;
	case -EBUSY:
		free(j);
		return queue(c, MHD_HTTP_CONFLICT,
			     text_response("a CPU profile is already being taken in this "
					   "process; try again when it ends"));
	case -EEXIST:
		free(j);
		return queue(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			     text_response("CPU profiling is not available: the program "
					   "has its own SIGPROF handler"));
	case -EINVAL:
		free(j);
		return queue(c, MHD_HTTP_BAD_REQUEST,
			     text_response("bad frequency '%ld': the sampler refuses it", hz));
	default:
		free(j);
		return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     text_response("cannot start a CPU profile: %s", strerror(-err)));
	}
	kiln_agent_log(KILN_LOG_DEBUG, "http: CPU profile for %ld s at %ld Hz",
		       seconds, hz);
	conn_extend(c, seconds);
	j->srv = srv;
	j->conn = c;
	j->req = rq;
	j->seconds = (int)seconds;
	j->hz = (int)hz;
	j->fmt = fmt;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	j->client_fd = ci ? ci->connect_fd : -1;
	/* No idle timeout while the profile runs; the answer still has to go
	 * out after it. */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)seconds + 60 + HTTP_IDLE_TIMEOUT);
	suspend(srv, c, rq);
	err = -kiln_agent_thread_start(&t, "kiln-http-job", job_main, j, true);
	if (err) {
		struct kiln_prof *p = NULL;

		kiln_agent_cpu_end(&p);
		kiln_prof_free(p);
		free(j);
		rq->resp = text_response("cannot start a thread: %s", strerror(err));
		rq->code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		pthread_mutex_lock(&srv->lock);
		if (!--srv->jobs)
			pthread_cond_broadcast(&srv->idle);
		pthread_mutex_unlock(&srv->lock);
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

/* ---- the other endpoints ---- */

static enum MHD_Result do_index(struct MHD_Connection *c)
{
	static const char page[] =
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
		"<title>/debug/pprof/</title>\n"
		"<style>body{font-family:sans-serif} td{padding:2px 8px} "
		"code{background:#eee}</style>\n</head><body>\n"
		"<h1>/debug/pprof/</h1>\n"
		"<p>Profiles of this process, served by kiln "
		"(<code>LD_PRELOAD=libkiln.so</code>, <code>KILN_HTTP</code>).</p>\n"
		"<table>\n"
		"<tr><td><a href=\"profile?seconds=30\">profile</a></td>"
		"<td>CPU profile over 30 seconds, gzipped pprof "
		"(<code>?seconds=N</code> up to 3600, <code>&amp;frequency=HZ</code>)</td></tr>\n"
		"<tr><td><a href=\"profile?seconds=10&amp;format=html\">flame graph</a></td>"
		"<td>CPU flame graph over 10 seconds</td></tr>\n"
		"<tr><td><a href=\"profile?seconds=10&amp;debug=1\">top</a></td>"
		"<td>CPU profile over 10 seconds as a text table</td></tr>\n"
		"<tr><td><a href=\"heap\">heap</a></td>"
		"<td>live heap now, pprof (<code>?seconds=N</code>: its change over "
		"N seconds; <a href=\"heap?format=html\">flame graph</a>, "
		"<a href=\"heap?debug=1\">top</a>)</td></tr>\n"
		"<tr><td><a href=\"allocs\">allocs</a></td>"
		"<td>allocations since heap profiling started, pprof "
		"(<code>?seconds=N</code>: during the next N seconds; "
		"<a href=\"allocs?format=html\">flame graph</a>, "
		"<a href=\"allocs?debug=1\">top</a>)</td></tr>\n"
		"<tr><td><a href=\"goroutine?debug=1\">goroutine</a></td>"
		"<td>every thread's stack now</td></tr>\n"
		"<tr><td><a href=\"mutex?debug=1\">mutex</a>, "
		"<a href=\"block?debug=1\">block</a></td>"
		"<td>valid empty profiles (C programs have no runtime that counts "
		"lock contention), for scrapers that ask</td></tr>\n"
		"<tr><td><a href=\"cmdline\">cmdline</a></td>"
		"<td>the command line, arguments separated by NUL bytes</td></tr>\n"
		"<tr><td><a href=\"symbol\">symbol</a></td>"
		"<td>address to function name lookups (POST 0xA+0xB)</td></tr>\n"
		"</table>\n"
		"<p>From another terminal: <code>go tool pprof "
		"http://HOST:PORT/debug/pprof/profile?seconds=30</code></p>\n"
		"</body></html>\n";
	struct kiln_buf b = KILN_BUF_INIT;

	kiln_buf_adds(&b, page);
	return queue(c, MHD_HTTP_OK, response_take(&b, "text/html; charset=utf-8"));
}

/*
 * /debug/pprof/heap and /debug/pprof/allocs: answered by a worker thread
 * (symbolizing takes a while; with ?seconds=N it first waits them out),
 * like a CPU profile.  Without the malloc interposer an empty profile
 * (do_heap_off()); 501 when the heap profiler cannot start otherwise.
 */
static enum MHD_Result do_heap(struct kiln_http *srv, struct MHD_Connection *c,
			       struct req *rq, const char *what)
{
	struct MHD_Response *r = NULL;
	const union MHD_ConnectionInfo *ci;
	enum out_fmt fmt;
	long seconds, debug;
	pthread_t t;
	struct job *j;
	int err;

	/* gc=1 (Go runs a collection first) means nothing here. */
	if (int_arg(c, "seconds", 1, 3600, 0, "a whole number of seconds", &seconds, &r) ||
	    int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r))
		return queue(c, MHD_HTTP_BAD_REQUEST, r);
	if (out_format(c, debug, &fmt, &r))
		return queue(c, MHD_HTTP_BAD_REQUEST, r);
	err = kiln_heap_profile_start();
	if (err)
		return queue(c, MHD_HTTP_NOT_IMPLEMENTED,
			     text_response("/debug/pprof/%s: the heap profiler could not "
					   "start in this process: %s", what,
					   strerror(-err)));
	j = calloc(1, sizeof(*j));
	if (!j)
		return MHD_NO;
	j->kind = !strcmp(what, "heap") ? JOB_HEAP : JOB_ALLOCS;
	if (seconds) {
		kiln_heap_quiet_begin();
		err = kiln_heap_snap_take(&j->base);
		kiln_heap_quiet_end();
		if (err) {
			free(j);
			return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				     text_response("could not take the heap profile: %s",
						   strerror(-err)));
		}
	}
	pthread_mutex_lock(&srv->lock);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->lock);
		kiln_heap_snap_release(&j->base);
		free(j);
		return queue(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			     text_response("the server is stopping"));
	}
	srv->jobs++;
	pthread_mutex_unlock(&srv->lock);
	kiln_agent_log(KILN_LOG_DEBUG, "http: %s profile, %ld s", what, seconds);
	conn_extend(c, seconds);
	j->srv = srv;
	j->conn = c;
	j->req = rq;
	j->seconds = (int)seconds;
	j->fmt = fmt;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	j->client_fd = ci ? ci->connect_fd : -1;
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)seconds + 60 + HTTP_IDLE_TIMEOUT);
	suspend(srv, c, rq);
	err = -kiln_agent_thread_start(&t, "kiln-http-job", job_main, j, true);
	if (err) {
		kiln_heap_snap_release(&j->base);
		free(j);
		rq->resp = text_response("cannot start a thread: %s", strerror(err));
		rq->code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		pthread_mutex_lock(&srv->lock);
		if (!--srv->jobs)
			pthread_cond_broadcast(&srv->idle);
		pthread_mutex_unlock(&srv->lock);
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

/*
 * A valid profile with these sample types and no samples, for a path
 * whose data this process does not have (why: the ?debug=1 text, comment
 * lines).  Continuous profilers (Grafana Alloy, Parca) scrape such paths
 * by default and log an error on anything but 200.
 */
static enum MHD_Result empty_profile(struct MHD_Connection *c, const char *what,
				     const char *const *types, size_t ntypes,
				     const char *why)
{
	struct MHD_Response *r = NULL;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p;
	long debug, seconds;
	int err;

	if (int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r) ||
	    int_arg(c, "seconds", 0, 3600, 0, "a whole number of seconds", &seconds, &r))
		return queue(c, MHD_HTTP_BAD_REQUEST, r);
	if (debug > 0) {
		kiln_buf_addf(&b, "--- %s:\n%s", what, why);
		return queue(c, MHD_HTTP_OK, response_take(&b, "text/plain; charset=utf-8"));
	}
	p = kiln_prof_new();
	if (!p)
		return MHD_NO;
	err = kiln_prof_set_types_str(p, types, ntypes);
	if (!err) {
		p->period_type = p->types[0];
		p->period = 1;
		err = kiln_pprof_write(p, &b, true);
	}
	kiln_prof_free(p);
	if (err) {
		kiln_buf_release(&b);
		return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     text_response("could not write the profile: %s",
					   strerror(-err)));
	}
	r = response_take(&b, "application/octet-stream");
	if (r) {
		char disp[64];

		snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", what);
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	}
	return queue(c, MHD_HTTP_OK, r);
}

/*
 * /debug/pprof/mutex and /debug/pprof/block: Go's runtime counts lock
 * contention and blocking in its own scheduler; a C or C++ program has no
 * such hooks, so kiln answers a valid profile with Go's sample types and
 * no samples, and says why with ?debug=1.
 */
static enum MHD_Result do_contention(struct MHD_Connection *c, const char *what)
{
	static const char *const types[] = { "contentions/count", "delay/nanoseconds" };
	bool mutex = !strcmp(what, "mutex");
	char why[512];

	snprintf(why, sizeof(why),
		 "# kiln records no %s: C, C++ and Rust programs have no\n"
		 "# runtime that counts lock contention or blocking, as Go's\n"
		 "# does.  This profile is valid and empty so that scrapers\n"
		 "# (Grafana Alloy, Parca) work.  For time spent waiting, record\n"
		 "# off-CPU time: kiln record --off-cpu -p PID.\n",
		 mutex ? "mutex contention" : "blocking events");
	return empty_profile(c, what, types, 2, why);
}

/*
 * /debug/pprof/heap and /debug/pprof/allocs in a process without the
 * malloc interposer (libkiln.so preloaded alone: CPU profiling, no kiln
 * code on allocations): valid and empty, ?debug=1 says how to get data.
 */
static enum MHD_Result do_heap_off(struct MHD_Connection *c, const char *what)
{
	static const char *const types[] = {
		"alloc_objects/count", "alloc_space/bytes",
		"inuse_objects/count", "inuse_space/bytes" };

	return empty_profile(c, what, types, 4,
		"# heap profiling is off in this process: kiln's malloc\n"
		"# interposer is not loaded (libkiln.so alone sees no\n"
		"# allocation, and costs them nothing).  Preload\n"
		"# libkiln-malloc.so instead of libkiln.so (it loads\n"
		"# libkiln.so), or link -lkiln-malloc.  This profile is valid\n"
		"# and empty so that scrapers work.\n");
}

/* A label of sample s: its string (NULL: none) or its number in *num. */
static const char *label_of(struct kiln_prof *p, const struct kiln_sample *s,
			    const char *key, int64_t *num)
{
	const struct kiln_labelset *ls = &p->labelsets[s->labels];
	uint32_t i;

	for (i = 0; s->labels && i < ls->n; i++) {
		const struct kiln_label *l = &p->labels[ls->first + i];

		if (strcmp(kiln_prof_str(p, l->key), key))
			continue;
		if (num)
			*num = l->num;
		return l->str ? kiln_prof_str(p, l->str) : "";
	}
	return NULL;
}

/*
 * ?debug=1 and 2 of /debug/pprof/goroutine: every thread's stack, as
 * Go's debug=2 dump lists its goroutines.
 */
static int dump_threads(struct kiln_prof *p, struct kiln_buf *b)
{
	struct kiln_frame *fr = NULL;
	size_t i, cap = 0;
	long n, k;
	int err = 0;

	err |= kiln_buf_addf(b, "threads: total %zu\n\n", p->nsamples);
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const char *name = label_of(p, s, "thread_name", NULL);
		const char *state = label_of(p, s, "state", NULL);
		int64_t tid = 0;

		label_of(p, s, "thread", &tid);
		err |= kiln_buf_addf(b, "thread %lld \"%s\" [%s]:\n", (long long)tid,
			      name ? name : "", state ? state : "unknown");
		n = kiln_prof_frames(p, s, &fr, &cap);
		if (n < 0) {
			free(fr);
			return (int)n;
		}
		if (!n)
			err |= kiln_buf_adds(b, "\t(no stack: running, and SIGPROF is "
					     "the program's)\n");
		for (k = 0; k < n; k++) {
			const struct kiln_function *f = fr[k].function ?
				&p->functions[fr[k].function] : NULL;
			const char *file = f ? kiln_prof_str(p, f->filename) : "";

			err |= kiln_buf_addf(b, "%s\n", kiln_prof_str(p, fr[k].name));
			if (*file && fr[k].line > 0)
				err |= kiln_buf_addf(b, "\t%s:%lld\n", file,
						     (long long)fr[k].line);
			else if (*file)
				err |= kiln_buf_addf(b, "\t%s\n", file);
		}
		err |= kiln_buf_adds(b, "\n");
	}
	free(fr);
	return err ? -ENOMEM : 0;
}

/*
 * /debug/pprof/goroutine: Go's goroutines are a C program's threads.
 * One sample per thread with its current stack (goroutine/count, labels
 * thread, thread_name, state), the way Grafana Alloy and Parca scrape
 * it; ?debug=1 or 2 lists them as text.
 */
static enum MHD_Result do_goroutine(struct MHD_Connection *c)
{
	struct MHD_Response *r = NULL;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p = NULL;
	long debug;
	int err;

	if (int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r))
		return queue(c, MHD_HTTP_BAD_REQUEST, r);
	err = kiln_agent_threads_snapshot(&p);
	if (!err)
		err = debug > 0 ? dump_threads(p, &b) : kiln_pprof_write(p, &b, true);
	kiln_prof_free(p);
	if (err) {
		kiln_buf_release(&b);
		return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     text_response("could not take the threads' stacks: %s",
					   strerror(-err)));
	}
	r = response_take(&b, debug > 0 ? "text/plain; charset=utf-8" :
			  "application/octet-stream");
	if (r && !debug)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					"attachment; filename=\"goroutine\"");
	return queue(c, MHD_HTTP_OK, r);
}

/* Go's answer: os.Args joined with NUL bytes (no NUL at the end). */
static enum MHD_Result do_cmdline(struct MHD_Connection *c)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int err = kiln_read_proc(AT_FDCWD, "/proc/self/cmdline", &b);

	if (err) {
		kiln_buf_release(&b);
		return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     text_response("cannot read /proc/self/cmdline: %s",
					   strerror(-err)));
	}
	if (b.len && b.data[b.len - 1] == '\0')
		b.len--;
	return queue(c, MHD_HTTP_OK, response_take(&b, "text/plain; charset=utf-8"));
}

/* Symbolizes one word of a symbol request (Go: strconv.ParseUint(w, 0, 64)). */
static void symbol_word(struct kiln_sym *s, const char *w, size_t len,
			struct kiln_buf *out)
{
	char num[32], *end;
	struct kiln_sym_info info;
	unsigned long long pc;

	while (len && isspace((unsigned char)*w))
		w++, len--;
	while (len && isspace((unsigned char)w[len - 1]))
		len--;
	if (!len || len >= sizeof(num))
		return;
	memcpy(num, w, len);
	num[len] = '\0';
	errno = 0;
	pc = strtoull(num, &end, 0);
	if (*end || errno || !pc || num[0] == '-')
		return;
	if (kiln_sym_lookup(s, (uint64_t)pc, &info) || !info.nframes)
		return;
	/* The innermost function, as Go's runtime.FuncForPC names it. */
	kiln_buf_addf(out, "%#llx %s\n", pc, info.frames[0].name);
}

/*
 * Go's symbol protocol: "num_symbols: 1" (pprof only asks whether symbols
 * exist), then "0xADDR name" for each address of the request that names a
 * function: from the POST body, or the query string of a GET, addresses
 * separated by '+'.
 */
static enum MHD_Result do_symbol(struct MHD_Connection *c, struct req *rq,
				 const char *query)
{
	struct kiln_buf out = KILN_BUF_INIT, maps = KILN_BUF_INIT;
	struct kiln_sym_opts so = { .pid = getpid() };
	struct kiln_sym *s = NULL;
	const char *in = rq->body.len ? rq->body.data : query;
	size_t inlen = rq->body.len ? rq->body.len : strlen(query);
	size_t i, start = 0;
	int err;

	if (rq->body_too_big)
		return queue(c, MHD_HTTP_CONTENT_TOO_LARGE,
			     text_response("request body over %u bytes", HTTP_BODY_MAX));
	kiln_buf_adds(&out, "num_symbols: 1\n");
	if (inlen) {
		s = kiln_sym_new(&so);
		err = s ? kiln_read_proc(AT_FDCWD, "/proc/self/maps", &maps) : -ENOMEM;
		if (!err)
			err = kiln_sym_add_maps(s, maps.data, maps.len);
		if (!err)
			kiln_sym_load_perfmap(s, getpid(), NULL);
		if (err) {
			kiln_sym_free(s);
			kiln_buf_release(&maps);
			kiln_buf_release(&out);
			return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				     text_response("cannot read the address space: %s",
						   strerror(-err)));
		}
		for (i = 0; i <= inlen; i++) {
			if (i == inlen || in[i] == '+' || in[i] == ' ') {
				symbol_word(s, in + start, i - start, &out);
				start = i + 1;
			}
		}
		kiln_sym_free(s);
	}
	kiln_buf_release(&maps);
	if (!out.cap)
		return MHD_NO;
	return queue(c, MHD_HTTP_OK, response_take(&out, "text/plain; charset=utf-8"));
}

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

/* ---- the connection guard ---- */

static void conn_unlink(struct kiln_http *srv, struct conn *k)
{
	*(k->prev ? &k->prev->next : &srv->conns_head) = k->next;
	*(k->next ? &k->next->prev : &srv->conns_tail) = k->prev;
	k->prev = k->next = NULL;
}

static void conn_set_proven(struct kiln_http *srv, struct conn *k, bool proven)
{
	if (k->proven == proven)
		return;
	k->proven = proven;
	if (proven) {
		srv->unproven--;
	} else {
		srv->unproven++;
		k->waiting_ms = now_ms();
	}
}

/* Unproven for longer than the grace: what the quota counts. */
static bool conn_stale(const struct conn *k, int64_t now)
{
	return k->fd >= 0 && !k->proven && now - k->waiting_ms > HTTP_GRACE_MS;
}

/*
 * Shuts down connections past their deadline and, while more than quota
 * connections have been unproven for over the grace, the oldest of them.  MHD sees the
 * socket end and closes the connection on its next turn.
 */
static void conn_shed(struct kiln_http *srv, unsigned quota)
{
	int64_t now = now_ms();
	unsigned stale = 0, over;
	struct conn *k, *next;

	for (k = srv->conns_head; k; k = k->next)
		stale += conn_stale(k, now);
	over = stale > quota ? stale - quota : 0;
	for (k = srv->conns_head; k; k = next) {
		next = k->next;
		if (k->fd < 0)
			continue;
		if (now > k->deadline_ms || (over && conn_stale(k, now))) {
			struct stat st;

			kiln_agent_log(KILN_LOG_DEBUG, "http: dropping a %s connection",
				       now > k->deadline_ms ? "slow" : "waiting");
			if (!fstat(k->fd, &st) && st.st_dev == k->dev &&
			    st.st_ino == k->ino)
				shutdown(k->fd, SHUT_RDWR);
			if (!k->proven) {
				/* counted out now: it cannot be shed twice */
				conn_set_proven(srv, k, true);
				if (over)
					over--;
			}
			k->fd = -1;
		}
	}
}

/* MHD's accept policy: runs on MHD's thread before a connection is
 * accepted, so a full table of slow clients makes room for the new one. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
				 socklen_t len)
{
	struct kiln_http *srv = cls;

	pthread_mutex_lock(&srv->glock);
	conn_shed(srv, HTTP_UNPROVEN_QUOTA - 1);
	pthread_mutex_unlock(&srv->glock);
	return MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
			  enum MHD_ConnectionNotificationCode what)
{
	struct kiln_http *srv = cls;
	struct conn *k = *ctx;

	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci;

		k = calloc(1, sizeof(*k));
		if (!k)
			return;		/* unguarded, still limited by MHD */
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k->fd = ci ? ci->connect_fd : -1;
		if (k->fd >= 0) {
			struct stat st;

			if (fstat(k->fd, &st))
				k->fd = -1;
			k->dev = st.st_dev;
			k->ino = st.st_ino;
		}
		k->srv = srv;
		k->deadline_ms = now_ms() + HTTP_REQUEST_DEADLINE * 1000;
		k->proven = true;
		pthread_mutex_lock(&srv->glock);
		conn_set_proven(srv, k, false);
		k->prev = srv->conns_tail;
		*(k->prev ? &k->prev->next : &srv->conns_head) = k;
		srv->conns_tail = k;
		pthread_mutex_unlock(&srv->glock);
		*ctx = k;
	} else if (what == MHD_CONNECTION_NOTIFY_CLOSED && k) {
		pthread_mutex_lock(&srv->glock);
		conn_set_proven(srv, k, true);
		conn_unlink(srv, k);
		pthread_mutex_unlock(&srv->glock);
		free(k);
		*ctx = NULL;
	}
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* A request that waits seconds for its answer (a profile over time) gets
 * them on top of its deadline. */
static void conn_extend(struct MHD_Connection *c, long seconds)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&k->srv->glock);
	k->deadline_ms += seconds * 1000;
	pthread_mutex_unlock(&k->srv->glock);
}

/* The guard thread: sheds slow and stale connections every second,
 * whether or not new ones arrive, until the server stops. */
static void *guard_main(void *arg)
{
	struct kiln_http *srv = arg;
	struct timespec t;

	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec++;
		pthread_cond_timedwait(&srv->guard_cv, &srv->lock, &t);
		if (srv->stopping)
			break;
		pthread_mutex_unlock(&srv->lock);
		pthread_mutex_lock(&srv->glock);
		conn_shed(srv, HTTP_UNPROVEN_QUOTA);
		pthread_mutex_unlock(&srv->glock);
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

static void guard_stop(struct kiln_http *srv)
{
	if (!srv->guard_on)
		return;
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->guard_cv);
	pthread_mutex_unlock(&srv->lock);
	kiln_agent_thread_join(srv->guard);
	srv->guard_on = false;
}

/* ---- dispatch ---- */

static enum MHD_Result refuse_unauthorized(struct MHD_Connection *c)
{
	struct MHD_Response *r = text_response("unauthorized: this server wants "
					       "'Authorization: Bearer TOKEN' (KILN_HTTP_TOKEN)");

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"kiln\"");
	return queue(c, MHD_HTTP_UNAUTHORIZED, r);
}

/* Constant-time comparison of an "Authorization: Bearer TOKEN" header. */
static bool authorized(const struct kiln_http *srv, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	size_t len, i;
	unsigned char diff;

	if (!srv->token)
		return true;
	if (!h || strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return false;
	h += 7;
	while (*h == ' ' || *h == '\t')
		h++;
	len = strlen(h);
	while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
		len--;
	diff = len != srv->token_len;
	for (i = 0; i < srv->token_len; i++)
		diff |= (unsigned char)((i < len ? h[i] : 0) ^ srv->token[i]);
	return !diff;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
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
		struct conn *k = conn_of(c);

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*ctx = rq;
		/* The headers are in, no byte of a body has been read: a client
		 * without the token is answered now, its body never buffered. */
		if (!authorized(srv, c))
			return refuse_unauthorized(c);
		if (k) {
			pthread_mutex_lock(&srv->glock);
			conn_set_proven(srv, k, true);
			/* a profile's own seconds are added by its handler */
			k->deadline_ms = now_ms() + HTTP_REQUEST_DEADLINE * 1000;
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
		return queue(c, rq->code, r);
	}
	if (*upload_size) {
		struct conn *k = conn_of(c);

		if (k) {
			int64_t deadline;

			pthread_mutex_lock(&srv->glock);
			deadline = k->deadline_ms;
			pthread_mutex_unlock(&srv->glock);
			if (now_ms() > deadline)
				return MHD_NO;	/* a body trickled past it */
		}
		/* Only symbol lookups have a body worth keeping. */
		if (post && !rq->body_too_big) {
			if (rq->body.len + *upload_size > HTTP_BODY_MAX) {
				rq->body_too_big = true;
				kiln_buf_release(&rq->body);
			} else if (kiln_buf_add(&rq->body, upload, *upload_size)) {
				return MHD_NO;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}

	kiln_agent_log(KILN_LOG_DEBUG, "http: %s %s", method, url);
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
		ret = do_symbol(c, rq, query.data ? query.data : "");
		kiln_buf_release(&query);
		return ret;
	}
	if (!get)
		goto bad_method;
	if (!*path)
		return do_index(c);
	if (!strcmp(path, "profile"))
		return do_profile(srv, c, rq);
	if ((!strcmp(path, "heap") || !strcmp(path, "allocs")) && !kiln_heap_available())
		return do_heap_off(c, path);
	if (!strcmp(path, "heap") || !strcmp(path, "allocs"))
		return do_heap(srv, c, rq, path);
	if (!strcmp(path, "cmdline"))
		return do_cmdline(c);
	if (!strcmp(path, "mutex") || !strcmp(path, "block"))
		return do_contention(c, path);
	if (!strcmp(path, "goroutine") || !strcmp(path, "threadcreate"))
		return do_goroutine(c);
not_found:
	return queue(c, MHD_HTTP_NOT_FOUND,
		     text_response("404 page not found: %s (the profiles are under "
				   "/debug/pprof/)", url));
bad_method:
	{
		struct MHD_Response *r = text_response("method %s not allowed here", method);

		if (r)
			MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
						!strcmp(path, "symbol") ?
						"GET, HEAD, POST" : "GET, HEAD");
		return queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
			 enum MHD_RequestTerminationCode why)
{
	struct kiln_http *srv = cls;
	struct req *rq = *ctx;

	if (!rq)
		return;
	{
		/* A kept-alive connection waits for its next request: it has
		 * the deadline and quota of a new one. */
		struct conn *k = conn_of(c);

		if (k) {
			pthread_mutex_lock(&srv->glock);
			if (k->fd >= 0) {
				conn_set_proven(srv, k, false);
				k->deadline_ms = now_ms() +
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
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	kiln_agent_log(KILN_LOG_DEBUG, "http: libmicrohttpd: %s", buf);
}

/* ---- the listening socket ---- */

static int listen_on(const struct sockaddr *sa, socklen_t len, bool dual)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1, zero = 0, err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (dual)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, sa, len) || listen(fd, SOMAXCONN)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Opens the listening socket; fills srv->port and srv->name.  fd or -errno. */
static int open_listener(struct kiln_http *srv, const char *addr)
{
	char host[256], portstr[8], ip[INET6_ADDRSTRLEN];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned port;
	int fd, err;

	err = kiln_http_parse_addr(addr, host, sizeof(host), &port);
	if (err)
		return err;
	if (!*host) {
		/* ":PORT": every address, IPv6 and IPv4 where there is IPv6 */
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
					   .sin6_addr = IN6ADDR_ANY_INIT,
					   .sin6_port = htons((uint16_t)port) };
		struct sockaddr_in a4 = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_ANY),
					  .sin_port = htons((uint16_t)port) };

		fd = listen_on((struct sockaddr *)&a6, sizeof(a6), true);
		if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
			fd = listen_on((struct sockaddr *)&a4, sizeof(a4), false);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_NUMERICSERV };
		struct addrinfo *res, *ai;
		int rc;

		snprintf(portstr, sizeof(portstr), "%u", port);
		rc = getaddrinfo(host, portstr, &hints, &res);
		if (rc)
			return rc == EAI_SYSTEM ? -errno : rc == EAI_MEMORY ? -ENOMEM : -EINVAL;
		fd = -EADDRNOTAVAIL;
		for (ai = res; ai && fd < 0; ai = ai->ai_next)
			fd = listen_on(ai->ai_addr, ai->ai_addrlen, false);
		freeaddrinfo(res);
	}
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		srv->port = ntohs(a->sin6_port);
		snprintf(srv->name, sizeof(srv->name), "[%s]:%d", ip, srv->port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		srv->port = ntohs(a->sin_port);
		snprintf(srv->name, sizeof(srv->name), "%s:%d", ip, srv->port);
	}
	return fd;
}

/* ---- the API ---- */

static int http_start(const char *addr, struct kiln_http **out)
{
	struct kiln_http *srv;
	const char *tok = kiln_env_http_token();
	sigset_t all, old;
	int fd, mfd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	pthread_once(&mhd_once, mhd_load);
	if (mhd_err)
		return mhd_err;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->wake.fd = -1;
	srv->listen.fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->idle, &ca);
		pthread_cond_init(&srv->guard_cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&srv->glock, NULL);
	}
	if (tok && *tok) {
		srv->token = strdup(tok);
		if (!srv->token) {
			err = -ENOMEM;
			goto out_free;
		}
		srv->token_len = strlen(tok);
	}
	/* At a high number, checked before each use: agent/kfd.h. */
	err = kiln_kfd_adopt(&srv->wake, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (err)
		goto out_free;
	fd = open_listener(srv, addr);
	if (fd < 0) {
		err = fd;
		goto out_free;
	}
	/*
	 * MHD closes the socket it is given when it stops; whether it does
	 * when it fails to start is not said, so it gets a copy and ours is
	 * closed here either way: never a double close in the host.
	 */
	mfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (mfd < 0) {
		err = -errno;
		close(fd);
		goto out_free;
	}
	close(fd);
	/* A high number, remembered: closed at the stop only if ours. */
	err = kiln_kfd_adopt(&srv->listen, mfd);
	if (err)
		goto out_free;
	mfd = srv->listen.fd;
	/* MHD's thread (and the profile workers it starts) inherits this
	 * mask: no asynchronous signal of the host ever runs on them. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGABRT);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* libmicrohttpd's thread, the guard and the jobs they start are
	 * kiln's: never sampled, never in a goroutine dump. */
	kiln_agent_creating_internal(true);
	srv->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
		MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
		0, on_accept, srv, on_request, srv,
		/* first, or MHD prints the messages of the other options */
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)mfd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONN_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
		MHD_OPTION_END);
	err = errno;
	/* The guard inherits the same mask: no signal of the host on it. */
	if (srv->mhd)
		srv->guard_on = !kiln_agent_thread_start(&srv->guard, "kiln-http-guard",
							 guard_main, srv, false);
	kiln_agent_creating_internal(false);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!srv->mhd) {
		err = err ? -err : -ENOMEM;
		goto out_free;
	}
	kiln_agent_log(KILN_LOG_INFO, "http on %s%s", srv->name,
		       srv->token ? " (bearer token required)" : "");
	/* /debug/pprof/heap answers from the start, as Go's does: heap
	 * profiling in sampling mode unless it is on already; without the
	 * malloc interposer the heap paths answer empty (do_heap_off()). */
	if (kiln_heap_available())
		kiln_heap_profile_start();
	else
		kiln_agent_log(KILN_LOG_INFO, "http: heap profiling off (libkiln-malloc.so "
			       "not loaded): /debug/pprof/heap and allocs answer empty");
	servers_add(srv);
	*out = srv;
	return 0;
out_free:
	kiln_kfd_close(&srv->wake);
	free(srv->token);
	pthread_cond_destroy(&srv->idle);
	pthread_cond_destroy(&srv->guard_cv);
	pthread_mutex_destroy(&srv->glock);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return err;
}

/*
 * kiln's work, on the caller's thread: the server's allocations are not
 * the program's (the threads libmicrohttpd starts here, and those they
 * start, are kiln's own: see http_start()).
 */
KILN_API int kiln_http_start(const char *addr, struct kiln_http **out)
{
	int err;

	kiln_heap_quiet_begin();
	err = http_start(addr, out);
	kiln_heap_quiet_end();
	return err;
}

KILN_API int kiln_http_port(const struct kiln_http *srv)
{
	return srv ? srv->port : -EINVAL;
}

static int http_stop(struct kiln_http *srv)
{
	uint64_t one = 1;
	struct timespec deadline;
	MHD_socket lfd;
	int rc = 0;

	if (!srv)
		return 0;
	servers_del(srv);
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_mutex_unlock(&srv->lock);
	if (!kiln_kfd_ours(&srv->listen)) {
		/*
		 * The program closed the server's fds (a daemon closing every
		 * fd as it detaches): libmicrohttpd's numbers may be the
		 * program's files now, and stopping it would remove them from
		 * its epoll set, close them, or abort the process when that
		 * fails.  The server is left as it is (it serves nothing).
		 */
		kiln_agent_log(KILN_LOG_DEBUG, "http: the program closed the "
			       "server's file descriptors: not stopped");
		guard_stop(srv);
		kiln_kfd_forget(&srv->listen);
		kiln_kfd_close(&srv->wake);
		return 0;
	}
	/* No new connections; the listening socket is ours to close now,
	 * after MHD_stop_daemon() (its thread may still look at it). */
	lfd = MHD_quiesce_daemon(srv->mhd);
	/* Wakes every profile worker: each ends its profile, resumes its
	 * connection with a 503 and leaves.  MHD must see no suspended
	 * connection when it stops. */
	if ((rc = kiln_kfd_write(&srv->wake, &one, sizeof(one))))
		kiln_agent_log(KILN_LOG_DEBUG, "http: cannot wake the workers: %s",
			       strerror(-rc));
	rc = 0;
	pthread_mutex_lock(&srv->lock);
	while (srv->jobs)
		pthread_cond_wait(&srv->idle, &srv->lock);
	/*
	 * A resumed request is answered by MHD's thread later: stopping the
	 * daemon at once closed its socket before the 503 went out (the
	 * client saw no answer at all).  Each is counted until MHD completes
	 * it; a client that does not read is not waited for long.
	 */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += HTTP_STOP_FLUSH_MS / 1000;
	deadline.tv_nsec += (long)(HTTP_STOP_FLUSH_MS % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	while (srv->suspended && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&srv->idle, &srv->lock, &deadline);
	if (srv->suspended)
		kiln_agent_log(KILN_LOG_DEBUG, "http: %u answer(s) not sent after "
			       "%d ms: closing anyway", srv->suspended,
			       HTTP_STOP_FLUSH_MS);
	pthread_mutex_unlock(&srv->lock);
	guard_stop(srv);
	MHD_stop_daemon(srv->mhd);
	if (lfd != MHD_INVALID_SOCKET && lfd == srv->listen.fd)
		kiln_kfd_close(&srv->listen);
	kiln_kfd_close(&srv->wake);
	free(srv->token);
	pthread_cond_destroy(&srv->idle);
	pthread_cond_destroy(&srv->guard_cv);
	pthread_mutex_destroy(&srv->glock);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return 0;
}

KILN_API int kiln_http_stop(struct kiln_http *srv)
{
	int err;

	kiln_heap_quiet_begin();
	err = http_stop(srv);
	kiln_heap_quiet_end();
	return err;
}
