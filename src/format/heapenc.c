/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace encoder (format stage): merges the threads' event
 * runs by time and writes them as version 2 records in columns, frees as
 * block numbers of the allocating thread (docs/heap-trace.md).  See
 * heapenc.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/heapenc.h"
#include "util/varint.h"

void kiln_henc_init(struct kiln_henc *e)
{
	memset(e, 0, sizeof(*e));
	e->live = (struct kiln_livetab)KILN_LIVETAB_INIT(struct kiln_henc_blk, 4096);
	e->tick_ns = KILN_HENC_TICK_NS;
	e->c_mult = 1ull << 32;
}

void kiln_henc_clock(struct kiln_henc *e, uint64_t raw0, uint64_t ns0,
		     uint64_t raw1, uint64_t ns1)
{
	if (ns1 < ns0)
		ns1 = ns0;	/* readings a few ns apart can cross */
	/* Rounded down, and the products to nearest: the line never
	 * passes ns1 at raw1, where the next one starts. */
	if (raw1 > raw0)
		e->c_mult = (uint64_t)(((unsigned __int128)(ns1 - ns0) << 32) /
				       (raw1 - raw0));
	e->c_raw = raw0;
	e->c_ns = ns0;
	e->raw_next = 0;
}

void kiln_henc_clock_at(struct kiln_henc *e, uint64_t raw)
{
	e->c_ns = kiln_henc_ns(e, raw);
	e->c_raw = raw;
	e->raw_next = 0;
}

/*
 * A raw time before which the line gives less than ns: a little early
 * (rounding), never late; 0 when ns is before the line's anchor.
 */
static uint64_t raw_before(const struct kiln_henc *e, uint64_t ns)
{
	unsigned __int128 d;

	/* x < d: x * mult / 2^32 < ns - c_ns - 1, and rounded still
	 * below ns - c_ns. */
	if (ns <= e->c_ns + 1 || !e->c_mult)
		return 0;
	d = ((unsigned __int128)(ns - e->c_ns - 1) << 32) / e->c_mult;
	if (d > UINT64_MAX - e->c_raw)
		return UINT64_MAX;
	return e->c_raw + (uint64_t)d;
}

uint64_t kiln_henc_ns(const struct kiln_henc *e, uint64_t t)
{
	uint64_t d;

	if (t >= e->c_raw)
		return e->c_ns + (uint64_t)(((unsigned __int128)(t - e->c_raw) * e->c_mult +
					      (1u << 31)) >> 32);
	/* Before the segment (an event put late): the same line. */
	d = (uint64_t)(((unsigned __int128)(e->c_raw - t) * e->c_mult + (1u << 31)) >> 32);
	return d < e->c_ns ? e->c_ns - d : 0;
}

void kiln_henc_release(struct kiln_henc *e)
{
	kiln_tcount_release(&e->counts);
	kiln_livetab_release(&e->live);
	free(e->ev);
	free(e->spare);
	free(e->runs);
	kiln_henc_init(e);
}

/* ---- columns ---- */

void kiln_hcols_release(struct kiln_hcols *f)
{
	int i;

	for (i = 0; i < KILN_HCOL_N; i++)
		kiln_buf_release(&f->c[i]);
}

void kiln_hcols_reset(struct kiln_hcols *f)
{
	int i;

	for (i = 0; i < KILN_HCOL_N; i++)
		kiln_buf_reset(&f->c[i]);
}

bool kiln_hcols_empty(const struct kiln_hcols *f)
{
	return !f->c[KILN_HCOL_TAG].len;
}

/* Writes v at p (room for KILN_VARINT_MAX); returns the byte after it. */
static inline unsigned char *uv(unsigned char *p, uint64_t v)
{
	return p + kiln_varint_put(p, v);
}

/* Appends a varint to b, which has room (kiln_buf_grow'n by 10). */
static inline void put_uv(struct kiln_buf *b, uint64_t v)
{
	b->len += kiln_varint_put((unsigned char *)b->data + b->len, v);
}

static inline void put_c(struct kiln_buf *b, unsigned char c)
{
	b->data[b->len++] = (char)c;
}

/* ---- records, as format/heapcols.h describes them ---- */

/* kiln_hrecs, whose fields gcc knows here: put_field() and put_tag()
 * compile to the columns' appends, no table read per field. */
static const struct kiln_hrec hrecs[KILN_HREC_N] = KILN_HRECS_INIT;

#define REC(kind) (&hrecs[KILN_HREC_##kind])

static inline void put_rtag(struct kiln_hcols *f, const struct kiln_hrec *r)
{
	put_c(&f->c[KILN_HCOL_TAG], r->tag);
}

