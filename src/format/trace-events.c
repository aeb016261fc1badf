/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chrome's trace events without a CPU profile (format stage): the
 * duration events of a Catapult / chrome://tracing / Perfetto JSON trace
 * or of clang's -ftime-trace, read as speedscope reads them (its
 * "evented" import of jlfwong/speedscope src/import/chrome.ts): per
 * thread, "B" (begin) and "E" (end) events and "X" (complete) events
 * with a "dur" nest into stacks, and each stack weighs the time nothing
 * nested in it ran (its self time).
 *
 * Sample types: events/count (each begin counts one for its stack, so a
 * function's flat events are how often it ran) and wall/nanoseconds
 * (self time).  Labels: pid, thread and the thread's name (from the
 * "thread_name" metadata events).  Time stamps are microseconds.
 *
 * Lenient as speedscope is: an "E" that closes a frame below the top
 * closes the frames above it too; an "E" with no open frame of its name
 * is left out, and so are frames still open at the thread's last event
 * (closed there); both are counted in one warning.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/jsonread.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

/* One begin or end of a duration, in the order they are walked. */
struct edge {
	int64_t pid, tid;
	int64_t ts;		/* ns */
	int64_t other;		/* the end of a begin (INT64_MAX if unknown),
				 * the begin of an end (INT64_MIN if unknown) */
	size_t seq;		/* the event's index: ties keep file order */
	const char *name;
	bool begin;
};

struct tframe {
	uint32_t loc;
	const char *name;
};

/* A thread's name from its metadata event. */
struct tname {
	int64_t pid, tid;
	const char *name;
};

struct treader {
	struct kiln_prof *p;
	struct tname *names;
	size_t nnames, names_alloc;
	const json_t *events;
	struct edge *e;
	size_t n, alloc;
	struct tframe *st;	/* open frames, root first */
	uint32_t *locs;		/* the same, leaf first, for the model */
	size_t depth, st_alloc;
	size_t bad_ends, unclosed;
	uint32_t k_pid, k_thread, k_name;
};

/* Microseconds (a number) to ns; false if absent or not finite. */
static bool ts_ns(const json_t *j, int64_t *ns)
{
	double v;

	if (!json_is_number(j))
		return false;
	v = json_number_value(j) * 1000.0;
	if (!isfinite(v) || fabs(v) > 9e18)
		return false;
	*ns = llround(v);
	return true;
}

static int64_t inum(const json_t *obj, const char *key)
{
	int64_t v;

	return kiln_json_int(json_object_get(obj, key), &v) ? v : 0;
}

static int add_edge(struct treader *r, const json_t *ev, size_t seq,
		    int64_t ts, int64_t other, bool begin)
{
	struct edge *x;

	if (KILN_GROW(r->e, r->alloc, r->n + 1, 1024))
		return -ENOMEM;
	x = &r->e[r->n++];
	x->pid = inum(ev, "pid");
	x->tid = inum(ev, "tid");
	x->ts = ts;
	x->other = other;
	x->seq = seq;
	x->name = kiln_json_str(ev, "name", "(unnamed)");
	x->begin = begin;
	return 0;
}

/*
 * Where an edge goes among those of its time: ends of frames begun
 * earlier, then begins, then ends of frames begun at this very time
 * (zero-length ones), so that nothing ends before it began.
 */
static int rank(const struct edge *x)
{
	return x->begin ? 1 : x->other == x->ts ? 2 : 0;
}

/*
 * Thread, then time, then rank; among begins the later end first (the
 * outer of two that start together), among ends the later begin first
 * (the inner of two that end together), zero-length ends the last begun
 * first; else the file's order.
 */
static int cmp_edge(const void *pa, const void *pb)
{
	const struct edge *a = pa, *b = pb;
	int ra = rank(a), rb = rank(b);

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (ra == 2)
		return a->seq > b->seq ? -1 : a->seq < b->seq;
	if (a->other != b->other)
		return a->other > b->other ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Gathers the B, E and X events; -EINVAL (d filled) for a bad one. */
static int gather(struct treader *r, struct kiln_diag *d)
{
	size_t i, n = json_array_size(r->events);
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		const json_t *ev = json_array_get(r->events, i);
		const char *ph = kiln_json_str(ev, "ph", "");
		int64_t ts, dur;

		if (!strcmp(kiln_json_str(ev, "name", ""), "thread_name") &&
		    !strcmp(ph, "M")) {
			struct tname *t;

			if (KILN_GROW(r->names, r->names_alloc, r->nnames + 1, 16))
				return -ENOMEM;
			t = &r->names[r->nnames++];
			t->pid = inum(ev, "pid");
			t->tid = inum(ev, "tid");
			t->name = kiln_json_str(json_object_get(ev, "args"),
						"name", NULL);
			continue;
		}
		if (strcmp(ph, "B") && strcmp(ph, "E") && strcmp(ph, "X"))
			continue;
		if (!ts_ns(json_object_get(ev, "ts"), &ts))
			return kiln_diag(d, "trace event %zu: no time stamp "
					 "(\"ts\")", i);
		if (*ph == 'X') {
			if (!ts_ns(json_object_get(ev, "dur"), &dur) || dur < 0 ||
			    __builtin_add_overflow(ts, dur, &dur))
				return kiln_diag(d, "trace event %zu: a complete "
						 "(\"X\") event without a valid "
						 "\"dur\"", i);
			err = add_edge(r, ev, i, ts, dur, true);
			if (!err)
				err = add_edge(r, ev, i, dur, ts, false);
		} else {
			err = add_edge(r, ev, i, ts,
				       *ph == 'B' ? INT64_MAX : INT64_MIN,
				       *ph == 'B');
		}
	}
	return err;
}

