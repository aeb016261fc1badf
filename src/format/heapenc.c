/*
 * The kiln heap trace encoder (format stage): merges the threads' event
 * runs by time and writes them as one stream of version 2 records, frees
 * as block numbers (docs/heap-trace.md).  See heapenc.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/heapenc.h"

void kiln_henc_init(struct kiln_henc *e)
{
	memset(e, 0, sizeof(*e));
	e->tick_ns = KILN_HENC_TICK_NS;
}

void kiln_henc_release(struct kiln_henc *e)
{
	free(e->live);
	free(e->ev);
	free(e->spare);
	free(e->runs);
	kiln_henc_init(e);
}

static int grow(void **p, size_t *alloc, size_t need, size_t size)
{
	size_t na;
	void *q;

	if (need <= *alloc)
		return 0;
	na = *alloc ? *alloc : 1024;
	while (na < need)
		na *= 2;
	q = realloc(*p, na * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*alloc = na;
	return 0;
}

/* ---- the live blocks ---- */

static inline size_t slot(uint64_t p, size_t mask)
{
	p ^= p >> 33;
	p *= 0xff51afd7ed558ccdull;
	p ^= p >> 33;
	return (size_t)p & mask;
}

static struct kiln_henc_blk *find(struct kiln_henc *e, uint64_t ptr)
{
	size_t i;

	if (!e->live)
		return NULL;
	for (i = slot(ptr, e->mask); e->live[i].ptr; i = (i + 1) & e->mask)
		if (e->live[i].ptr == ptr)
			return &e->live[i];
	return NULL;
}

