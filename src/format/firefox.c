/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Firefox Profiler's processed profile format, the writer (format
 * stage): the JSON that profiler.firefox.com saves and opens without a
 * symbol server, version 70 of the format (docs/formats.md, "Firefox
 * Profiler"), which the profiler upgrades to its current one on loading.
 *
 * Tables shared by all threads (profile.shared): strings, functions,
 * frames (one per inline frame of a location), resources and libraries
 * (one per mapped file), sources (file names) and the stack tree (parents
 * first, prefixOffset).  One thread per (pid, thread) label pair with its
 * samples in time order at their real times (the "time" label) and
 * weights (samples, bytes, or milliseconds for time types); a sample with
 * a "state" label other than "running" (off-CPU and wall profiles) is
 * also an interval marker on its thread's track.  The profile's memory
 * over time (a heap trace) becomes a Memory counter.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/htab.h"

#include "format/firefoxint.h"

/* The processed format version written, and the Gecko format version of
 * the same profiler release (meta.version). */
#define FF_VERSION 70
#define FF_GECKO_VERSION 36
#define STR_(x) #x
#define STR(x) STR_(x)

struct tkey {
	const struct ff *f;
	int64_t pid, tid;
};

static bool tkey_eq(const void *ctx, uint32_t id)
{
	const struct tkey *k = ctx;
	const struct fthread *t = &k->f->threads[id - 1];

	return t->pid == k->pid && t->tid == k->tid;
}

/* The thread of (pid, tid), added with its name on first sight. */
static long ff_thread(struct ff *f, int64_t pid, int64_t tid, uint32_t name)
{
	struct tkey k = { f, pid, tid };
	int64_t key[2] = { pid, tid };
	uint32_t hash = (uint32_t)kiln_hash(key, sizeof(key));
	uint32_t id = kiln_htab_find(&f->thread_index, hash, tkey_eq, &k);

	if (id)
		return (long)id - 1;
	if (KILN_GROW(f->threads, f->threads_alloc, f->nthreads + 1, 16))
		return -ENOMEM;
	f->threads[f->nthreads] = (struct fthread){ pid, tid, name };
	if (kiln_htab_insert(&f->thread_index, hash, (uint32_t)f->nthreads + 1))
		return -ENOMEM;
	return (long)f->nthreads++;
}

static int cmp_frec(const void *a, const void *b)
{
	const struct frec *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* How the chosen type is weighed (samples.weightType) and the weight of a
 * sample in it. */
struct weigh {
	const char *wtype;	/* "samples", "bytes" or "tracing-ms" */
	int type;		/* the chosen type */
	int from;		/* the type a weight is the value of */
	int dur_type;		/* a state interval's length (ns), or -1 */
	int cpu_type;		/* CPU time (ns) for threadCPUDelta, or -1 */
};

static void weigh_init(const struct kiln_prof *p, int type, struct weigh *w)
{
	const char *tn = kiln_prof_str(p, p->types[type].type);
	const char *unit = kiln_prof_str(p, p->types[type].unit);
	int count_type = -1;
	size_t i;

	w->type = w->from = type;
	w->dur_type = w->cpu_type = -1;
	for (i = 0; i < p->ntypes; i++) {
		const char *n = kiln_prof_str(p, p->types[i].type);
		const char *u = kiln_prof_str(p, p->types[i].unit);

		if (!strcmp(n, "samples") && !strcmp(u, "count"))
			count_type = (int)i;
		if ((!strcmp(n, "wall") || !strcmp(n, "off-cpu")) &&
		    !strcmp(u, "nanoseconds"))
			w->dur_type = (int)i;
		if (!strcmp(n, "cpu") && !strcmp(u, "nanoseconds"))
			w->cpu_type = (int)i;
	}
	/* A wall profile's CPU time: its running samples' wall time. */
	if (w->cpu_type < 0 && w->dur_type >= 0 &&
	    !strcmp(kiln_prof_str(p, p->types[w->dur_type].type), "wall"))
		w->cpu_type = w->dur_type;
	w->wtype = "samples";
	if (!strcmp(unit, "bytes")) {
		w->wtype = "bytes";
	} else if (!strcmp(unit, "nanoseconds")) {
		/* A CPU profile counts samples, as the profiler's own do;
		 * other times (wall, off-CPU) weigh their milliseconds. */
		if (!strcmp(tn, "cpu") && count_type >= 0)
			w->from = count_type;
		else
			w->wtype = "tracing-ms";
	}
}

static int add_weight(const struct weigh *w, const struct frec *r,
		      struct kiln_buf *out)
{
	int64_t v = r->v[w->from];

	if (!strcmp(w->wtype, "tracing-ms"))
		return kiln_buf_addf(out, "%.6f", (double)v / 1e6);
	return kiln_buf_addf(out, "%" PRId64, v);
}

/* The record of sample i (its event ev, or its untimed values v). */
static int add_rec(struct ff *f, struct frec *r, size_t i, int64_t time,
		   const int64_t *v)
{
	const struct kiln_prof *p = f->p;
	const struct kiln_label *name;
	int64_t pid, tid;
	long t;

	kiln_prof_thread(p, p->samples[i].labels, &pid, &tid);
	name = kiln_prof_label(p, p->samples[i].labels,
			       kiln_prof_find_str(p, "thread_name", 11));
	t = ff_thread(f, pid, tid, name ? name->str : 0);
	if (t < 0)
		return (int)t;
	r->thread = (uint32_t)t;
	r->time = time >= 0 ? time : -1;
	r->sample = i;
	r->v = v;
	return 0;
}

/*
 * The records to write: the time column's events (where the samples were
 * taken, in the order they came), then the samples without events.
 */
static int collect(struct ff *f, int type, struct frec **out, size_t *nout)
{
	struct kiln_prof *p = f->p;
	struct frec *r;
	uint8_t *timed;
	size_t i, n = 0;
	int err = 0;

	*out = r = calloc(p->nevents + p->nsamples + 1, sizeof(*r));
	timed = calloc(p->nsamples + 1, 1);
	if (!r || !timed) {
		free(timed);
		return -ENOMEM;
	}
	for (i = 0; i < p->nevents && !err; i++) {
		const int64_t *v = kiln_prof_event_values(p, i);

		timed[p->events[i].sample] = 1;
		if (v[type] <= 0)
			continue;
		err = add_rec(f, &r[n], p->events[i].sample, p->events[i].time, v);
		r[n].ord = n;
		n++;
	}
	for (i = 0; i < p->nsamples && !err; i++) {
		const int64_t *v = p->values + i * p->ntypes;

		if (timed[i] || v[type] <= 0)
			continue;
		err = add_rec(f, &r[n], i, -1, v);
		r[n].ord = n;
		n++;
	}
	free(timed);
	if (err)
		return err;
	if (n)
		qsort(r, n, sizeof(*r), cmp_frec);
	*nout = n;
	return 0;
}

/* One thread's columns as they are built. */
struct tcols {
	struct kiln_buf stack, time, weight, cpu;
	struct kiln_buf mdata, mname, mstart, mend, mphase, mcat;
	size_t nmarkers;
};

static void tcols_release(struct tcols *c)
{
	kiln_buf_release(&c->stack);
	kiln_buf_release(&c->time);
	kiln_buf_release(&c->weight);
	kiln_buf_release(&c->cpu);
	kiln_buf_release(&c->mdata);
	kiln_buf_release(&c->mname);
	kiln_buf_release(&c->mstart);
	kiln_buf_release(&c->mend);
	kiln_buf_release(&c->mphase);
	kiln_buf_release(&c->mcat);
}

/* An interval marker named after state (a kiln string id) from t for
 * dur milliseconds, with the stack the thread waited in. */
static int add_marker(struct ff *f, struct tcols *c, uint32_t state,
		      double t, double dur, long stack)
{
	const char *sep = c->nmarkers ? "," : "";
	long name = kiln_fftab_str(f, state);
	int err;

	if (name < 0)
		return (int)name;
	err = kiln_buf_addf(&c->mdata, "%s{\"type\":\"KilnState\",\"state\":", sep);
	if (!err)
		err = kiln_buf_add_json(&c->mdata, kiln_prof_str(f->p, state),
					kiln_prof_strlen(f->p, state));
	if (!err && stack >= 0)
		err = kiln_buf_addf(&c->mdata, ",\"cause\":{\"stack\":%ld,"
				    "\"time\":%.6f}", stack, t);
	if (!err)
		err = kiln_buf_addc(&c->mdata, '}');
	if (!err)
		err = kiln_buf_addf(&c->mname, "%s%ld", sep, name);
	if (!err)
		err = kiln_buf_addf(&c->mstart, "%s%.6f", sep, t);
	if (!err)
		err = kiln_buf_addf(&c->mend, "%s%.6f", sep, t + dur);
	if (!err)
		err = kiln_buf_addf(&c->mphase, "%s1", sep);	/* INTERVAL */
	if (!err)
		err = kiln_buf_addf(&c->mcat, "%s%d", sep, CAT_STATE);
	c->nmarkers++;
	return err;
}

/*
 * The samples (and state markers) of records r[0..n), all of one thread,
 * into c.  Times in milliseconds since meta.startTime: the time label,
 * the records of one bucket spread evenly over it; records without one
 * at interval_ms apart.
 */
static int thread_cols(struct ff *f, const struct weigh *w,
		       const struct frec *r, size_t n, double interval_ms,
		       struct tcols *c)
{
	struct kiln_prof *p = f->p;
	uint32_t k_state = kiln_prof_find_str(p, "state", 5);
	size_t i, run = 0, runlen = 0;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		const struct kiln_label *st;
		const char *sep = i ? "," : "";
		long stack = kiln_fftab_stack(f, r[i].sample);
		double t;

		if (stack < -1)
			return (int)stack;
		if (r[i].time < 0) {
			t = (double)i * interval_ms;
		} else {
			if (!i || r[i].time != r[i - 1].time) {
				run = i;
				for (runlen = 1; i + runlen < n &&
				     r[i + runlen].time == r[i].time; runlen++)
					;
			}
			t = ((double)r[i].time + (double)(i - run) *
			     (double)KILN_PROF_TIME_BUCKET_NS / (double)runlen) / 1e6;
		}
		if (stack >= 0)
			err = kiln_buf_addf(&c->stack, "%s%ld", sep, stack);
		else
			err = kiln_buf_addf(&c->stack, "%snull", sep);
		if (!err)
			err = kiln_buf_addf(&c->time, "%s%.6f", sep, t);
		if (!err)
			err = kiln_buf_adds(&c->weight, sep);
		if (!err)
			err = add_weight(w, &r[i], &c->weight);
		st = kiln_prof_label(p, p->samples[r[i].sample].labels, k_state);
		if (!err && w->cpu_type >= 0)	/* on CPU: the value, else 0 */
			err = kiln_buf_addf(&c->cpu, "%s%" PRId64, sep, st && st->str &&
					    strcmp(kiln_prof_str(p, st->str), "running") ? 0 :
					    r[i].v[w->cpu_type]);
		if (!err && st && st->str &&
		    strcmp(kiln_prof_str(p, st->str), "running")) {
			int64_t d = w->dur_type >= 0 ?
				r[i].v[w->dur_type] : 0;

			err = add_marker(f, c, st->str, t, (double)d / 1e6, stack);
		}
	}
	return err;
}

/* Appends "key":[body] (body: the comma-separated values). */
static int add_col(struct kiln_buf *out, const char *key,
		   const struct kiln_buf *body)
{
	int err = kiln_buf_addf(out, "\"%s\":[", key);

	if (!err && body->len)
		err = kiln_buf_add(out, body->data, body->len);
	if (!err)
		err = kiln_buf_addc(out, ']');
	return err;
}

static int write_thread(struct ff *f, const struct weigh *w, size_t ti,
			const struct frec *r, size_t n, double interval_ms,
			struct kiln_buf *out)
{
	const struct fthread *t = &f->threads[ti];
	int64_t pid = t->pid >= 0 ? t->pid : t->tid >= 0 ? t->tid : 0;
	int64_t tid = t->tid >= 0 ? t->tid : pid;
	uint32_t pname = t->name;	/* the process's name */
	struct tcols c;
	char name[64];
	int err;

	memset(&c, 0, sizeof(c));
	err = thread_cols(f, w, r, n, interval_ms, &c);
	if (!err)
		err = kiln_buf_addf(out, "%s\n{\"processType\":\"default\","
				    "\"processStartupTime\":0,\"processShutdownTime\":null,"
				    "\"registerTime\":0,\"unregisterTime\":null,"
				    "\"pausedRanges\":[],\"showMarkersInTimeline\":true,"
				    "\"name\":", ti ? "," : "");
	if (!err && t->name)
		err = kiln_buf_add_json(out, kiln_prof_str(f->p, t->name),
					kiln_prof_strlen(f->p, t->name));
	else if (!err) {
		snprintf(name, sizeof(name), "%s %" PRId64,
			 t->tid >= 0 ? "thread" : "kiln", tid);
		err = kiln_buf_add_json(out, name, strlen(name));
	}
	if (!err && pid != tid) {
		/* The process is named after its main thread, if sampled. */
		struct tkey k = { f, pid, pid };
		int64_t key[2] = { pid, pid };
		uint32_t id = kiln_htab_find(&f->thread_index,
					     (uint32_t)kiln_hash(key, sizeof(key)),
					     tkey_eq, &k);

		pname = id ? f->threads[id - 1].name : 0;
	}
	if (!err && pname) {
		err = kiln_buf_adds(out, ",\"processName\":");
		if (!err)
			err = kiln_buf_add_json(out, kiln_prof_str(f->p, pname),
						kiln_prof_strlen(f->p, pname));
	}
	if (!err)
		err = kiln_buf_addf(out, ",\"isMainThread\":%s,\"pid\":\"%" PRId64
				    "\",\"tid\":%" PRId64 ",\n\"samples\":{",
				    pid == tid ? "true" : "false", pid, tid);
	if (!err)
		err = add_col(out, "stack", &c.stack);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "time", &c.time);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "weight", &c.weight);
	if (!err && w->cpu_type >= 0)
		err = kiln_buf_addc(out, ',');
	if (!err && w->cpu_type >= 0)
		err = add_col(out, "threadCPUDelta", &c.cpu);
	if (!err)
		err = kiln_buf_addf(out, ",\"weightType\":\"%s\",\"length\":%zu},"
				    "\n\"markers\":{", w->wtype, n);
	if (!err)
		err = add_col(out, "data", &c.mdata);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "name", &c.mname);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "startTime", &c.mstart);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "endTime", &c.mend);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "phase", &c.mphase);
	if (!err)
		err = kiln_buf_addc(out, ',');
	if (!err)
		err = add_col(out, "category", &c.mcat);
	if (!err)
		err = kiln_buf_addf(out, ",\"length\":%zu}}", c.nmarkers);
	tcols_release(&c);
	return err;
}