/* Charges ns of self time (and calls) to the open stack. */
static int charge(struct treader *r, uint32_t lset, int64_t calls,
		  int64_t ns)
{
	int64_t v[2] = { calls, ns };
	size_t i;

	if (!r->depth || (!calls && ns <= 0))
		return 0;
	for (i = 0; i < r->depth; i++)
		r->locs[i] = r->st[r->depth - 1 - i].loc;
	kiln_prof_add_sample(r->p, r->locs, (uint32_t)r->depth, v, lset);
	return r->p->err;
}

static uint32_t frame_loc(struct kiln_prof *p, const char *name)
{
	struct kiln_line ln;

	memset(&ln, 0, sizeof(ln));
	ln.function = kiln_prof_function(p, kiln_prof_interns(p, name), 0, 0,
					 0);
	return kiln_prof_location(p, 0, 0, &ln, 1);
}

/* The label set of the thread of edge x. */
static uint32_t thread_lset(struct treader *r, const struct edge *x)
{
	const char *tname = NULL;
	struct kiln_label l[3];
	size_t i;

	for (i = 0; i < r->nnames && !tname; i++)
		if (r->names[i].pid == x->pid && r->names[i].tid == x->tid)
			tname = r->names[i].name;
	memset(l, 0, sizeof(l));
	l[0].key = r->k_pid;
	l[0].num = x->pid;
	l[1].key = r->k_thread;
	l[1].num = x->tid;
	l[2].key = r->k_name;
	l[2].str = tname ? kiln_prof_interns(r->p, tname) : 0;
	return kiln_prof_labelset(r->p, l, tname ? 3 : 2);
}

/* Walks one thread's edges [a, b). */
static int walk_thread(struct treader *r, size_t a, size_t b)
{
	uint32_t lset = thread_lset(r, &r->e[a]);
	int64_t last = r->e[a].ts;
	size_t i, k;
	int err = 0;

	r->depth = 0;
	for (i = a; i < b && !err; i++) {
		const struct edge *x = &r->e[i];

		err = charge(r, lset, 0, x->ts - last);
		last = x->ts;
		if (err)
			break;
		if (x->begin) {
			if (KILN_GROW(r->st, r->st_alloc, r->depth + 1, 64) ||
			    !(r->locs = realloc(r->locs, r->st_alloc *
						sizeof(*r->locs))))
				return -ENOMEM;
			r->st[r->depth].name = x->name;
			r->st[r->depth].loc = frame_loc(r->p, x->name);
			if (!r->st[r->depth].loc)
				return r->p->err ? r->p->err : -ENOMEM;
			r->depth++;
			err = charge(r, lset, 1, 0);
			continue;
		}
		/* An end closes the innermost open frame of its name. */
		for (k = r->depth; k > 0; k--)
			if (!strcmp(r->st[k - 1].name, x->name))
				break;
		if (!k)
			r->bad_ends++;
		else
			r->depth = k - 1;
	}
	r->unclosed += r->depth;
	return err;
}

int kiln_trace_events_read(struct kiln_prof *p, const json_t *events,
			   struct kiln_diag *d)
{
	static const char *const types[] = { "events/count",
					     "wall/nanoseconds" };
	struct treader r;
	size_t a, b;
	int err;

	memset(&r, 0, sizeof(r));
	r.p = p;
	r.events = events;
	err = gather(&r, d);
	if (err)
		goto out;
	if (!r.n) {
		err = kiln_diag(d, "no CPU profile and no duration events in the "
				"trace events (no Profile, ProfileChunk or "
				"CpuProfile event, and no \"B\", \"E\" or \"X\" "
				"one: was the JavaScript profiler on?)");
		goto out;
	}
	err = kiln_prof_set_types_str(p, types, 2);
	if (err)
		goto out;
	p->period_type = p->types[1];
	r.k_pid = kiln_prof_interns(p, "pid");
	r.k_thread = kiln_prof_interns(p, "thread");
	r.k_name = kiln_prof_interns(p, "thread_name");
	qsort(r.e, r.n, sizeof(*r.e), cmp_edge);
	for (a = 0; a < r.n && !err; a = b) {
		for (b = a + 1; b < r.n && r.e[b].pid == r.e[a].pid &&
				r.e[b].tid == r.e[a].tid; b++)
			;
		err = walk_thread(&r, a, b);
	}
	if (!err && (r.bad_ends || r.unclosed))
		kiln_diag_warn(d, "%zu end event%s closing no open duration, %zu "
			       "duration%s never ended (closed at the thread's "
			       "last event)", r.bad_ends,
			       r.bad_ends == 1 ? "" : "s", r.unclosed,
			       r.unclosed == 1 ? "" : "s");
out:
	free(r.e);
	free(r.names);
	free(r.st);
	free(r.locs);
	return err ? err : p->err;
}
