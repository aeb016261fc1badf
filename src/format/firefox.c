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

/* The processed format version written, and the Gecko format version of
 * the same profiler release (meta.version). */
#define FF_VERSION 70
#define FF_GECKO_VERSION 36
#define STR_(x) #x
#define STR(x) STR_(x)

/* meta.categories, by index; frames take theirs from their code's kind. */
enum { CAT_OTHER, CAT_USER, CAT_LIB, CAT_KERNEL, CAT_STATE };

struct ffunc {
	uint32_t name;		/* stringArray index */
	int32_t res, src;	/* -1: none */
	int64_t line;		/* 0: none */
};

struct fres {
	uint32_t name;		/* stringArray index (base name) */
	uint32_t path, build;	/* kiln string ids */
};

struct fframe {
	int64_t addr;		/* -1: none */
	int32_t lib;		/* = resource index, -1: none */
	uint32_t depth, cat, func;
	int64_t line;		/* 0: none */
};

struct fstack {
	uint32_t frame;
	int32_t prefix;		/* -1: a root */
};

struct fthread {
	int64_t pid, tid;
	uint32_t name;		/* kiln string id, 0: none */
};

struct frec {
	uint32_t thread;
	int64_t time;		/* ns since time_nanos, -1: none */
	size_t sample;
};

struct ff {
	struct kiln_prof *p;
	struct kiln_buf strings;	/* stringArray's body */
	uint32_t nstrings;
	uint32_t *str_of;	/* kiln string id -> index + 1 */
	uint32_t *fn_func;	/* kiln function id -> func + 1 */
	uint32_t *name_func;	/* kiln string id (unnamed frames) -> func + 1 */
	uint32_t *file_res;	/* kiln string id of a file -> resource + 1 */
	uint32_t *file_src;	/* kiln string id of a file -> source + 1 */
	uint32_t *loc_frame;	/* location id -> first frame + 1 */
	int32_t *sample_stack;	/* sample -> stack + 1 */
	struct ffunc *funcs;
	size_t nfuncs, funcs_alloc;
	struct fres *res;
	size_t nres, res_alloc;
	uint32_t *srcs;		/* stringArray index of the file name */
	size_t nsrcs, srcs_alloc;
	struct fframe *frames;
	size_t nframes, frames_alloc;
	struct fstack *stacks;
	size_t nstacks, stacks_alloc;
	struct kiln_htab stack_index;
	struct fthread *threads;
	size_t nthreads, threads_alloc;
	struct kiln_htab thread_index;
	struct kiln_frame *fr;	/* kiln_prof_frames()'s buffer */
	size_t fr_cap;
};

/* The stringArray index of kiln string id, added on first use. */
static long ff_str(struct ff *f, uint32_t id)
{
	const struct kiln_prof *p = f->p;
	int err;

	if (f->str_of[id])
		return (long)f->str_of[id] - 1;
	err = kiln_buf_adds(&f->strings, f->nstrings ? ",\n" : "\n");
	if (!err)
		err = kiln_buf_add_json(&f->strings, kiln_prof_str(p, id),
					kiln_prof_strlen(p, id));
	if (err)
		return err;
	f->str_of[id] = ++f->nstrings;
	return (long)f->nstrings - 1;
}

/* The last path component of kiln string id, interned. */
static uint32_t base_name(struct kiln_prof *p, uint32_t id)
{
	const char *s = kiln_prof_str(p, id), *b = strrchr(s, '/');

	return b && b[1] ? kiln_prof_interns(p, b + 1) : id;
}

/* The resource (and library) of a mapped file, -1 for none. */
static long ff_res(struct ff *f, uint32_t mapping)
{
	struct kiln_prof *p = f->p;
	const struct kiln_mapping *m;
	uint32_t name;
	long s;

	if (!mapping || !p->mappings[mapping].file)
		return -1;
	m = &p->mappings[mapping];
	if (f->file_res[m->file])
		return (long)f->file_res[m->file] - 1;
	name = base_name(p, m->file);	/* interned by prepare() */
	if (p->err)
		return p->err;
	s = ff_str(f, name);
	if (s < 0)
		return s;
	if (KILN_GROW(f->res, f->res_alloc, f->nres + 1, 16))
		return -ENOMEM;
	f->res[f->nres] = (struct fres){ (uint32_t)s, m->file, m->build_id };
	f->file_res[m->file] = (uint32_t)++f->nres;
	return (long)f->nres - 1;
}