static const char meta_fixed[] =
	"\"processType\":0,\"stackwalk\":1,\"debug\":false,"
	"\"version\":" STR(FF_GECKO_VERSION) ","
	"\"preprocessedProfileVersion\":" STR(FF_VERSION) ","
	"\"symbolicated\":true,\"importedFrom\":\"kiln\",\"platform\":\"X11\","
	"\"oscpu\":\"Linux\",\"usesOnlyOneStackType\":true,"
	"\"sourceCodeIsNotOnSearchfox\":true,\"keepProfileThreadOrder\":true,"
	"\"sampleUnits\":{\"time\":\"ms\",\"eventDelay\":\"ms\","
	"\"threadCPUDelta\":\"ns\"},"
	"\"extensions\":{\"baseURL\":[],\"id\":[],\"name\":[],\"length\":0},\n"
	"\"categories\":["
	"{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"User\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Library\",\"color\":\"blue\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Thread state\",\"color\":\"purple\","
	"\"subcategories\":[\"Other\"]}],\n"
	"\"markerSchema\":[{\"name\":\"KilnState\",\"tooltipLabel\":"
	"\"{marker.data.state}\",\"tableLabel\":\"{marker.data.state}\","
	"\"chartLabel\":\"{marker.data.state}\",\"display\":[\"marker-chart\","
	"\"marker-table\",\"timeline-overview\"],\"fields\":[{\"key\":\"state\","
	"\"label\":\"State\",\"format\":\"string\"}],\"description\":"
	"\"Time off CPU (kiln record --off-cpu, --wall): why the thread waited "
	"and where\"}]";

