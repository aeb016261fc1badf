/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP endpoints a worker thread answers (httpint.h): CPU profiles over
 * seconds, heap and allocs profiles, rendered as pprof, text, a flame
 * graph or kiln's page.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>

#include "runtime/guard.h"
#include "cpu/cpu.h"
#include "format/format.h"
#include "http/parse.h"
#include "profile/profile.h"
#include "profile/top.h"
#include "http/http.h"
#include "http/httpint.h"
#include "http/workers.h"

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

	err = kiln_top_build(&t, p, type, KILN_TOP_FUNCTIONS, false);
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

/* The drawings libkiln/draw.c handed over (kiln_http_set_draw()). */
static struct kiln_http_draw draw;

void kiln_http_set_draw(const struct kiln_http_draw *d)
{
	draw = *d;
}

/* The flame graph SVG (?format=svg). */
static int render_flame(struct kiln_prof *p, int type, const struct job *j,
			struct kiln_buf *out)
{
	char prog[300], title[400];

	if (!draw.flame_svg)
		return -ENOTSUP;
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
	return draw.flame_svg(p, type, title, out);
}

/*
 * A browser's answer: kiln serve's page, saved with the profile's data in
 * it, so the same page serves a profile file and a live process: flame
 * graph and icicle, search, the top table.  No call graph (graphviz is
 * never loaded into the program).
 */
static int render_page(struct kiln_prof *p, int type, const struct job *j,
		       struct kiln_buf *out)
{
	char prog[300], title[400];

	if (!draw.page)
		return -ENOTSUP;
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
	return draw.page(p, type, title, out);
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
		r = khttp_response_take(&b, ctype);
		if (r && j->fmt == OUT_PPROF)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
						j->kind == JOB_HEAP ? "attachment; filename=\"heap\"" :
						j->kind == JOB_ALLOCS ? "attachment; filename=\"allocs\"" :
						"attachment; filename=\"profile\"");
	} else if (err == -ENOTSUP) {
		*code = MHD_HTTP_NOT_IMPLEMENTED;
		r = khttp_text_response("this build draws no %s: ask for format=pprof",
					j->fmt == OUT_HTML ? "page" : "flame graph");
	} else {
		*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = khttp_text_response("could not write the profile: %s", strerror(-err));
	}
	kiln_buf_release(&b);
	return r;
}

/* ---- the CPU profile: the worker ---- */

/*
 * The answer of a heap or allocs request once its seconds are over: a
 * snapshot of the heap profiler's aggregate, minus the one taken when the
 * request came when it asked for seconds.
 */
static void heap_answer(struct job *j, bool gone, bool stopped)
{
	struct kiln_htrace_snap now;
	struct kiln_prof *p = NULL;
	unsigned code = MHD_HTTP_OK;
	struct MHD_Response *r;
	int err;

	if (gone || stopped) {
		j->req->code = MHD_HTTP_SERVICE_UNAVAILABLE;
		j->req->resp = khttp_text_response("the heap profile was cut short: %s",
						   gone ? "the client went away" :
						   "the server stops");
		return;
	}
	kiln_rt_quiet_begin();
	err = kiln_htrace_snap_take(&now);
	if (!err)
		err = kiln_htrace_prof(&now, j->seconds ? &j->base : NULL,
					   j->kind == JOB_ALLOCS, &p);
	if (err) {
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = khttp_text_response("could not take the heap profile: %s", strerror(-err));
	} else {
		r = profile_response(p, j, &code);
	}
	kiln_prof_free(p);
	kiln_htrace_snap_release(&now);
	kiln_rt_quiet_end();
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
	int64_t deadline = khttp_now_ms() + (int64_t)j->seconds * 1000;
	bool gone = false, stopped = false;
	unsigned code;
	int err;

	/* KILN_HTTP_CHILDREN=1: the forked workers sample the same window
	 * (workers.c; none registered otherwise). */
	if (j->kind == JOB_CPU)
		khttp_workers_ask(j->seconds, j->hz);
	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = srv->wake.fd, .events = POLLIN },
			{ .fd = j->client_fd, .events = POLLRDHUP },
		};
		int64_t left = deadline - khttp_now_ms();
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
	err = kiln_sampler_end(&p);
	khttp_workers_collect(p, khttp_now_ms() + HTTP_WORKERS_GRACE_MS,
			      !err && !gone && !stopped);
	if (gone || stopped) {
		kiln_rt_log(KILN_LOG_DEBUG, "http: CPU profile cut short (%s)",
			       gone ? "the client went away" : "the server stops");
		code = MHD_HTTP_SERVICE_UNAVAILABLE;
		r = khttp_text_response("the CPU profile was cut short: %s",
					gone ? "the client went away" : "the server stops");
	} else if (err == -ENOENT) {
		/* Someone else ended it: the program installed its own SIGPROF
		 * handler meanwhile (the agent steps aside), or stopped it. */
		code = MHD_HTTP_SERVICE_UNAVAILABLE;
		r = khttp_text_response("the CPU profile was stopped in the program before "
				  "its end (its own SIGPROF handler?)");
	} else if (err) {
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = khttp_text_response("could not take the CPU profile: %s", strerror(-err));
	} else {
		r = profile_response(p, j, &code);
	}
	kiln_prof_free(p);
	j->req->resp = r;
	j->req->code = code;