static long ff_src(struct ff *f, uint32_t file)
{
	long s;

	if (!file)
		return -1;
	if (f->file_src[file])
		return (long)f->file_src[file] - 1;
	s = ff_str(f, file);
	if (s < 0)
		return s;
	if (KILN_GROW(f->srcs, f->srcs_alloc, f->nsrcs + 1, 16))
		return -ENOMEM;
	f->srcs[f->nsrcs] = (uint32_t)s;
	f->file_src[file] = (uint32_t)++f->nsrcs;
	return (long)f->nsrcs - 1;
}

/* The function of a frame: by function id, or by name for a frame
 * without one ("[libfoo.so]"). */
static long ff_func(struct ff *f, const struct kiln_frame *k, long res)
{
	const struct kiln_prof *p = f->p;
	const struct kiln_function *fn = k->function ?
		&p->functions[k->function] : NULL;
	uint32_t *slot = fn ? &f->fn_func[k->function] : &f->name_func[k->name];
	long name, src;

	if (*slot)
		return (long)*slot - 1;
	name = ff_str(f, k->name);
	if (name < 0)
		return name;
	src = fn ? ff_src(f, fn->filename) : -1;
	if (src < -1)
		return src;
	if (KILN_GROW(f->funcs, f->funcs_alloc, f->nfuncs + 1, 256))
		return -ENOMEM;
	f->funcs[f->nfuncs] = (struct ffunc){ (uint32_t)name, (int32_t)res,
					      (int32_t)src,
					      fn && fn->start_line > 0 ?
					      fn->start_line : 0 };
	*slot = (uint32_t)++f->nfuncs;
	return (long)f->nfuncs - 1;
}

static uint32_t kind_category(enum kiln_kind k)
{
	switch (k) {
	case KILN_KIND_USER: return CAT_USER;
	case KILN_KIND_LIB: return CAT_LIB;
	case KILN_KIND_KERNEL: return CAT_KERNEL;
	default: return CAT_OTHER;
	}
}

/*
 * The frames of location k[0].location, whose n inline frames (innermost
 * first) are k[0..n): made once, consecutive, the outermost at inline
 * depth 0.  Returns the index of the frame of k[0].
 */
static long ff_frames(struct ff *f, const struct kiln_frame *k, size_t n)
{
	struct kiln_prof *p = f->p;
	const struct kiln_location *l = &p->locations[k->location];
	const struct kiln_mapping *m = &p->mappings[l->mapping];
	uint32_t cat = kind_category(kiln_prof_loc_kind(p, k->location));
	int64_t addr = -1;
	long res, fn;
	size_t j;

	if (f->loc_frame[k->location])
		return (long)f->loc_frame[k->location] - 1;
	res = ff_res(f, l->mapping);
	if (res < -1)
		return res;
	/* Library-relative: the file offset, as perf prints it. */
	if (res >= 0 && m->limit > m->start && l->address >= m->start)
		addr = (int64_t)(l->address - m->start + m->offset);
	if (KILN_GROW(f->frames, f->frames_alloc, f->nframes + n, 256))
		return -ENOMEM;
	for (j = 0; j < n; j++) {
		fn = ff_func(f, &k[j], res);
		if (fn < 0)
			return fn;
		f->frames[f->nframes + j] = (struct fframe){
			addr, (int32_t)res, (uint32_t)(n - 1 - j), cat,
			(uint32_t)fn, k[j].line > 0 ? k[j].line : 0 };
	}
	f->loc_frame[k->location] = (uint32_t)f->nframes + 1;
	f->nframes += n;
	return (long)f->nframes - (long)n;
}

struct skey {
	const struct ff *f;
	struct fstack s;
};

static bool skey_eq(const void *ctx, uint32_t id)
{
	const struct skey *k = ctx;
	const struct fstack *s = &k->f->stacks[id - 1];

	return s->frame == k->s.frame && s->prefix == k->s.prefix;
}