/* Field i of record r, an integer (uv, one of uvs, or split), into the
 * column(s) the table names; they have room. */
static inline void put_field(struct kiln_hcols *f, const struct kiln_hrec *r,
			     int i, uint64_t v)
{
	const struct kiln_hfield *d = &r->f[i];

	if (d->code == KILN_HF_SPLIT) {
		put_c(&f->c[d->col], (unsigned char)v);
		put_uv(&f->c[d->col_hi], v >> 8);
	} else {
		put_uv(&f->c[d->col], v);
	}
}

/* Room for a record: its tag and `misc` bytes of fields. */
static int room(struct kiln_hcols *f, size_t misc)
{
	if (kiln_buf_grow(&f->c[KILN_HCOL_TAG], 1) ||
	    kiln_buf_grow(&f->c[KILN_HCOL_MISC], misc + 1))
		return -ENOMEM;
	return 0;
}

static void put_str(struct kiln_buf *b, const char *s, size_t n)
{
	put_uv(b, n);
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* String field i of record r. */
static void put_sfield(struct kiln_hcols *f, const struct kiln_hrec *r, int i,
		       const char *s, size_t n)
{
	put_str(&f->c[r->f[i].col], s, n);
}

int kiln_hcols_header(struct kiln_hcols *f, uint64_t pid, uint64_t ppid,
		      uint64_t realtime_ns, uint64_t sample_bytes,
		      const char *cmdline, size_t len)
{
	const struct kiln_hrec *r = REC(HEADER);

	if (room(f, 50 + len))
		return -ENOMEM;
	put_rtag(f, r);
	put_field(f, r, 0, pid);
	put_field(f, r, 1, ppid);
	put_field(f, r, 2, realtime_ns);
	put_field(f, r, 3, sample_bytes);
	put_sfield(f, r, 4, cmdline, len);
	return 0;
}

int kiln_hcols_maps(struct kiln_hcols *f, const char *text, size_t len)
{
	if (room(f, 10 + len))
		return -ENOMEM;
	put_rtag(f, REC(MAPS));
	put_sfield(f, REC(MAPS), 0, text, len);
	return 0;
}

int kiln_hcols_stack(struct kiln_hcols *f, uint64_t id, const uint64_t *pcs,
		     size_t depth)
{
	const struct kiln_hrec *r = REC(STACK);
	size_t i;

	if (room(f, 20 + 10 * depth))
		return -ENOMEM;
	put_rtag(f, r);
	put_field(f, r, 0, id);
	put_field(f, r, 1, depth);
	for (i = 0; i < depth; i++)
		put_field(f, r, 2, pcs[i]);
	return 0;
}

int kiln_hcols_name(struct kiln_hcols *f, uint64_t tid, const char *name,
		    size_t len)
{
	if (room(f, 20 + len))
		return -ENOMEM;
	put_rtag(f, REC(NAME));
	put_field(f, REC(NAME), 0, tid);
	put_sfield(f, REC(NAME), 1, name, len);
	return 0;
}

int kiln_hcols_lost(struct kiln_hcols *f, uint64_t count)
{
	if (room(f, 10))
		return -ENOMEM;
	put_rtag(f, REC(LOST));
	put_field(f, REC(LOST), 0, count);
	return 0;
}

int kiln_hcols_frame(const struct kiln_hcols *const *parts, size_t n,
		     bool first, struct kiln_buf *out)
{
	unsigned char head[16 + 11 * KILN_HCOL_N], *p = head;
	size_t len[KILN_HCOL_N] = { 0 }, total = 0, i;
	int c;

	if (first) {
		memcpy(p, "KILNHEAP", 8);
		p = uv(p + 8, KILN_HEAPTRACE_VERSION);
	}
	p = uv(p, KILN_HCOL_N);
	for (c = 0; c < KILN_HCOL_N; c++) {
		for (i = 0; i < n; i++)
			len[c] += parts[i]->c[c].len;
		p = uv(p, len[c]);
		total += len[c];
	}
	if (kiln_buf_grow(out, (size_t)(p - head) + total))
		return -ENOMEM;
	kiln_buf_add(out, head, (size_t)(p - head));
	for (c = 0; c < KILN_HCOL_N; c++)
		for (i = 0; i < n; i++)
			kiln_buf_add(out, parts[i]->c[c].data, parts[i]->c[c].len);
	return 0;
}

/* ---- per-thread counters ---- */

static inline size_t tslot(uint32_t tid, size_t mask)
{
	return (size_t)((tid * 0x9E3779B1u) >> 7) & mask;
}

uint64_t *kiln_tcount_find(struct kiln_tcount *m, uint32_t tid)
{
	size_t i;

	if (m->e) {
		/* Events come in runs of one or two threads: check those
		 * first (slots are checked by tid, so a rehash is harmless). */
		if (m->e[m->last[0]].tid == tid)
			return &m->e[m->last[0]].n;
		if (m->e[m->last[1]].tid == tid) {
			i = m->last[1];
			m->last[1] = m->last[0];
			m->last[0] = i;
			return &m->e[i].n;
		}
		for (i = tslot(tid, m->mask); m->e[i].tid; i = (i + 1) & m->mask)
			if (m->e[i].tid == tid) {
				m->last[1] = m->last[0];
				m->last[0] = i;
				return &m->e[i].n;
			}
	}
	if (!m->e || (m->used + 1) * 2 > m->mask + 1) {
		size_t cap = m->e ? (m->mask + 1) * 2 : 64, k;
		__typeof__(m->e) n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (k = 0; m->e && k <= m->mask; k++) {
			if (!m->e[k].tid)
				continue;
			for (i = tslot(m->e[k].tid, cap - 1); n[i].tid; i = (i + 1) & (cap - 1))
				;
			n[i] = m->e[k];
		}
		free(m->e);
		m->e = n;
		m->mask = cap - 1;
	}
	for (i = tslot(tid, m->mask); m->e[i].tid; i = (i + 1) & m->mask)
		;
	m->e[i].tid = tid;
	m->e[i].n = 0;
	m->used++;
	m->last[1] = m->last[0];
	m->last[0] = i;
	return &m->e[i].n;
}

void kiln_tcount_release(struct kiln_tcount *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---- the live blocks (util/livetab.h) ---- */

static struct kiln_henc_blk *find(struct kiln_henc *e, uint64_t ptr)
{
	return kiln_livetab_find(&e->live, ptr);
}

/* kiln_livetab_remove() inline, with the entry's size a constant. */
static void forget(struct kiln_henc *e, struct kiln_henc_blk *b)
{
	kiln_livetab_remove_at(&e->live,
			       (size_t)((unsigned char *)b - e->live.slots) / sizeof(*b),
			       sizeof(*b));
}

/* ---- runs ---- */

struct kiln_hev *kiln_henc_reserve(struct kiln_henc *e, size_t n)
{
	if (kiln_array_grow((void **)&e->ev, &e->ev_alloc, e->nev + n + 1, sizeof(*e->ev)))
		return NULL;
	return e->ev + e->nev;
}

int kiln_henc_commit(struct kiln_henc *e, size_t used)
{
	if (!used)
		return 0;
	if (kiln_array_grow((void **)&e->runs, &e->runs_alloc, e->nruns + 1, sizeof(*e->runs)))
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

/* ---- events ---- */

static __attribute__((noinline)) void put_time_at(struct kiln_henc *e,
						 struct kiln_hcols *f, uint64_t t,
						 uint64_t tick)
{
	t = kiln_henc_ns(e, t);
	if (t >= e->t_mark + tick || !e->t_mark) {
		put_rtag(f, REC(TIME));
		put_field(f, REC(TIME), 0, t - e->t_mark);
		e->t_mark = t;
	}
	e->raw_next = raw_before(e, e->t_mark + e->tick_ns);
}

static inline void put_time(struct kiln_henc *e, struct kiln_hcols *f, uint64_t t,
			    uint64_t tick)
{
	/* Most events are within the tick of the last 'T': no conversion. */
	if (t < e->raw_next && tick == e->tick_ns)
		return;
	put_time_at(e, f, t, tick);
}

/* The tag of event record r of thread tid: lower case switches back to
 * the thread before the current one; 'X' names any other.  Inline, as
 * put_free(): called at every event, and the record is a constant. */
static inline __attribute__((always_inline)) void
put_tag(struct kiln_henc *e, struct kiln_hcols *f, uint32_t tid,
	const struct kiln_hrec *r)
{
	if (tid == e->tid) {
		put_rtag(f, r);
	} else if (tid == e->prev_tid) {
		e->prev_tid = e->tid;
		e->tid = tid;
		put_c(&f->c[KILN_HCOL_TAG], (unsigned char)(r->tag + KILN_HREC_PREV_THREAD));
	} else {
		put_rtag(f, REC(THREAD));
		put_field(f, REC(THREAD), 0, tid);
		e->prev_tid = e->tid;
		e->tid = tid;
		put_rtag(f, r);
	}
}

/* A free of block b by thread tid: 'F' for its own blocks, else 'R'. */
static inline __attribute__((always_inline)) void
put_free(struct kiln_henc *e, struct kiln_hcols *f, uint64_t t, uint32_t tid,
	 const struct kiln_henc_blk *b, uint64_t count)
{
	uint64_t back = count - 1 - b->num;

	put_time(e, f, t, e->tick_ns);
	if (b->tid == tid) {
		put_tag(e, f, tid, REC(FREE));
		put_field(f, REC(FREE), 0, back);
	} else {
		put_tag(e, f, tid, REC(RFREE));
		put_field(f, REC(RFREE), 0, b->tid);
		put_field(f, REC(RFREE), 1, back);
	}
}

/*
 * Room in every column for the records of n events (64 bytes a column
 * each at most), checked once for ROOM_EVENTS events, not at each.
 */
#define ROOM_EVENTS 64
static int event_room(struct kiln_hcols *f, size_t n)
{
	int c;

	for (c = 0; c < KILN_HCOL_N; c++)
		if (f->c[c].cap - f->c[c].len < 64 * n &&
		    kiln_buf_grow(&f->c[c], 64 * n))
			return -ENOMEM;
	return 0;
}

/* Emits one event (out has room for it: event_room()).  0 or -ENOMEM
 * (before anything changed). */
static int emit_one(struct kiln_henc *e, struct kiln_hev *v, struct kiln_hcols *out,
		    kiln_henc_fn *fn, void *arg)
{
	struct kiln_henc_blk *b;
	struct kiln_hev old;
	uint64_t *count, *owner;
	size_t slot;
	int found;

	switch (v->kind) {
	case KILN_HEV_ALLOC:
		if (kiln_livetab_reserve(&e->live) ||
		    !(count = kiln_tcount_get(&e->counts, v->tid)))
			return -ENOMEM;
		/* One probe: the block's slot, or where it goes. */
		slot = kiln_livetab_probe(&e->live, v->ptr, &found);
		b = kiln_livetab_at(&e->live, slot);
		if (found) {
			/* The old block's free was never seen: it is gone,
			 * and the new one takes its entry.  (Its thread's
			 * counter exists: it allocated.) */
			owner = kiln_tcount_get(&e->counts, b->tid);
			e->reused++;
			if (out && owner)
				put_free(e, out, v->t, v->tid, b, *owner);
			old = *v;
			old.kind = KILN_HEV_FREE;
			old.size = b->size;
			old.stack = b->stack;
			old.epoch = b->epoch;
			if (fn)
				fn(arg, &old);
		} else {
			kiln_livetab_put_at(&e->live, slot, v->ptr);
		}
		/* count: looking up b->tid's counter (which exists) moved
		 * nothing. */
		b->size = v->size;
		b->num = (*count)++;
		b->tid = v->tid;
		b->stack = v->stack;
		b->epoch = e->epoch;
		if (out) {
			put_time(e, out, v->t, e->tick_ns);
			put_tag(e, out, v->tid, REC(ALLOC));
			put_field(out, REC(ALLOC), 0, v->size);
			put_field(out, REC(ALLOC), 1, v->stack);
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
		owner = kiln_tcount_get(&e->counts, b->tid);
		if (!owner)
			return -ENOMEM;
		if (out)
			put_free(e, out, v->t, v->tid, b, *owner);
		v->size = b->size;
		v->stack = b->stack;
		v->epoch = b->epoch;
		forget(e, b);
		if (fn)
			fn(arg, v);
		break;
	default:	/* END: at its exact time */
		if (out) {
			put_time(e, out, v->t, 1);
			put_rtag(out, REC(END));
		}
		if (fn)
			fn(arg, v);
		break;
	}
	return 0;
}

#define PREFETCH_AHEAD 8

int kiln_henc_emit(struct kiln_henc *e, uint64_t limit, struct kiln_hcols *out,
		   kiln_henc_fn *fn, void *arg)
{
	struct cur *heap;
	size_t n = 0, i, kept = 0, room = 0;
	int err = 0;

	if (!e->nruns)
		return 0;
	if (kiln_array_grow((void **)&e->spare, &e->spare_alloc, e->nev, sizeof(*e->spare)) ||
	    kiln_array_grow((void **)&e->runs, &e->runs_alloc, e->nruns + 1, sizeof(*e->runs)))
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

			/* The live-block table's slot of an event a few ahead
			 * in this run: a block's slot is a cache miss (the
			 * table is large and probed at random), now waited
			 * for while the events between are written. */
			if (c->pos + PREFETCH_AHEAD < c->end)
				kiln_livetab_prefetch(&e->live, e->ev[c->pos + PREFETCH_AHEAD].ptr);
			if (v->t < limit) {
				if (out && !room) {
					err = event_room(out, ROOM_EVENTS);
					if (err)
						goto out;
					room = ROOM_EVENTS;
				}
				room--;
				err = emit_one(e, v, out, fn, arg);
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
	free(heap);
	return err;
}