resume:
	/* From here on the request may be answered and freed at any time. */
	MHD_resume_connection(j->conn);
	kiln_htrace_snap_release(&j->base);
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
	const char *v = khttp_arg(c, "format");
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
			*resp = khttp_text_response("bad format '%s': want pprof, text, html or svg",
						    khttp_quote(v, q, sizeof(q)));
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

/*
 * Hands job j (kind, hz, base set by the caller) to a worker thread of its
 * own, with request rq suspended until it answers: 0, or -errno when no
 * thread started (the caller frees what j holds, then job_failed()).
 */
static int start_job(struct kiln_http *srv, struct MHD_Connection *c,
		     struct req *rq, struct job *j, long seconds,
		     enum out_fmt fmt)
{
	const union MHD_ConnectionInfo *ci;
	pthread_t t;

	khttp_conn_extend(c, seconds);
	j->srv = srv;
	j->conn = c;
	j->req = rq;
	j->seconds = (int)seconds;
	j->fmt = fmt;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	j->client_fd = ci ? ci->connect_fd : -1;
	/* No idle timeout while the profile runs; the answer still has to go
	 * out after it. */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)seconds + 60 + HTTP_IDLE_TIMEOUT);
	suspend(srv, c, rq);
	return kiln_rt_thread_start(&t, "kiln-http-job", job_main, j, true);
}

/* A job whose thread did not start: a 500 for its suspended request. */
static void job_failed(struct kiln_http *srv, struct MHD_Connection *c,
		       struct req *rq, int err)
{
	rq->resp = khttp_text_response("cannot start a thread: %s", strerror(-err));
	rq->code = MHD_HTTP_INTERNAL_SERVER_ERROR;
	pthread_mutex_lock(&srv->lock);
	if (!--srv->jobs)
		pthread_cond_broadcast(&srv->idle);
	pthread_mutex_unlock(&srv->lock);
	MHD_resume_connection(c);
}

/* /debug/pprof/profile */
enum MHD_Result khttp_do_profile(struct kiln_http *srv, struct MHD_Connection *c,
				  struct req *rq)
{
	struct MHD_Response *r = NULL;
	enum out_fmt fmt = OUT_PPROF;
	long seconds, hz, debug;
	struct job *j;
	int err;