/* Removes b; the entries after it in its probe run move back. */
static void unlink_blk(struct kiln_henc *e, struct kiln_henc_blk *b)
{
	size_t i = (size_t)(b - e->live), j = i;

	e->live[i].ptr = 0;
	e->nlive--;
	for (;;) {
		size_t home;

		j = (j + 1) & e->mask;
		if (!e->live[j].ptr)
			return;
		home = slot(e->live[j].ptr, e->mask);
		/* j moves to the hole unless its home lies in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			e->live[i] = e->live[j];
			e->live[j].ptr = 0;
			i = j;
		}
	}
}

static int reserve_live(struct kiln_henc *e)
{
	size_t cap = e->live ? e->mask + 1 : 0, ncap, i;
	struct kiln_henc_blk *n;

	if ((e->nlive + 1) * 2 <= cap)
		return 0;
	ncap = cap ? cap * 2 : 4096;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (i = 0; i < cap; i++) {
		size_t k;

		if (!e->live[i].ptr)
			continue;
		for (k = slot(e->live[i].ptr, ncap - 1); n[k].ptr; k = (k + 1) & (ncap - 1))
			;
		n[k] = e->live[i];
	}
	free(e->live);
	e->live = n;
	e->mask = ncap - 1;
	return 0;
}

/* ---- runs ---- */

struct kiln_hev *kiln_henc_reserve(struct kiln_henc *e, size_t n)
{
	if (grow((void **)&e->ev, &e->ev_alloc, e->nev + n + 1, sizeof(*e->ev)))
		return NULL;
	return e->ev + e->nev;
}

int kiln_henc_commit(struct kiln_henc *e, size_t used)
{
	if (!used)
		return 0;
	if (grow((void **)&e->runs, &e->runs_alloc, e->nruns + 1, sizeof(*e->runs)))
		return -ENOMEM;
	e->runs[e->nruns++] = e->nev;
	e->nev += used;
	return 0;
}

static inline int rank(const struct kiln_hev *v)
{
	/* At equal times a block is freed before its address is reused. */
	return v->kind == KILN_HEV_FREE ? 0 : v->kind == KILN_HEV_END ? 2 : 1;
}

static inline int before(const struct kiln_hev *a, const struct kiln_hev *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return rank(a) < rank(b);
}

/* The merge: a binary heap of run cursors ordered by their heads. */
struct cur {
	size_t pos, end;
};

static void sift(const struct kiln_hev *ev, struct cur *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct cur t;

		if (l < n && before(&ev[h[l].pos], &ev[h[m].pos]))
			m = l;
		if (l + 1 < n && before(&ev[h[l + 1].pos], &ev[h[m].pos]))
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* ---- records ---- */

static inline unsigned char *uv(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* The records of one event (at most 1 + 10 + 1 + 10 + 1 + 10 + 10 bytes). */
#define MAX_EV_BYTES 64

static unsigned char *put_time(struct kiln_henc *e, unsigned char *p, uint64_t t,
			       uint64_t tick)
{
	if (t >= e->t_mark + tick || !e->t_mark) {
		*p++ = 'T';
		p = uv(p, t - e->t_mark);
		e->t_mark = t;
	}
	return p;
}

/* The tag of an event of thread tid: lower case switches back to the
 * thread before the current one; 'X' names any other. */
static unsigned char *put_tag(struct kiln_henc *e, unsigned char *p, uint32_t tid,
			      char tag, uint32_t *prev)
{
	if (tid == e->tid) {
		*p++ = (unsigned char)tag;
	} else if (tid == *prev) {
		*prev = e->tid;
		e->tid = tid;
		*p++ = (unsigned char)(tag | 0x20);
	} else {
		*p++ = 'X';
		p = uv(p, tid);
		*prev = e->tid;
		e->tid = tid;
		*p++ = (unsigned char)tag;
	}
	return p;
}

/* Emits one event.  0 or -ENOMEM (before anything changed). */
static int emit_one(struct kiln_henc *e, struct kiln_hev *v, struct kiln_buf *out,
		    kiln_henc_fn *fn, void *arg, uint32_t *prev)
{
	unsigned char rec[2 * MAX_EV_BYTES], *p = rec;
	struct kiln_henc_blk *b;
	struct kiln_hev old;

	if (out && kiln_buf_grow(out, sizeof(rec)))
		return -ENOMEM;
	switch (v->kind) {
	case KILN_HEV_ALLOC:
		if (reserve_live(e))
			return -ENOMEM;
		b = find(e, v->ptr);
		if (b) {
			/* The old block's free was never seen: it is gone. */
			e->reused++;
			old = *v;
			old.kind = KILN_HEV_FREE;
			old.size = b->size;
			old.stack = b->stack;
			old.num = b->num;
			if (out) {
				p = put_time(e, p, v->t, e->tick_ns);
				p = put_tag(e, p, v->tid, 'F', prev);
				p = uv(p, e->nblocks - 1 - b->num);
			}
			unlink_blk(e, b);
			if (fn)
				fn(arg, &old);
		}
		{
			size_t i;

			for (i = slot(v->ptr, e->mask); e->live[i].ptr; i = (i + 1) & e->mask)
				;
			e->live[i].ptr = v->ptr;
			e->live[i].num = e->nblocks;
			e->live[i].size = v->size;
			e->live[i].stack = v->stack;
			e->nlive++;
		}
		v->num = e->nblocks++;
		if (out) {
			p = put_time(e, p, v->t, e->tick_ns);
			p = put_tag(e, p, v->tid, 'A', prev);
			p = uv(p, v->size);
			p = uv(p, v->stack);
		}
		if (fn)
			fn(arg, v);
		break;
	case KILN_HEV_FREE:
		b = find(e, v->ptr);
		if (!b) {
			e->unknown_frees++;
			return 0;
		}
		if (out) {
			p = put_time(e, p, v->t, e->tick_ns);
			p = put_tag(e, p, v->tid, 'F', prev);
			p = uv(p, e->nblocks - 1 - b->num);
		}
		v->size = b->size;
		v->stack = b->stack;
		v->num = b->num;
		unlink_blk(e, b);
		if (fn)
			fn(arg, v);
		break;
	default:	/* END: at its exact time */
		if (out) {
			p = put_time(e, p, v->t, 1);
			*p++ = 'E';
		}
		if (fn)
			fn(arg, v);
		break;
	}
	if (out) {
		memcpy(out->data + out->len, rec, (size_t)(p - rec));
		out->len += (size_t)(p - rec);
	}
	return 0;
}

int kiln_henc_emit(struct kiln_henc *e, uint64_t limit, struct kiln_buf *out,
		   kiln_henc_fn *fn, void *arg)
{
	struct cur *heap;
	size_t n = 0, i, kept = 0;
	uint32_t prev = 0;
	int err = 0;

	if (!e->nruns)
		return 0;
	if (grow((void **)&e->spare, &e->spare_alloc, e->nev, sizeof(*e->spare)) ||
	    grow((void **)&e->runs, &e->runs_alloc, e->nruns + 1, sizeof(*e->runs)))
		return -ENOMEM;
	heap = malloc(e->nruns * sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	for (i = 0; i < e->nruns; i++) {
		heap[n].pos = e->runs[i];
		heap[n].end = i + 1 < e->nruns ? e->runs[i + 1] : e->nev;
		n++;
	}
	for (i = n / 2; i-- > 0;)
		sift(e->ev, heap, n, i);
	prev = e->prev_tid;
	while (n) {
		struct cur *c = &heap[0];
		const struct kiln_hev *bound = NULL;

		/* The top run goes on while it stays before the other heads:
		 * one heap step per switch of runs, not per event. */
		if (n > 1) {
			bound = &e->ev[heap[1].pos];
			if (n > 2 && before(&e->ev[heap[2].pos], bound))
				bound = &e->ev[heap[2].pos];
		}
		do {
			struct kiln_hev *v = &e->ev[c->pos];

			if (v->t < limit) {
				err = emit_one(e, v, out, fn, arg, &prev);
				if (err)
					goto out;
			} else {
				e->spare[kept++] = *v;
			}
			c->pos++;
		} while (c->pos < c->end && (!bound || before(&e->ev[c->pos], bound)));
		if (c->pos == c->end)
			heap[0] = heap[--n];
		if (n)
			sift(e->ev, heap, n, 0);
	}
out:
	/* The events kept, in merged order, are one run. */
	e->nruns = 0;
	if (kept)
		e->runs[e->nruns++] = 0;
	if (err) {
		/* What is left of each run waits as a run of its own. */
		for (i = 0; i < n; i++) {
			size_t m = heap[i].end - heap[i].pos;

			if (!m)
				continue;
			memcpy(e->spare + kept, e->ev + heap[i].pos, m * sizeof(*e->ev));
			e->runs[e->nruns++] = kept;
			kept += m;
		}
	}
	{
		struct kiln_hev *t = e->ev;
		size_t a = e->ev_alloc;

		e->ev = e->spare;
		e->ev_alloc = e->spare_alloc;
		e->spare = t;
		e->spare_alloc = a;
	}
	e->nev = kept;
	e->prev_tid = prev;
	free(heap);
	return err;
}
