/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stack chart of kiln serve's API (web stage): /api/stackchart, one
 * thread's samples in time order (speedscope's Time Order, Firefox's
 * Stack Chart).  The page never gets the samples themselves: for the
 * visible time window it gets the runs of identical stacks (a run =
 * consecutive samples of the thread with the same stack) merged at the
 * resolution of the window's pixels, their stacks as frame ids into one
 * frame table.  Zooming asks again for the narrower window, down to one
 * sample.
 *
 * The selection's timed samples are put in (thread, time) order once per
 * view (timed.c; struct web_timed, kept in the view): a request then
 * costs a binary search and a pass over the samples of its window.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "render/flame.h"
#include "util/buf.h"
#include "util/htab.h"
#include "web/call.h"
#include "web/timed.h"

#define SC_WIDTH_DEFAULT 1200

/* ---- the runs of one window ---- */

/* Output ids of stacks and frames, each once, in first-use order. */
struct sc_ids {
	struct kiln_htab stacks;	/* hash of a stack's first sample -> id */
	uint64_t *stack_key;		/* [id - 1] */
	size_t nstacks, stacks_alloc;
	struct kiln_htab frames;	/* hash of name -> id */
	uint32_t *frame_name;		/* [id - 1] */
	uint32_t *frame_rgb;
	size_t nframes, frames_alloc, rgb_alloc;
	struct kiln_buf stack_json;	/* "[f,f,...],[...]" */
	struct kiln_frame *fr;
	size_t fcap;
};

struct key_ctx {
	const uint64_t *keys;
	uint64_t key;
};

static bool key_eq(const void *ctx, uint32_t id)
{
	const struct key_ctx *k = ctx;

	return k->keys[id - 1] == k->key;
}

struct name_ctx {
	const uint32_t *names;
	uint32_t name;
};

static bool name_eq(const void *ctx, uint32_t id)
{
	const struct name_ctx *k = ctx;

	return k->names[id - 1] == k->name;
}

/* The frame id (from 0) of frame f, added with its colour if new; -1
 * when out of memory. */
static long frame_id(struct kiln_prof *p, struct sc_ids *ids,
		     const struct kiln_frame *f)
{
	struct name_ctx k = { ids->frame_name, f->name };
	uint32_t h = (uint32_t)kiln_hash(&f->name, sizeof(f->name));
	uint32_t id = kiln_htab_find(&ids->frames, h, name_eq, &k);

	if (id)
		return (long)id - 1;
	if (kiln_array_grow((void **)&ids->frame_name, &ids->frames_alloc,
			    ids->nframes + 1, sizeof(*ids->frame_name)) ||
	    kiln_array_grow((void **)&ids->frame_rgb, &ids->rgb_alloc,
			    ids->nframes + 1, sizeof(*ids->frame_rgb)))
		return -1;
	ids->frame_name[ids->nframes] = f->name;
	ids->frame_rgb[ids->nframes] = kiln_flame_node_rgb(p,
		kiln_prof_str(p, f->name), kiln_prof_strlen(p, f->name),
		kiln_prof_loc_kind(p, f->location));
	ids->nframes++;
	if (kiln_htab_insert(&ids->frames, h, (uint32_t)ids->nframes))
		return -1;
	return (long)ids->nframes - 1;
}

/* The stack id (from 0) of sample i's stack (i is the first sample with
 * that stack: canon_stacks()), its frames (root first) written to
 * stack_json if new; -1 when out of memory. */
static long stack_id(struct kiln_prof *p, struct sc_ids *ids, uint32_t i)
{
	const struct kiln_sample *s = &p->samples[i];
	uint64_t key = i;
	struct key_ctx k = { ids->stack_key, key };
	uint32_t h = (uint32_t)kiln_hash(&key, sizeof(key));
	uint32_t id = kiln_htab_find(&ids->stacks, h, key_eq, &k);
	long nf, f;
	int err;

	if (id)
		return (long)id - 1;
	nf = kiln_prof_frames(p, s, &ids->fr, &ids->fcap);
	if (nf < 0)
		return -1;
	err = kiln_buf_adds(&ids->stack_json, ids->nstacks ? ",[" : "[");
	for (f = nf - 1; f >= 0 && !err; f--) {
		long fid = frame_id(p, ids, &ids->fr[f]);

		if (fid < 0)
			return -1;
		err = kiln_buf_addf(&ids->stack_json, "%s%ld",
				    f == nf - 1 ? "" : ",", fid);
	}
	if (err || kiln_buf_addc(&ids->stack_json, ']') ||
	    kiln_array_grow((void **)&ids->stack_key, &ids->stacks_alloc,
			    ids->nstacks + 1, sizeof(*ids->stack_key)))
		return -1;
	ids->stack_key[ids->nstacks++] = key;
	if (kiln_htab_insert(&ids->stacks, h, (uint32_t)ids->nstacks))
		return -1;
	return (long)ids->nstacks - 1;
}