	if (khttp_int_arg(c, "seconds", 1, 3600, 30, "a whole number of seconds", &seconds, &r) ||
	    khttp_int_arg(c, "frequency", 1, 100000, 99, "samples per second", &hz, &r) ||
	    khttp_int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r))
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST, r);
	if (out_format(c, debug, &fmt, &r))
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST, r);

	j = calloc(1, sizeof(*j));
	if (!j)
		return MHD_NO;
	pthread_mutex_lock(&srv->lock);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->lock);
		free(j);
		return khttp_queue(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				   khttp_text_response("the server is stopping"));
	}
	err = kiln_sampler_begin((int)hz, false);
	if (!err)
		srv->jobs++;
	pthread_mutex_unlock(&srv->lock);
	switch (err) {
	case 0:
		break;
	case -EBUSY:
		free(j);
		return khttp_queue(c, MHD_HTTP_CONFLICT,
				   khttp_text_response("a CPU profile is already being taken in this "
						 "process; try again when it ends"));
	case -EEXIST:
		free(j);
		return khttp_queue(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				   khttp_text_response("CPU profiling is not available: the program "
						 "has its own SIGPROF handler"));
	case -EINVAL:
		free(j);
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST,
				   khttp_text_response("bad frequency '%ld': the sampler refuses it", hz));
	default:
		free(j);
		return khttp_queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   khttp_text_response("cannot start a CPU profile: %s", strerror(-err)));
	}
	kiln_rt_log(KILN_LOG_DEBUG, "http: CPU profile for %ld s at %ld Hz",
		       seconds, hz);
	j->hz = (int)hz;
	err = start_job(srv, c, rq, j, seconds, fmt);
	if (err) {
		struct kiln_prof *p = NULL;

		kiln_sampler_end(&p);
		kiln_prof_free(p);
		free(j);
		job_failed(srv, c, rq, err);
	}
	return MHD_YES;
}


/*
 * /debug/pprof/heap and /debug/pprof/allocs: answered by a worker thread
 * (symbolizing takes a while; with ?seconds=N it first waits them out),
 * like a CPU profile.  Without the malloc interposer an empty profile
 * (khttp_do_heap_off()); 501 when the heap profiler cannot start otherwise.
 */
enum MHD_Result khttp_do_heap(struct kiln_http *srv, struct MHD_Connection *c,
			       struct req *rq, const char *what)
{
	struct MHD_Response *r = NULL;
	enum out_fmt fmt;
	long seconds, debug;
	struct job *j;
	int err;

	/* gc=1 (Go runs a collection first) means nothing here. */
	if (khttp_int_arg(c, "seconds", 1, 3600, 0, "a whole number of seconds", &seconds, &r) ||
	    khttp_int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r))
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST, r);
	if (out_format(c, debug, &fmt, &r))
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST, r);
	err = kiln_htrace_profile_start();
	if (err)
		return khttp_queue(c, MHD_HTTP_NOT_IMPLEMENTED,
				   khttp_text_response("/debug/pprof/%s: the heap profiler could not "
						 "start in this process: %s", what,
						 strerror(-err)));
	j = calloc(1, sizeof(*j));
	if (!j)
		return MHD_NO;
	j->kind = !strcmp(what, "heap") ? JOB_HEAP : JOB_ALLOCS;
	if (seconds) {
		kiln_rt_quiet_begin();
		err = kiln_htrace_snap_take(&j->base);
		kiln_rt_quiet_end();
		if (err) {
			free(j);
			return khttp_queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					   khttp_text_response("could not take the heap profile: %s",
							 strerror(-err)));
		}
	}
	pthread_mutex_lock(&srv->lock);
	if (srv->stopping) {
		pthread_mutex_unlock(&srv->lock);
		kiln_htrace_snap_release(&j->base);
		free(j);
		return khttp_queue(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				   khttp_text_response("the server is stopping"));
	}
	srv->jobs++;
	pthread_mutex_unlock(&srv->lock);
	kiln_rt_log(KILN_LOG_DEBUG, "http: %s profile, %ld s", what, seconds);
	err = start_job(srv, c, rq, j, seconds, fmt);
	if (err) {
		kiln_htrace_snap_release(&j->base);
		free(j);
		job_failed(srv, c, rq, err);
	}
	return MHD_YES;
}