static long ff_stack_node(struct ff *f, int32_t prefix, uint32_t frame)
{
	struct skey k = { f, { frame, prefix } };
	uint32_t hash = (uint32_t)kiln_hash(&k.s, sizeof(k.s));
	uint32_t id = kiln_htab_find(&f->stack_index, hash, skey_eq, &k);

	if (id)
		return (long)id - 1;
	if (KILN_GROW(f->stacks, f->stacks_alloc, f->nstacks + 1, 256))
		return -ENOMEM;
	f->stacks[f->nstacks] = k.s;
	if (kiln_htab_insert(&f->stack_index, hash, (uint32_t)f->nstacks + 1))
		return -ENOMEM;
	return (long)f->nstacks++;
}

/* The stack of sample i (its leaf node), -1 for a sample without frames. */
static long ff_stack(struct ff *f, size_t i)
{
	struct kiln_prof *p = f->p;
	long nf, j, first, fr, node = -1;
	size_t n;

	if (f->sample_stack[i])
		return (long)f->sample_stack[i] - 1;
	/* The names it interns ("[libfoo.so]") prepare() interned. */
	nf = kiln_prof_frames(p, &p->samples[i], &f->fr, &f->fr_cap);
	if (nf < 0)
		return nf;
	for (j = nf - 1; j >= 0; j = first - 1) {
		/* The inline frames of one location: frames first..j. */
		for (first = j; first > 0 &&
		     f->fr[first - 1].location == f->fr[j].location; first--)
			;
		n = (size_t)(j - first + 1);
		fr = ff_frames(f, &f->fr[first], n);
		if (fr < 0)
			return fr;
		/* Root first: the outermost (last) frame of the location. */
		for (; n > 0; n--) {
			node = ff_stack_node(f, (int32_t)node, (uint32_t)fr + (uint32_t)n - 1);
			if (node < 0)
				return node;
		}
	}
	f->sample_stack[i] = (int32_t)node + 1;
	return node;
}

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
	return x->sample < y->sample ? -1 : x->sample > y->sample;
}

/* How the chosen type is weighed (samples.weightType) and the weight of a
 * sample in it. */
struct weigh {
	const char *wtype;	/* "samples", "bytes" or "tracing-ms" */
	int type;		/* the chosen type */
	int from;		/* the type a weight is the value of */
	int dur_type;		/* a state interval's length (ns), or -1 */
};