static void ids_release(struct sc_ids *ids)
{
	kiln_htab_release(&ids->stacks);
	kiln_htab_release(&ids->frames);
	free(ids->stack_key);
	free(ids->frame_name);
	free(ids->frame_rgb);
	kiln_buf_release(&ids->stack_json);
	free(ids->fr);
}

/* A run being built: [t0, t1) of stack `stack` (a sample index: its
 * output id is made when written), its samples' value and count. */
struct run {
	int64_t t0, t1, value;
	uint32_t stack;
	size_t n;
	bool on;
};


/* The writer of runs: merges a run into the last one when it has the
 * same stack and touches it, else writes the last one out. */
struct runs_out {
	struct call *c;
	struct kiln_prof *p;
	struct sc_ids *ids;
	struct run last;
	size_t count;
};

static void flush(struct runs_out *o)
{
	long id;

	if (!o->last.on)
		return;
	id = stack_id(o->p, o->ids, o->last.stack);
	if (id < 0) {
		o->c->err = -ENOMEM;
		return;
	}
	call_add(o->c, "%s[%" PRId64 ",%" PRId64 ",%ld,%" PRId64 ",%zu]",
	    o->count++ ? "," : "", o->last.t0, o->last.t1, id, o->last.value,
	    o->last.n);
	o->last.on = false;
}

static void put(struct runs_out *o, const struct run *r)
{
	if (o->last.on && o->last.stack == r->stack &&
	    r->t0 <= o->last.t1) {
		o->last.t1 = r->t1 > o->last.t1 ? r->t1 : o->last.t1;
		o->last.value += r->value;
		o->last.n += r->n;
		return;
	}
	flush(o);
	o->last = *r;
	o->last.on = true;
}

/*
 * Writes the runs of thread th's samples that overlap [from, to) at
 * `px` nanoseconds a pixel.  The samples of one time (one millisecond)
 * share it in proportion to their values; a time lasts until the next
 * one, one step at most.  Runs at least a pixel wide go out as they are;
 * of those narrower, each pixel column keeps the longest, stretched over
 * what the column's runs covered, so that at most one run per pixel is
 * sent and a gap stays a gap.
 */
static void emit_runs(struct runs_out *o, const struct web_timed *tm,
		      const struct timed_thread *th, int type, int64_t from,
		      int64_t to, double px, size_t *in_window)
{
	const struct timed_sample *s = tm->s + th->first;
	size_t lo = 0, hi = th->n, i, j;
	struct run col = { 0 };
	int64_t col_px = -1, col_t0 = 0, col_t1 = 0, col_len = 0, col_value = 0;
	size_t col_n = 0;

	/* The first time that may reach into the window. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].t + tm->step <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	*in_window = 0;
	for (i = lo; i < th->n && s[i].t < to && !o->c->err; i = j) {
		int64_t t = s[i].t, end = t + tm->step, sum = 0, at;

		for (j = i; j < th->n && s[j].t == t; j++)
			sum += s[j].v;
		if (j < th->n && s[j].t < end)
			end = s[j].t;
		at = t;
		for (size_t k = i; k < j; k++) {
			int64_t v = s[k].v;
			int64_t len = sum ? (int64_t)((double)(end - t) * v / sum) : 0;
			struct run r = { at, k + 1 == j ? end : at + len, v,
					 s[k].stack, 1, true };
			int64_t p0;

			at = r.t1;
			if (r.t1 <= from || r.t0 >= to)
				continue;
			(*in_window)++;
			if ((double)(r.t1 - r.t0) >= px) {
				if (col.on) {
					put(o, &col);
					col.on = false;
				}
				put(o, &r);
				continue;
			}
			p0 = (int64_t)((double)(r.t0 - from) / px);
			if (col.on && p0 != col_px) {
				put(o, &col);
				col.on = false;
			}
			if (!col.on) {
				col_px = p0;
				col_t0 = r.t0;
				col_len = 0;
				col_value = 0;
				col_n = 0;
			}
			col_t1 = r.t1;
			col_value += r.value;
			col_n++;
			if (r.t1 - r.t0 > col_len) {
				col_len = r.t1 - r.t0;
				col = r;
			}
			/* The longest run's stack over the column's samples. */
			col.t0 = col_t0;
			col.t1 = col_t1;
			col.value = col_value;
			col.n = col_n;
		}
	}
	if (col.on)
		put(o, &col);
	flush(o);
}

/* The view's timed samples for its type, ordered on first use. */
static int view_timed(struct web_view *v, struct web_timed **out)
{
	int err;

	if (v->timed && v->timed->type == v->type) {
		*out = v->timed;
		return 0;
	}
	kiln_web_timed_free(v->timed);
	v->timed = NULL;
	err = kiln_web_timed_build(v->prof, v->type, &v->timed);
	*out = v->timed;
	return err;
}