static int write_meta(struct ff *f, const char *name, double interval_ms,
		      struct kiln_buf *out)
{
	const struct kiln_prof *p = f->p;
	const char *n = name && *name ? name : "profile";
	char product[256];
	int err;

	snprintf(product, sizeof(product), "kiln: %s", n);
	err = kiln_buf_addf(out, "{\"meta\":{\"interval\":%.6f,\"startTime\":%.3f,"
			    "\"product\":", interval_ms,
			    p->time_nanos > 0 ? (double)p->time_nanos / 1e6 : 0.0);
	if (!err)
		err = kiln_buf_add_json(out, product, strlen(product));
	if (!err && p->ncomments) {
		/* The first comment: the recorded command line. */
		err = kiln_buf_adds(out, ",\"arguments\":");
		if (!err)
			err = kiln_buf_add_json(out, kiln_prof_str(p, p->comments[0]),
						kiln_prof_strlen(p, p->comments[0]));
	}
	if (!err)
		err = kiln_buf_addf(out, ",\n%s},\n", meta_fixed);
	return err;
}

/* The heap size over time as a Memory counter: samples of the change since
 * the sample before, which the profiler adds up into the graph. */
static int write_counter(struct ff *f, struct kiln_buf *out)
{
	const struct kiln_prof *p = f->p;
	size_t i;
	int err;

	if (!p->nmem || !f->nthreads)
		return 0;
	err = kiln_buf_addf(out, "\"counters\":[{\"name\":\"malloc\",\"category\":"
			    "\"Memory\",\"description\":\"heap size (live bytes)\","
			    "\"pid\":\"%" PRId64 "\",\"mainThreadIndex\":0,\n"
			    "\"samples\":{\"time\":[",
			    f->threads[0].pid >= 0 ? f->threads[0].pid :
			    f->threads[0].tid >= 0 ? f->threads[0].tid : 0);
	for (i = 0; i < p->nmem && !err; i++)
		err = kiln_buf_addf(out, "%s%.6f", i ? "," : "",
				    (double)p->mem_t[i] / 1e6);
	if (!err)
		err = kiln_buf_adds(out, "],\n\"count\":[");
	for (i = 0; i < p->nmem && !err; i++)
		err = kiln_buf_addf(out, "%s%" PRId64, i ? "," : "",
				    p->mem_bytes[i] - (i ? p->mem_bytes[i - 1] : 0));
	if (!err)
		err = kiln_buf_addf(out, "],\"length\":%zu},\n\"display\":{"
			"\"graphType\":\"line-accumulated\",\"unit\":\"bytes\","
			"\"color\":\"orange\",\"markerSchemaLocation\":"
			"\"timeline-memory\",\"sortWeight\":20,\"label\":\"Memory\","
			"\"tooltipRows\":[{\"type\":\"value\",\"source\":\"accumulated\","
			"\"format\":{\"unit\":\"bytes\"},\"label\":\"heap size at this "
			"time\"},{\"type\":\"value\",\"source\":\"count-range\","
			"\"format\":{\"unit\":\"bytes\"},\"label\":\"memory range in "
			"graph\"}]}}],\n", p->nmem);
	return err;
}