static void weigh_init(const struct kiln_prof *p, int type, struct weigh *w)
{
	const char *tn = kiln_prof_str(p, p->types[type].type);
	const char *unit = kiln_prof_str(p, p->types[type].unit);
	int count_type = -1;
	size_t i;

	w->type = w->from = type;
	w->dur_type = -1;
	for (i = 0; i < p->ntypes; i++) {
		const char *n = kiln_prof_str(p, p->types[i].type);
		const char *u = kiln_prof_str(p, p->types[i].unit);

		if (!strcmp(n, "samples") && !strcmp(u, "count"))
			count_type = (int)i;
		if ((!strcmp(n, "wall") || !strcmp(n, "off-cpu")) &&
		    !strcmp(u, "nanoseconds"))
			w->dur_type = (int)i;
	}
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

static int add_weight(const struct kiln_prof *p, const struct weigh *w,
		      size_t i, struct kiln_buf *out)
{
	int64_t v = kiln_prof_value(p, i, (size_t)w->from);

	if (!strcmp(w->wtype, "tracing-ms"))
		return kiln_buf_addf(out, "%.6f", (double)v / 1e6);
	return kiln_buf_addf(out, "%" PRId64, v);
}

/*
 * Interns what writing will name, so that the tables indexed by string id
 * can be sized once: the base names of mapped files and the names of
 * frames without a function.
 */
static int prepare(struct ff *f, int type)
{
	struct kiln_prof *p = f->p;
	size_t i;

	for (i = 1; i <= p->nmappings; i++)
		if (p->mappings[i].file)
			base_name(p, p->mappings[i].file);
	for (i = 0; i < p->nsamples && !p->err; i++)
		if (kiln_prof_value(p, i, (size_t)type) > 0 &&
		    kiln_prof_frames(p, &p->samples[i], &f->fr, &f->fr_cap) < 0)
			return -ENOMEM;
	if (p->err)
		return p->err;
	f->str_of = calloc(p->nstrs + 1, sizeof(*f->str_of));
	f->name_func = calloc(p->nstrs + 1, sizeof(*f->name_func));
	f->file_res = calloc(p->nstrs + 1, sizeof(*f->file_res));
	f->file_src = calloc(p->nstrs + 1, sizeof(*f->file_src));
	f->fn_func = calloc(p->nfunctions + 1, sizeof(*f->fn_func));
	f->loc_frame = calloc(p->nlocations + 1, sizeof(*f->loc_frame));
	f->sample_stack = calloc(p->nsamples + 1, sizeof(*f->sample_stack));
	if (!f->str_of || !f->name_func || !f->file_res || !f->file_src ||
	    !f->fn_func || !f->loc_frame || !f->sample_stack)
		return -ENOMEM;
	return 0;
}

/* The samples of the chosen type as records, in thread and time order. */
static int collect(struct ff *f, int type, struct frec **out, size_t *nout)
{
	struct kiln_prof *p = f->p;
	uint32_t k_pid = kiln_prof_find_str(p, "pid", 3);
	uint32_t k_tid = kiln_prof_find_str(p, "thread", 6);
	uint32_t k_name = kiln_prof_find_str(p, "thread_name", 11);
	uint32_t k_time = kiln_prof_find_str(p, "time", 4);
	struct frec *r;
	size_t i, n = 0;

	*out = r = calloc(p->nsamples + 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const struct kiln_label *pid, *tid, *name, *tl;
		long t;

		if (kiln_prof_value(p, i, (size_t)type) <= 0)
			continue;
		pid = kiln_prof_label(p, s->labels, k_pid);
		tid = kiln_prof_label(p, s->labels, k_tid);
		name = kiln_prof_label(p, s->labels, k_name);
		tl = kiln_prof_label(p, s->labels, k_time);
		t = ff_thread(f, pid && !pid->str ? pid->num : -1,
			      tid && !tid->str ? tid->num : -1,
			      name ? name->str : 0);
		if (t < 0)
			return (int)t;
		r[n].thread = (uint32_t)t;
		r[n].time = tl && !tl->str && tl->num >= 0 ? tl->num : -1;
		r[n].sample = i;
		n++;
	}
	if (n)
		qsort(r, n, sizeof(*r), cmp_frec);
	*nout = n;
	return 0;
}

/* One thread's columns as they are built. */
struct tcols {
	struct kiln_buf stack, time, weight;
	struct kiln_buf mdata, mname, mstart, mend, mphase, mcat;
	size_t nmarkers;
};

static void tcols_release(struct tcols *c)
{
	kiln_buf_release(&c->stack);
	kiln_buf_release(&c->time);
	kiln_buf_release(&c->weight);
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
	long name = ff_str(f, state);
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
		long stack = ff_stack(f, r[i].sample);
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
			err = add_weight(p, w, r[i].sample, &c->weight);
		st = kiln_prof_label(p, p->samples[r[i].sample].labels, k_state);
		if (!err && st && st->str &&
		    strcmp(kiln_prof_str(p, st->str), "running")) {
			int64_t d = w->dur_type >= 0 ?
				kiln_prof_value(p, r[i].sample, (size_t)w->dur_type) : 0;

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

/*
 * A Linux library's breakpad id from its ELF build id (hex): the first 16
 * bytes as a GUID, its first three fields byte-swapped, then age 0.
 */
static void breakpad_id(const char *hex, char *out, size_t size)
{
	unsigned char b[16] = { 0 };
	static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6,
				       8, 9, 10, 11, 12, 13, 14, 15 };
	size_t i, n = strlen(hex) / 2;
	unsigned int v;

	out[0] = '\0';
	if (!n || size < 34)
		return;
	for (i = 0; i < n && i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return;
		b[i] = (unsigned char)v;
	}
	for (i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02X", b[order[i]]);
	out[32] = '0';
	out[33] = '\0';
}

static int write_libs(struct ff *f, struct kiln_buf *out)
{
	const struct kiln_prof *p = f->p;
	char bp[40];
	size_t i;
	int err = kiln_buf_adds(out, "\"libs\":[");

	for (i = 0; i < f->nres && !err; i++) {
		const struct fres *r = &f->res[i];
		const char *path = kiln_prof_str(p, r->path);
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		const char *build = kiln_prof_str(p, r->build);

		breakpad_id(build, bp, sizeof(bp));
		err = kiln_buf_addf(out, "%s\n{\"arch\":\"\",\"name\":", i ? "," : "");
		if (!err)
			err = kiln_buf_add_json(out, base, strlen(base));
		if (!err)
			err = kiln_buf_adds(out, ",\"path\":");
		if (!err)
			err = kiln_buf_add_json(out, path, strlen(path));
		if (!err)
			err = kiln_buf_adds(out, ",\"debugName\":");
		if (!err)
			err = kiln_buf_add_json(out, base, strlen(base));
		if (!err)
			err = kiln_buf_adds(out, ",\"debugPath\":");
		if (!err)
			err = kiln_buf_add_json(out, path, strlen(path));
		if (!err)
			err = kiln_buf_addf(out, ",\"breakpadId\":\"%s\",\"codeId\":", bp);
		if (!err && *build)
			err = kiln_buf_add_json(out, build, strlen(build));
		else if (!err)
			err = kiln_buf_adds(out, "null");
		if (!err)
			err = kiln_buf_addc(out, '}');
	}
	return err ? err : kiln_buf_adds(out, "],\n");
}

/* An int64 column of a table of n rows; null where it is `none`. */
#define COL(name, n, expr, none) do {					\
	err = err ? err : kiln_buf_adds(out, "\"" name "\":[");		\
	for (i = 0; i < (n) && !err; i++) {				\
		int64_t v_ = (int64_t)(expr);				\
		err = v_ == (none) ?					\
			kiln_buf_adds(out, i ? ",null" : "null") :	\
			kiln_buf_addf(out, "%s%" PRId64, i ? "," : "", v_); \
	}								\
	err = err ? err : kiln_buf_adds(out, "],");			\
} while (0)

/* A column of n copies of text (null, false, ...). */
static int const_col(struct kiln_buf *out, const char *name, size_t n,
		     const char *text)
{
	size_t i;
	int err = kiln_buf_addf(out, "\"%s\":[", name);

	for (i = 0; i < n && !err; i++)
		err = kiln_buf_addf(out, "%s%s", i ? "," : "", text);
	return err ? err : kiln_buf_adds(out, "],");
}

static int write_shared(struct ff *f, struct kiln_buf *out)
{
	size_t i;
	int err = kiln_buf_adds(out, "\"shared\":{\n\"stackTable\":{");

	COL("frame", f->nstacks, f->stacks[i].frame, -2);
	COL("prefixOffset", f->nstacks, f->stacks[i].prefix < 0 ? 0 :
	    (int64_t)i - f->stacks[i].prefix, -2);
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"frameTable\":{",
					f->nstacks);
	COL("address", f->nframes, f->frames[i].addr, -2);
	COL("lib", f->nframes, f->frames[i].lib, -2);
	COL("inlineDepth", f->nframes, f->frames[i].depth, -2);
	COL("category", f->nframes, f->frames[i].cat, -2);
	COL("subcategory", f->nframes, 0, -2);
	COL("func", f->nframes, f->frames[i].func, -2);
	COL("line", f->nframes, f->frames[i].line, 0);
	err = err ? err : const_col(out, "nativeSymbol", f->nframes, "null");
	err = err ? err : const_col(out, "innerWindowID", f->nframes, "null");
	err = err ? err : const_col(out, "column", f->nframes, "null");
	err = err ? err : const_col(out, "originalLocation", f->nframes, "null");
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"funcTable\":{",
					f->nframes);
	COL("name", f->nfuncs, f->funcs[i].name, -2);
	err = err ? err : const_col(out, "isJS", f->nfuncs, "false");
	err = err ? err : const_col(out, "relevantForJS", f->nfuncs, "false");
	COL("resource", f->nfuncs, f->funcs[i].res, -2);
	COL("source", f->nfuncs, f->funcs[i].src, -1);
	COL("lineNumber", f->nfuncs, f->funcs[i].line, 0);
	err = err ? err : const_col(out, "columnNumber", f->nfuncs, "null");
	err = err ? err : const_col(out, "originalLocation", f->nfuncs, "null");
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"resourceTable\":{",
					f->nfuncs);
	COL("name", f->nres, f->res[i].name, -2);
	err = err ? err : const_col(out, "host", f->nres, "null");
	err = err ? err : const_col(out, "type", f->nres, "1");	/* library */
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"nativeSymbols\":"
		"{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],"
		"\"length\":0},\n\"sources\":{", f->nres);
	err = err ? err : const_col(out, "id", f->nsrcs, "null");
	COL("filename", f->nsrcs, f->srcs[i], -2);
	err = err ? err : const_col(out, "startLine", f->nsrcs, "1");
	err = err ? err : const_col(out, "startColumn", f->nsrcs, "1");
	err = err ? err : const_col(out, "sourceMapURL", f->nsrcs, "null");
	err = err ? err : const_col(out, "content", f->nsrcs, "null");
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n"
		"\"sourceLocationTable\":{\"source\":[],\"line\":[],\"column\":[],"
		"\"length\":0},\n\"stringArray\":[", f->nsrcs);
	if (!err && f->strings.len)
		err = kiln_buf_add(out, f->strings.data, f->strings.len);
	return err ? err : kiln_buf_adds(out, "]},\n");
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
	size_t i;
	int err;

	snprintf(product, sizeof(product), "kiln: %s", n);
	err = kiln_buf_addf(out, "{\"meta\":{\"interval\":%.6f,\"startTime\":%.3f,"
			    "\"product\":", interval_ms,
			    p->time_nanos > 0 ? (double)p->time_nanos / 1e6 : 0.0);
	if (!err)
		err = kiln_buf_add_json(out, product, strlen(product));
	for (i = 0; i < p->ncomments && !err; i++) {
		/* The recorded command line. */
		err = kiln_buf_adds(out, ",\"arguments\":");
		if (!err)
			err = kiln_buf_add_json(out, kiln_prof_str(p, p->comments[i]),
						kiln_prof_strlen(p, p->comments[i]));
		break;
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

static void ff_release(struct ff *f)
{
	kiln_buf_release(&f->strings);
	free(f->str_of);
	free(f->fn_func);
	free(f->name_func);
	free(f->file_res);
	free(f->file_src);
	free(f->loc_frame);
	free(f->sample_stack);
	free(f->funcs);
	free(f->res);
	free(f->srcs);
	free(f->frames);
	free(f->stacks);
	kiln_htab_release(&f->stack_index);
	free(f->threads);
	kiln_htab_release(&f->thread_index);
	free(f->fr);
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
	memset(&f, 0, sizeof(f));
	f.p = p;
	kiln_htab_init(&f.stack_index);
	kiln_htab_init(&f.thread_index);
	weigh_init(p, type, &w);
	if (p->period > 0 &&
	    !strcmp(kiln_prof_str(p, p->period_type.unit), "nanoseconds"))
		interval_ms = (double)p->period / 1e6;
	err = prepare(&f, type);
	if (!err)
		err = collect(&f, type, &recs, &nrecs);
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
		err = write_libs(&f, out);
	if (!err)
		err = kiln_buf_adds(out, "\"pages\":[],\n");
	if (!err)
		err = write_counter(&f, out);
	if (!err)
		err = write_shared(&f, out);
	if (!err)
		err = kiln_buf_adds(out, "\"threads\":[");
	if (!err && threads.len)
		err = kiln_buf_add(out, threads.data, threads.len);
	if (!err)
		err = kiln_buf_adds(out, "]}\n");
	free(recs);
	kiln_buf_release(&threads);
	ff_release(&f);
	return err ? err : p->err;
}