int web_stackchart_threads(struct call *c, int64_t (*ids)[2], size_t max,
			   size_t *n)
{
	struct web_timed *tm;
	struct web_view *v;
	size_t i;
	int err;

	*n = 0;
	if (call_selection(c, &v))
		return c->status;
	err = view_timed(v, &tm);
	if (err) {
		c->err = err;
		return 500;
	}
	for (i = 0; i < tm->nth && i < max; i++) {
		ids[i][0] = tm->th[i].pid;
		ids[i][1] = tm->th[i].tid;
	}
	*n = i;
	return 200;
}

/* A whole-number argument (pid, tid: -1 when the samples do not say);
 * def when absent.  -1 when bad (the 400 answer is made). */
static int id_arg(struct call *c, const char *key, int64_t def, int64_t *out)
{
	const char *s = call_arg(c, key);
	char *end;
	long long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end) {
		call_fail(c, 400, "bad %s '%s': want a number", key, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* The thread the request names (pid, tid; absent: the busiest), or
 * NULL (the 400 or 404 answer is made). */
static const struct timed_thread *pick_thread(struct call *c,
					      const struct web_timed *tm)
{
	int64_t pid, tid;
	size_t i;

	if (!tm->nth) {
		call_fail(c, 404, "no sample of this selection has a time: "
			  "the stack chart needs times (kiln record keeps them)");
		return NULL;
	}
	if (id_arg(c, "pid", tm->th[0].pid, &pid) ||
	    id_arg(c, "tid", tm->th[0].tid, &tid))
		return NULL;
	for (i = 0; i < tm->nth; i++)
		if (tm->th[i].pid == pid && tm->th[i].tid == tid)
			return &tm->th[i];
	call_fail(c, 404, "no thread %" PRId64 " (pid %" PRId64 ") in this "
		  "selection", tid, pid);
	return NULL;
}

/* A time argument (ns, at least 0); def when absent.  -1 when bad. */
static int time_arg(struct call *c, const char *key, int64_t def,
		    int64_t *out)
{
	const char *s = call_arg(c, key);
	char *end;
	long long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < 0) {
		call_fail(c, 400, "bad %s '%s': want nanoseconds since the "
			  "recording's start", key, s);
		return -1;
	}
	*out = v;
	return 0;
}

int web_api_stackchart(struct call *c)
{
	struct sc_ids ids = { 0 };
	struct runs_out o = { c, NULL, &ids, { 0 }, 0 };
	const struct timed_thread *th;
	struct web_timed *tm;
	struct web_view *v;
	struct web_names nm = { 0 };
	int64_t from, to;
	size_t i, in_window = 0;
	long width, nth;
	int err;

	if (call_num_arg(c, "width", 1, WEB_WIDTH_MAX, SC_WIDTH_DEFAULT, &width) ||
	    call_num_arg(c, "threads", 0, 10000, 64, &nth) ||
	    call_selection(c, &v))
		return c->status;
	err = view_timed(v, &tm);
	if (err) {
		c->err = err;
		return 500;
	}
	th = pick_thread(c, tm);
	if (!th)
		return c->status;
	if (time_arg(c, "from", 0, &from) || time_arg(c, "to", tm->end, &to))
		return c->status;
	if (to <= from)
		return call_fail(c, 400, "bad window: from %" PRId64 " is not "
				 "before to %" PRId64, from, to);
	o.p = v->prof;
	call_add(c, "{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"end\":%" PRId64 ",\"from\":%" PRId64 ",\"to\":%" PRId64
	    ",\"width\":%ld,\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"name\":",
	    tm->end, from, to, width, th->pid, th->tid);
	call_add_str(c, th->name ? kiln_prof_str(v->prof, th->name) : "");
	call_add(c, ",\"nthreads\":%zu,\"threads\":[", tm->nth);
	for (i = 0; i < tm->nth && i < (size_t)nth; i++)
		call_add(c, "%s[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
		    i ? "," : "", tm->th[i].pid, tm->th[i].tid,
		    tm->th[i].name ? (int64_t)web_name_ref(c, &nm, v->prof,
							   tm->th[i].name) : -1,
		    tm->th[i].total);
	call_add(c, "],\"runs\":[");
	emit_runs(&o, tm, th, v->type, from, to, (double)(to - from) / (double)width,
		  &in_window);
	call_add(c, "],\"samples\":%zu,\"stacks\":[%s],\"frames\":[", in_window,
	    ids.stack_json.data ? ids.stack_json.data : "");
	for (i = 0; i < ids.nframes; i++)
		call_add(c, "%s[%u,%" PRIu32 "]", i ? "," : "",
		    web_name_ref(c, &nm, v->prof, ids.frame_name[i]), ids.frame_rgb[i]);
	call_add(c, "],");
	web_names_write(c, &nm, v->prof);
	call_add(c, "}\n");
	ids_release(&ids);
	free(nm.idx);
	return c->err ? 500 : 200;
}
