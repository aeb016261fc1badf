/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP endpoints answered at once (httpint.h): the index, goroutine
 * (every thread's stack), cmdline, symbol lookups, and valid empty
 * profiles for what this process does not have (mutex, block, heap
 * without the malloc interposer).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "cpu/cpu.h"
#include "format/format.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/file.h"
#include "http/httpint.h"

/* ---- the other endpoints ---- */

enum MHD_Result khttp_do_index(struct MHD_Connection *c)
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
	return khttp_queue(c, MHD_HTTP_OK, khttp_response_take(&b, "text/html; charset=utf-8"));
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

	if (khttp_int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r) ||
	    khttp_int_arg(c, "seconds", 0, 3600, 0, "a whole number of seconds", &seconds, &r))
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST, r);
	if (debug > 0) {
		kiln_buf_addf(&b, "--- %s:\n%s", what, why);
		return khttp_queue(c, MHD_HTTP_OK, khttp_response_take(&b, "text/plain; charset=utf-8"));
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
		return khttp_queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   khttp_text_response("could not write the profile: %s",
						 strerror(-err)));
	}
	r = khttp_response_take(&b, "application/octet-stream");
	if (r) {
		char disp[64];

		snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", what);
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
	}
	return khttp_queue(c, MHD_HTTP_OK, r);
}

/*
 * /debug/pprof/mutex and /debug/pprof/block: Go's runtime counts lock
 * contention and blocking in its own scheduler; a C or C++ program has no
 * such hooks, so kiln answers a valid profile with Go's sample types and
 * no samples, and says why with ?debug=1.
 */
enum MHD_Result khttp_do_contention(struct MHD_Connection *c, const char *what)
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
enum MHD_Result khttp_do_heap_off(struct MHD_Connection *c, const char *what)
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
enum MHD_Result khttp_do_goroutine(struct MHD_Connection *c)
{
	struct MHD_Response *r = NULL;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p = NULL;
	long debug;
	int err;

	if (khttp_int_arg(c, "debug", 0, 2, 0, "a level", &debug, &r))
		return khttp_queue(c, MHD_HTTP_BAD_REQUEST, r);
	err = kiln_sampler_snapshot(&p);
	if (!err)
		err = debug > 0 ? dump_threads(p, &b) : kiln_pprof_write(p, &b, true);
	kiln_prof_free(p);
	if (err) {
		kiln_buf_release(&b);
		return khttp_queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   khttp_text_response("could not take the threads' stacks: %s",
						 strerror(-err)));
	}
	r = khttp_response_take(&b, debug > 0 ? "text/plain; charset=utf-8" :
			  "application/octet-stream");
	if (r && !debug)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					"attachment; filename=\"goroutine\"");
	return khttp_queue(c, MHD_HTTP_OK, r);
}

/* Go's answer: os.Args joined with NUL bytes (no NUL at the end). */
enum MHD_Result khttp_do_cmdline(struct MHD_Connection *c)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int err = kiln_read_proc(AT_FDCWD, "/proc/self/cmdline", &b);

	if (err) {
		kiln_buf_release(&b);
		return khttp_queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   khttp_text_response("cannot read /proc/self/cmdline: %s",
						 strerror(-err)));
	}
	if (b.len && b.data[b.len - 1] == '\0')
		b.len--;
	return khttp_queue(c, MHD_HTTP_OK, khttp_response_take(&b, "text/plain; charset=utf-8"));
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
enum MHD_Result khttp_do_symbol(struct MHD_Connection *c, struct req *rq,
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
		return khttp_queue(c, MHD_HTTP_CONTENT_TOO_LARGE,
				   khttp_text_response("request body over %zu bytes%s",
						       rq->body_max, rq->body_max < HTTP_BODY_MAX ?
						       " (KILN_HTTP_TOKEN allows more)" : ""));
	kiln_buf_adds(&out, "num_symbols: 1\n");
	if (inlen) {
		s = kiln_sym_new(&so);
		err = s ? kiln_read_self_maps(&maps) : -ENOMEM;
		if (!err)
			err = kiln_sym_add_maps(s, maps.data, maps.len);
		if (!err)
			kiln_sym_load_perfmap(s, getpid(), NULL);
		if (err) {
			kiln_sym_free(s);
			kiln_buf_release(&maps);
			kiln_buf_release(&out);
			return khttp_queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					   khttp_text_response("cannot read the address space: %s",
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
	return khttp_queue(c, MHD_HTTP_OK, khttp_response_take(&out, "text/plain; charset=utf-8"));
}

