/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocation list of a kiln heap trace (format stage), for kiln
 * serve's heap views: which blocks pass a set of filters (allocated in a
 * time range, live at a moment, lifetime, size, site), one page of them
 * in allocation order, how many pass and their sizes by class.
 *
 * Only the part of the trace that decides the filters is read, from the
 * time index (heaptrace-index.c): from its last mark before the earliest
 * moment a passing block can have been live (alive_at, or t0), whose
 * live blocks (with their allocation times) are the first candidates,
 * up to the horizon: alive_at (or else t1) plus the largest lifetime
 * bound.
 * A candidate still live at the horizon has lived longer than any bound,
 * so nothing after it can change the answer.  The analysis resumes at
 * the mark (its live blocks); after that each event read goes through
 * the reader's tap to the list, not to the analysis.  Where the
 * allocation decides every filter (scan.at_alloc) only the page's blocks
 * are followed to their frees.
 *
 * Memory: the candidates still live (as many as the live blocks at
 * most; the page's only, scan.at_alloc) and the page so far, a max-heap
 * of the offset + n earliest passing blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/heaptrace.h"
#include "format/heaptraceint.h"
#include "profile/hprof.h"
#include "util/diag.h"
#include "util/livetab.h"

#define NONE UINT64_MAX

/* Events read ahead of the one applied (a power of 2): about one miss
 * to memory's latency of work. */
#define AHEAD 8

/* A block that may pass, until its free or the horizon decides it. */
struct cand {
	uint64_t ptr;		/* the reader's block id */
	uint64_t t, size;	/* ns after the first event; counted at its
				 * allocation (scan.at_alloc): t is the
				 * block's free, NONE until seen */
	uint32_t stack, tid;
};

/* A block of the page, with its id to order blocks of equal times. */
struct item {
	struct kiln_heaptrace_alloc a;
	uint64_t id;
};

struct scan {
	const struct kiln_heaptrace_allocq *q;
	struct kiln_heaptrace_allocs *out;
	uint64_t horizon;	/* events after it are not read */
	uint64_t last;		/* the last event read, ns */
	bool past;		/* an event after the horizon was seen */
	struct kiln_livetab cands;	/* of struct cand */
	struct item *heap;	/* max-heap of the page's k earliest */
	size_t nheap, k;
	/* Every filter is decided when a block is allocated (no lifetime
	 * bound, no moment it must be live at): blocks are counted then, and
	 * only those of the page are followed to their free (cands holds
	 * those, at most k). */
	bool at_alloc;
	uint64_t top_id;	/* no candidate's id is above it */
	/* Events read and not yet applied, their candidate's slot asked of
	 * the cache when they came: a free of a block no longer in the
	 * cache waits for memory otherwise (most of a long list's time). */
	struct kiln_hprof_ev ahead[AHEAD];
	size_t nahead, head;
};

void kiln_heaptrace_allocs_release(struct kiln_heaptrace_allocs *a)
{
	free(a->a);
	memset(a, 0, sizeof(*a));
}

static bool later(const struct item *x, const struct item *y)
{
	return x->a.t != y->a.t ? x->a.t > y->a.t : x->id > y->id;
}

static void sift_down(struct item *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct item tmp;

		if (l < n && later(&h[l], &h[m]))
			m = l;
		if (r < n && later(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

/* Keeps it among the page's k earliest blocks: false when it is not one
 * of them; *gone is the block whose place it took (0: none). */
static bool page_add(struct scan *sc, const struct item *it, uint64_t *gone)
{
	size_t i;

	*gone = 0;
	if (!sc->k)
		return false;
	if (sc->nheap == sc->k) {
		if (!later(&sc->heap[0], it))
			return false;
		*gone = sc->heap[0].id;
		sc->heap[0] = *it;
		sift_down(sc->heap, sc->nheap, 0);
		return true;
	}
	i = sc->nheap++;
	sc->heap[i] = *it;
	while (i && later(&sc->heap[i], &sc->heap[(i - 1) / 2])) {
		struct item tmp = sc->heap[i];

		sc->heap[i] = sc->heap[(i - 1) / 2];
		sc->heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
	return true;
}

/* A block of `size` bytes that passes, counted. */
static void count(struct scan *sc, uint64_t size)
{
	struct kiln_heaptrace_allocs *o = sc->out;
	unsigned k = kiln_hprof_size_class(size);

	o->count++;
	o->bytes += (double)size;
	o->size_calls[k]++;
	o->size_bytes[k] += size;
}

/* Candidate c is decided: freed at `freed` (NONE: not by the last event
 * read).  Counts it and keeps it for the page when it passes. */
static void decide(struct scan *sc, const struct cand *c, uint64_t freed)
{
	const struct kiln_heaptrace_allocq *q = sc->q;
	uint64_t life, gone;
	struct item it;

	if (q->alive && freed != NONE && freed <= q->alive_at)
		return;
	if (freed != NONE)
		life = freed - c->t;
	else if (!sc->past)
		life = sc->last - c->t;	/* live at the trace's end */
	else
		life = NONE;		/* longer than any bound */
	if (life < q->life_min || life > q->life_max)
		return;
	count(sc, c->size);
	it.a.t = c->t;
	it.a.freed = freed;
	it.a.size = c->size;
	it.a.stack = c->stack;
	it.a.tid = c->tid;
	it.id = c->ptr;
	page_add(sc, &it, &gone);
}

/* Block id, which passes (scan.at_alloc): counted, and followed to its
 * free while it is one of the page's. */
static int admit_counted(struct scan *sc, uint64_t id, uint64_t t,
			 uint64_t size, uint32_t stack, uint32_t tid)
{
	struct item it = { { t, NONE, size, stack, tid }, id };
	uint64_t gone;
	struct cand *c;
	int err;

	count(sc, size);
	if (!page_add(sc, &it, &gone))
		return 0;
	if (gone && (c = kiln_livetab_find(&sc->cands, gone)))
		kiln_livetab_remove(&sc->cands, c);
	err = kiln_livetab_reserve(&sc->cands);
	if (err)
		return err;
	c = kiln_livetab_put(&sc->cands, id);
	c->t = NONE;
	if (id > sc->top_id)
		sc->top_id = id;
	return 0;
}

/* A block allocated at t (ns after the first event): a candidate when
 * the filters that its allocation decides pass. */
static int admit(struct scan *sc, uint64_t id, uint64_t t, uint64_t size,
		 uint32_t stack, uint32_t tid)
{
	const struct kiln_heaptrace_allocq *q = sc->q;
	struct cand *c;
	int err;

	if (!id || t < q->t0 || t >= q->t1 || (q->alive && t > q->alive_at) ||
	    size < q->size_min || size > q->size_max ||
	    (q->site && stack != q->site))
		return 0;
	if (sc->at_alloc)
		return admit_counted(sc, id, t, size, stack, tid);
	err = kiln_livetab_reserve(&sc->cands);
	if (err)
		return err;
	c = kiln_livetab_put(&sc->cands, id);
	c->t = t;
	if (id > sc->top_id)
		sc->top_id = id;
	c->size = size;
	c->stack = stack;
	c->tid = tid;
	return 0;
}

static int freed(struct scan *sc, uint64_t id, uint64_t t)
{
	struct cand *c;

	/* At most k are followed (scan.at_alloc): most frees are of others. */
	if (!id || id > sc->top_id)
		return 0;
	c = kiln_livetab_find(&sc->cands, id);
	if (c && sc->at_alloc)
		c->t = t;
	else if (c) {
		decide(sc, c, t);
		kiln_livetab_remove(&sc->cands, c);
	}
	return 0;
}

/* Event ev, at t ns after the first event, applied. */
static int apply(struct scan *sc, const struct kiln_hprof_ev *ev, uint64_t t)
{
	int err;

	sc->last = t;
	switch (ev->kind) {
	case KILN_HPROF_ALLOC:
	case KILN_HPROF_MMAP:
		/* A block handed out again without a free we saw. */
		err = freed(sc, ev->ptr, t);
		return err ? err : admit(sc, ev->ptr, t, ev->size, ev->stack, ev->tid);
	case KILN_HPROF_FREE:
	case KILN_HPROF_MUNMAP:
		return freed(sc, ev->ptr, t);
	case KILN_HPROF_END:
		break;
	}
	return 0;
}

/* Applies the events read ahead, all of them or all but AHEAD - 1. */
static int drain(struct scan *sc, bool all)
{
	int err = 0;

	while (sc->nahead && (all || sc->nahead == AHEAD) && !err) {
		err = apply(sc, &sc->ahead[sc->head], sc->ahead[sc->head].t);
		sc->head = (sc->head + 1) % AHEAD;
		sc->nahead--;
	}
	return err;
}

static int tap(void *arg, const struct kiln_hprof_ev *ev, uint64_t t_first)
{
	struct scan *sc = arg;
	uint64_t t = ev->t - t_first;
	int err = drain(sc, false);

	if (err)
		return err;
	if (t > sc->horizon) {
		sc->past = true;
		return 0;
	}
	/* A small table: no need to look ahead.  (ev is not copied: the
	 * reader has just stored it field by field, and a wider load of it
	 * would wait for those stores to reach the cache.) */
	if (sc->at_alloc)
		return apply(sc, ev, t);
	sc->ahead[(sc->head + sc->nahead) % AHEAD] = *ev;
	sc->ahead[(sc->head + sc->nahead) % AHEAD].t = t;
	sc->nahead++;
	if (ev->ptr)
		kiln_livetab_prefetch(&sc->cands, ev->ptr);
	return 0;
}

/* The blocks live at the mark the reading resumed from: candidates. */
static int admit_live(struct scan *sc, const struct kiln_hprof *h)
{
	struct kiln_hprof_block *b;
	size_t n, i;
	int err = kiln_hprof_live_blocks(h, &b, &n);

	for (i = 0; i < n && !err; i++)
		err = admit(sc, b[i].ptr, b[i].t - h->tot.t_first, b[i].size,
			    b[i].stack, b[i].tid);
	free(b);
	return err;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? NONE : a + b;
}

static int by_time(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	return later(a, b) ? 1 : later(b, a) ? -1 : 0;
}

/* Every candidate left is decided at the last event read; the page is
 * the sorted heap's [offset, offset + n). */
static int finish(struct scan *sc)
{
	const struct kiln_heaptrace_allocq *q = sc->q;
	struct kiln_heaptrace_allocs *o = sc->out;
	size_t i;

	for (i = 0; !sc->at_alloc && sc->cands.slots && i <= sc->cands.mask; i++) {
		const struct cand *c = kiln_livetab_at(&sc->cands, i);

		if (c->ptr)
			decide(sc, c, NONE);
	}
	for (i = 0; sc->at_alloc && i < sc->nheap; i++) {
		const struct cand *c = kiln_livetab_find(&sc->cands, sc->heap[i].id);

		sc->heap[i].a.freed = c ? c->t : NONE;
	}
	o->read_to = sc->past ? sc->horizon : sc->last;
	o->to_end = !sc->past;
	if (sc->nheap <= q->offset)
		return 0;
	qsort(sc->heap, sc->nheap, sizeof(*sc->heap), by_time);
	o->n = sc->nheap - q->offset < q->n ? sc->nheap - q->offset : q->n;
	o->a = malloc(o->n * sizeof(*o->a));
	if (!o->a)
		return -ENOMEM;
	for (i = 0; i < o->n; i++)
		o->a[i] = sc->heap[q->offset + i].a;
	return 0;
}

int kiln_heaptrace_allocs(const char *data, size_t len,
			  const struct kiln_heaptrace_index *x,
			  const struct kiln_heaptrace_allocq *q,
			  kiln_heaptrace_progress_fn fn, void *arg,
			  struct kiln_heaptrace_allocs *out,
			  struct kiln_diag *d)
{
	struct kiln_heaptrace_info info;
	struct kiln_heaptrace_stream *s;
	struct scan sc = { .q = q, .out = out };
	uint64_t start, bound, end, w0;
	size_t from = 0, used;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (q->t0 >= q->t1 || q->life_min > q->life_max ||
	    q->size_min > q->size_max)
		return kiln_diag(d, "empty filter: a range, lifetime or size whose "
				 "start is not below its end");
	sc.k = q->offset + q->n;
	if (sc.k < q->n)
		return -EINVAL;
	sc.cands = (struct kiln_livetab)KILN_LIVETAB_INIT(struct cand, 1024);
	sc.at_alloc = !q->alive && !q->life_min && q->life_max == NONE;
	/* Every block that can pass was live at `start`, or came after. */
	start = q->alive ? q->alive_at : q->t0;
	bound = q->life_max != NONE ? q->life_max : q->life_min;
	/* Passing blocks were allocated by then (and, alive, they must be
	 * seen through alive_at); their lifetimes are decided bound later. */
	end = q->alive ? q->alive_at : q->t1;
	sc.horizon = end == NONE ? NONE : add_sat(end, bound);
	s = kiln_heaptrace_stream_new(&info, d);
	sc.heap = malloc((sc.k ? sc.k : 1) * sizeof(*sc.heap));
	if (!s || !sc.heap) {
		err = -ENOMEM;
		goto out;
	}
	kiln_heaptrace_stream_progress(s, fn, arg, len);
	/* Blocks live at alive_at: a mark at that very time will do (what
	 * happens there after the mark is read); allocated from t0 on: a
	 * mark strictly before it. */
	w0 = q->alive ? add_sat(start, 1) : start;
	err = kiln_heaptrace_stream_window(s, w0, add_sat(sc.horizon, 1) > w0 ?
					   add_sat(sc.horizon, 1) : add_sat(w0, 1));
	if (!err && x)
		err = kiln_heaptrace_index_resume(s, x, w0, &from);
	if (!err && from) {
		out->read_from = s->r.h->t_now - s->r.h->tot.t_first;
		sc.last = out->read_from;
		err = admit_live(&sc, s->r.h);
	}
	s->r.tap = tap;
	s->r.tap_arg = &sc;
	if (!err)
		err = kiln_heaptrace_stream_feed(s, data + from, len - from, true,
						 &used);
	if (!err)
		err = drain(&sc, true);
	if (!err) {
		out->bytes_read = s->r.frame_off - from;
		err = finish(&sc);
	}
out:
	kiln_heaptrace_stream_free(s);
	kiln_heaptrace_info_release(&info);
	kiln_livetab_release(&sc.cands);
	free(sc.heap);
	if (err)
		kiln_heaptrace_allocs_release(out);
	return err;
}