int kiln_firefox_write(struct kiln_prof *p, int type, const char *name,
		       struct kiln_buf *out)
{
	struct kiln_buf threads = KILN_BUF_INIT;
	struct frec *recs = NULL;
	struct weigh w;
	struct ff f;
	double interval_ms = 1.0;
	size_t nrecs = 0, a, b, t;
	int err;

	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	weigh_init(p, type, &w);
	if (p->period > 0 &&
	    !strcmp(kiln_prof_str(p, p->period_type.unit), "nanoseconds"))
		interval_ms = (double)p->period / 1e6;
	err = kiln_fftab_init(&f, p, type);
	if (!err)
		err = collect(&f, type, &recs, &nrecs);
	/* The profiler refuses a profile without threads: an empty one. */
	if (!err && !f.nthreads && ff_thread(&f, -1, -1, 0) < 0)
		err = -ENOMEM;
	/* Threads first: they fill the shared tables. */
	for (a = 0, t = 0; !err && t < f.nthreads; t++) {
		for (b = a; b < nrecs && recs[b].thread == t; b++)
			;
		err = write_thread(&f, &w, t, recs + a, b - a, interval_ms,
				   &threads);
		a = b;
	}
	if (!err)
		err = write_meta(&f, name, interval_ms, out);
	if (!err)
		err = kiln_fftab_libs(&f, out);
	if (!err)
		err = kiln_buf_adds(out, "\"pages\":[],\n");
	if (!err)
		err = write_counter(&f, out);
	if (!err)
		err = kiln_fftab_shared(&f, out);
	if (!err)
		err = kiln_buf_adds(out, "\"threads\":[");
	if (!err && threads.len)
		err = kiln_buf_add(out, threads.data, threads.len);
	if (!err)
		err = kiln_buf_adds(out, "]}\n");
	free(recs);
	kiln_buf_release(&threads);
	kiln_fftab_release(&f);
	return err ? err : p->err;
}
