/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which threads really inherited a -p session's events (session stage).
 * See inherit.h.
 */
#include "session/inherit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/perf.h"
#include "session/follow.h"
#include "util/buf.h"
#include "util/htab.h"

/* A record and its marker's: one clone() writes both, microseconds
 * apart. */
#define NEAR_NS 5000000u

/* A thread the session opened: its latest open's numbers. */
struct opened {
	pid_t tid;
	uint32_t seq;		/* the session's open */
	uint32_t mark_seq;	/* the marker's, 0: none */
};

/* A FORK record the marker's copy in a starter wrote. */
struct mark {
	uint64_t time;
	pid_t tid, ptid;
	uint32_t by_tid, by_seq;
};

struct kiln_inherit {
	struct kiln_perf *marker;
	struct opened *opened;
	size_t nopened, opened_alloc;
	struct kiln_htab index;	/* tid -> opened[] (1-based) */
	struct mark *marks;	/* in time order */
	size_t nmarks, marks_alloc;
};

struct kiln_inherit *kiln_inherit_new(pid_t pid)
{
	struct kiln_inherit *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->marker = kiln_follow_tracker(pid);
	if (!h->marker) {
		free(h);
		return NULL;
	}
	kiln_htab_init(&h->index);
	return h;
}

void kiln_inherit_free(struct kiln_inherit *h)
{
	if (!h)
		return;
	kiln_perf_free(h->marker);
	kiln_htab_release(&h->index);
	free(h->opened);
	free(h->marks);
	free(h);
}

struct opened_key {
	const struct kiln_inherit *h;
	pid_t tid;
};

static bool opened_eq(const void *ctx, uint32_t id)
{
	const struct opened_key *k = ctx;

	return k->h->opened[id - 1].tid == k->tid;
}

static uint32_t opened_hash(pid_t tid)
{
	return (uint32_t)kiln_hash(&tid, sizeof(tid));
}

/* Thread tid's entry, NULL: never opened. */
static const struct opened *find_opened(const struct kiln_inherit *h, pid_t tid)
{
	struct opened_key key = { h, tid };
	uint32_t id = kiln_htab_find(&h->index, opened_hash(tid), opened_eq, &key);

	return id ? &h->opened[id - 1] : NULL;
}

/* Thread tid's entry, made if new; NULL: out of memory. */
static struct opened *opened_entry(struct kiln_inherit *h, pid_t tid)
{
	const struct opened *o = find_opened(h, tid);

	if (o)
		return &h->opened[o - h->opened];
	if (KILN_GROW(h->opened, h->opened_alloc, h->nopened + 1, 64) ||
	    kiln_htab_insert(&h->index, opened_hash(tid), (uint32_t)h->nopened + 1))
		return NULL;
	h->opened[h->nopened] = (struct opened){ .tid = tid };
	return &h->opened[h->nopened++];
}

/* Out of descriptors or memory: the session's events matter more. */
static void close_marker(struct kiln_inherit *h)
{
	kiln_perf_free(h->marker);
	h->marker = NULL;
	h->nmarks = 0;
	for (size_t i = 0; i < h->nopened; i++)
		h->opened[i].mark_seq = 0;
}

void kiln_inherit_opened(struct kiln_inherit *h, pid_t tid, uint32_t seq)
{
	struct opened *o;
	int err;

	if (!h || !h->marker)
		return;
	o = opened_entry(h, tid);
	if (!o) {
		close_marker(h);
		return;
	}
	o->seq = seq;
	o->mark_seq = 0;
	err = kiln_perf_open(h->marker, tid, true);
	if (!err)
		o->mark_seq = kiln_perf_open_seq(h->marker);
	else if (err == -EMFILE || err == -ENFILE || err == -ENOMEM)
		close_marker(h);
}

void kiln_inherit_start(struct kiln_inherit *h)
{
	if (h && h->marker)
		kiln_perf_start_reader(h->marker);	/* else read at drains */
}

/* The marker's FORK records written by inherited copies (those of its
 * own opens say nothing). */
static void on_mark(void *ctx, const struct kiln_perf_event *ev)
{
	struct kiln_inherit *h = ctx;

	if (ev->kind != KILN_PERF_FORK || !ev->task.by_tid ||
	    ev->task.by_tid == ev->task.ptid ||
	    KILN_GROW(h->marks, h->marks_alloc, h->nmarks + 1, 64))
		return;
	h->marks[h->nmarks++] = (struct mark){
		ev->time, (pid_t)ev->task.tid, (pid_t)ev->task.ptid,
		ev->task.by_tid, ev->task.by_seq };
}

static int cmp_mark(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

void kiln_inherit_read(struct kiln_inherit *h, uint64_t horizon)
{
	size_t old = 0;

	if (!h || !h->marker)
		return;
	kiln_perf_drain(h->marker, on_mark, h);
	if (h->nmarks > 1)
		qsort(h->marks, h->nmarks, sizeof(*h->marks), cmp_mark);
	while (old < h->nmarks && h->marks[old].time + 1000000000u < horizon)
		old++;
	if (old) {
		memmove(h->marks, h->marks + old, (h->nmarks - old) * sizeof(*h->marks));
		h->nmarks -= old;
	}
}

enum kiln_inherit_verdict kiln_inherit_judge(const struct kiln_inherit *h,
					     uint64_t time, pid_t tid, pid_t ptid,
					     uint32_t by_tid, uint32_t by_seq)
{
	uint64_t from = time > NEAR_NS ? time - NEAR_NS : 0;
	size_t lo = 0, hi;
	const struct opened *o;

	/* Written by the events the session opened on the starter itself:
	 * nothing to judge (its own are whole). */
	if (!h || !h->marker || !by_tid || (pid_t)by_tid == ptid)
		return KILN_INHERIT_UNKNOWN;
	o = find_opened(h, (pid_t)by_tid);
	if (!o || o->seq != by_seq || !o->mark_seq)
		return KILN_INHERIT_UNKNOWN;
	hi = h->nmarks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->marks[mid].time < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < h->nmarks && h->marks[lo].time <= time + NEAR_NS; lo++) {
		const struct mark *m = &h->marks[lo];

		if (m->tid == tid && m->ptid == ptid && m->by_tid == by_tid &&
		    m->by_seq == o->mark_seq)
			return KILN_INHERIT_WHOLE;
	}
	return KILN_INHERIT_PART;
}
