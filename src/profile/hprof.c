/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap analysis (profile stage): the live set, totals, per-stack measures
 * and memory over time of a stream of heap events.  See heap.h.
 *
 * The peak per stack is found without copying every stack's live bytes
 * at each new peak: each new peak starts an epoch, and a stack about to
 * change saves its live values first if it has not done so in the
 * current epoch.  A stack that has not changed since the last peak still
 * holds, as its live value, its value at the peak.
 *
 * Memory over time: up to MAX_BUCKETS buckets; when time runs past them
 * the bucket width doubles and neighbours merge, so the series always
 * covers the whole run with 512 to 1024 points.  For every bucket in
 * which its live bytes changed, a stack keeps them at the moment the heap
 * was largest within the bucket (the same lazy snapshots as for the peak,
 * with an epoch per new maximum) and at the bucket's end; so a block
 * allocated and freed within one bucket still shows in the chart.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/heapprof.h"
#include "profile/hprof.h"
#include "profile/hprofint.h"
#include "profile/maptab.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/livetab.h"

#define MAX_BUCKETS 1024
#define FIRST_BUCKET_NS 1000
/* Above this many history points in all, the buckets get coarser. */
#define HIST_CAP (1u << 22)

/* The weight of a block of `size` bytes: 1 unless sampled (no call). */
static inline double weight(const struct kiln_hprof *h, uint64_t size)
{
	return h->sample_bytes ? kiln_heapprof_weight(h->sample_bytes, size) : 1.0;
}

/* Whether the measures count now: always, or inside the window. */
static bool counting(const struct kiln_hprof *h)
{
	return !h->windowed || h->in_window;
}

/*
 * The per-event functions below take `plain`, a constant where they are
 * inlined: true in the copy kiln_hprof_events() runs for an analysis
 * that is neither windowed nor sampled (every block weighs 1, every
 * event counts), false in the general one.  One body, so both copies
 * compute the same values in the same order.
 */
#define PLAIN_WEIGHT(h, plain, size) ((plain) ? 1.0 : weight((h), (size)))
#define PLAIN_COUNTING(h, plain) ((plain) || counting(h))

struct kiln_hprof *kiln_hprof_new(uint64_t sample_bytes)
{
	struct kiln_hprof *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->sample_bytes = sample_bytes;
	h->bucket_ns = FIRST_BUCKET_NS;
	h->total_end = calloc(MAX_BUCKETS, sizeof(double));
	h->total_max = calloc(MAX_BUCKETS, sizeof(double));
	h->calls_n = calloc(MAX_BUCKETS, sizeof(double));
	h->temp_n = calloc(MAX_BUCKETS, sizeof(double));
	h->live = (struct kiln_livetab)KILN_LIVETAB_INIT(struct kiln_hprof_live, 1024);
	if (!h->total_end || !h->total_max || !h->calls_n || !h->temp_n ||
	    kiln_livetab_reserve(&h->live)) {
		kiln_hprof_free(h);
		errno = ENOMEM;
		return NULL;
	}
	return h;
}

void kiln_hprof_free(struct kiln_hprof *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 1; i <= h->nsites; i++)
		free(h->sites[i].hist);
	for (i = 1; i <= h->nmaps; i++)
		free(h->maps[i]);
	free(h->maps);
	free(h->maps_len);
	free(h->sites);
	free(h->pcs);
	free(h->total_end);
	free(h->total_max);
	free(h->calls_n);
	free(h->temp_n);
	kiln_livetab_release(&h->live);
	free(h->dirty);
	free(h->spans);
	free(h);
}

int kiln_hprof_add_maps(struct kiln_hprof *h, const char *text, size_t len)
{
	char **m = realloc(h->maps, (h->nmaps + 2) * sizeof(*m));
	size_t *l;
	char *copy;

	if (!m)
		return -ENOMEM;
	h->maps = m;
	l = realloc(h->maps_len, (h->nmaps + 2) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	h->maps_len = l;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	h->nmaps++;
	h->maps[h->nmaps] = copy;
	h->maps_len[h->nmaps] = len;
	return 0;
}

int kiln_hprof_add_stack(struct kiln_hprof *h, uint32_t id, const uint64_t *pcs,
			uint32_t depth)
{
	struct kiln_hprof_site *s;
	int err;

	if (id != h->nsites + 1)
		return -EINVAL;
	err = kiln_array_grow((void **)&h->sites, &h->sites_alloc, h->nsites + 2,
		   sizeof(*h->sites));
	if (!err)
		err = kiln_array_grow((void **)&h->pcs, &h->pcs_alloc, h->npcs + depth + 1,
			   sizeof(*h->pcs));
	if (err)
		return err;
	s = &h->sites[id];
	memset(s, 0, sizeof(*s));
	s->pc0 = (uint32_t)h->npcs;
	s->depth = depth;
	s->maps = (uint32_t)h->nmaps;
	s->snap = h->epoch;
	if (depth)
		memcpy(h->pcs + h->npcs, pcs, depth * sizeof(*pcs));
	h->npcs += depth;
	h->nsites = id;
	return 0;
}

/* ---- the live set (util/livetab.h) ---- */

static struct kiln_hprof_live *live_find(struct kiln_hprof *h, uint64_t ptr)
{
	return kiln_livetab_find(&h->live, ptr);
}

/* Inserts a block known to be absent. */
static int live_insert(struct kiln_hprof *h, const struct kiln_hprof_live *b)
{
	int err = kiln_livetab_reserve(&h->live);

	if (err)
		return err;
	memcpy(kiln_livetab_put(&h->live, b->ptr), b, sizeof(*b));
	return 0;
}

/* ---- memory over time ---- */

/* Moves the clock to t (not earlier than t_now), opening buckets. */
static int advance(struct kiln_hprof *h, uint64_t t)
{
	uint64_t rel = t - h->tot.t_first;
	uint32_t b, cur;
	int err;

	h->t_now = t;
	if (!h->nbuckets) {
		while (rel >= (uint64_t)MAX_BUCKETS * h->bucket_ns)
			h->bucket_ns *= 2;
	} else if (rel / h->bucket_ns <= h->nbuckets - 1) {
		return 0;	/* still in the open bucket */
	} else {
		err = kiln_hprof_close_bucket(h);
		if (err)
			return err;
		while (rel >= (uint64_t)MAX_BUCKETS * h->bucket_ns ||
		       (h->hist_total > HIST_CAP && h->nbuckets > 1)) {
			err = kiln_hprof_coarsen(h);
			if (err)
				return err;
		}
	}
	b = (uint32_t)(rel / h->bucket_ns);
	if (!h->nbuckets) {
		h->nbuckets = 1;
		h->total_end[0] = h->total_max[0] = h->live_bytes;
	}
	for (cur = h->nbuckets - 1; cur < b; cur++)
		h->total_end[cur + 1] = h->total_max[cur + 1] = h->live_bytes;
	h->nbuckets = cur + 1;
	h->bucket_end = h->tot.t_first + (uint64_t)h->nbuckets * h->bucket_ns;
	/* The bucket's maximum so far: its start. */
	h->bepoch++;
	return 0;
}

/* The stack changes in the open bucket for the first time. */
static int mark_dirty(struct kiln_hprof *h, struct kiln_hprof_site *s)
{
	int err = kiln_array_grow((void **)&h->dirty, &h->dirty_alloc,
				  h->ndirty + 1, sizeof(*h->dirty));

	if (err)
		return err;
	h->dirty[h->ndirty++] = (uint32_t)(s - h->sites);
	s->dirty = h->nbuckets;
	return 0;
}

/* Before a stack's live bytes change: remember them for the bucket. */
static inline int touch(struct kiln_hprof *h, struct kiln_hprof_site *s)
{
	if (s->bsnap_epoch != h->bepoch) {
		s->bsnap = s->live_bytes;
		s->bsnap_epoch = h->bepoch;
	}
	return s->dirty != h->nbuckets ? mark_dirty(h, s) : 0;
}

static void note_total(struct kiln_hprof *h)
{
	uint32_t b = h->nbuckets - 1;

	h->total_end[b] = h->live_bytes;
	if (h->live_bytes > h->total_max[b]) {
		h->total_max[b] = h->live_bytes;
		h->bepoch++;
	}
}

/* Saves the site's live values as its values at the latest peak, once. */
static void snapshot(struct kiln_hprof *h, struct kiln_hprof_site *s)
{
	if (s->snap != h->epoch) {
		s->peak_bytes = s->live_bytes;
		s->peak_objs = s->live_objs;
		s->snap = h->epoch;
	}
}

/* Block e, live at a mark, goes: its span of marks is kept. */
static int span(struct kiln_hprof *h, const struct kiln_hprof_live *e)
{
	struct kiln_hprof_span *sp;

	if (KILN_GROW(h->spans, h->spans_alloc, h->nspans + 1, 1024))
		return -ENOMEM;
	sp = &h->spans[h->nspans++];
	sp->b.ptr = e->ptr;
	sp->b.size = e->size;
	sp->b.t = e->t;
	sp->b.stack = e->stack;
	sp->b.tid = e->tid & LIVE_TID;
	sp->first = LIVE_GEN(e->tid);
	sp->last = h->gen - 1;
	return 0;
}

/* Takes the block in slot i out of the live set, accounting it as freed
 * by tid. */
static inline __attribute__((always_inline)) int
release(struct kiln_hprof *h, size_t i, uint32_t tid, bool temporary,
	const bool plain)
{
	struct kiln_hprof_live *e = kiln_livetab_at(&h->live, i);
	struct kiln_hprof_site *s = &h->sites[e->stack];
	double w = PLAIN_WEIGHT(h, plain, e->size);

	int err;

	snapshot(h, s);
	err = touch(h, s);
	if (err)
		return err;
	s->live_bytes -= w * (double)e->size;
	s->live_objs -= w;
	/* Rounding of the scaled values must not leave dust behind. */
	if (s->live_objs < 0.5) {
		s->live_objs = 0;
		s->live_bytes = 0;
	}
	h->live_bytes -= w * (double)e->size;
	h->live_objs -= w;
	if (h->live_objs < 0.5) {
		h->live_objs = 0;
		h->live_bytes = 0;
	}
	if (temporary && PLAIN_COUNTING(h, plain)) {
		s->temporary += w;
		h->tot.temporary += w;
		h->temp_n[h->nbuckets - 1] += w;
	}
	if ((tid & ~LIVE_FLAGS) != (e->tid & ~LIVE_FLAGS) &&
	    PLAIN_COUNTING(h, plain))
		h->tot.cross_thread += w;
	if (LIVE_GEN(e->tid) < h->gen) {
		err = span(h, e);
		if (err)
			return err;
	}
	/* The entry's size known here: the shift's copies inline. */
	kiln_livetab_remove_at(&h->live, i, sizeof(*e));
	note_total(h);
	return 0;
}

/* The slot of entry e. */
static size_t slot_of(const struct kiln_hprof *h, const struct kiln_hprof_live *e)
{
	return (size_t)((const unsigned char *)e - h->live.slots) / sizeof(*e);
}

/* Release of the block in slot i, allocated again without a free: out of
 * line. */
static __attribute__((noinline)) int release_again(struct kiln_hprof *h, size_t i)
{
	const struct kiln_hprof_live *e = kiln_livetab_at(&h->live, i);

	return release(h, i, e->tid, false, false);
}

/* An allocation; hash is kiln_livetab_hash(ev->ptr). */
static inline __attribute__((always_inline)) int
on_alloc(struct kiln_hprof *h, const struct kiln_hprof_ev *ev, const bool plain,
	 uint64_t hash)
{
	struct kiln_hprof_site *s;
	struct kiln_hprof_live *b;
	size_t slot;
	double w;
	int err, found;

	if (!ev->stack || ev->stack > h->nsites)
		return -EINVAL;
	s = &h->sites[ev->stack];
	w = PLAIN_WEIGHT(h, plain, ev->size);
	h->tot.reported++;
	if (PLAIN_COUNTING(h, plain)) {
		h->tot.calls += w;
		h->tot.allocated += w * (double)ev->size;
		s->calls += w;
		s->bytes += w * (double)ev->size;
		h->calls_n[h->nbuckets - 1] += w;
		h->size_calls[kiln_hprof_size_class(ev->size)] += w;
		h->size_bytes[kiln_hprof_size_class(ev->size)] += w * (double)ev->size;
	}
	if (!ev->ptr)
		return 0;
	err = kiln_livetab_reserve(&h->live);
	if (err)
		return err;
	/* One probe finds the block, or where it goes. */
	slot = kiln_livetab_probe_hash(&h->live, ev->ptr, hash,
				       sizeof(struct kiln_hprof_live), &found);
	if (found) {
		/* Handed out again without a free we saw: drop the old one. */
		h->tot.unknown_frees++;
		err = release_again(h, slot);
		if (err)
			return err;
		slot = kiln_livetab_probe_hash(&h->live, ev->ptr, hash,
					       sizeof(struct kiln_hprof_live), &found);
	}
	b = kiln_livetab_put_at(&h->live, slot, ev->ptr);
	b->size = ev->size;
	b->stack = ev->stack;
	b->t = h->t_now;
	b->tid = (ev->tid & LIVE_TID) | h->gen << LIVE_GEN_SHIFT;
	if (!plain && h->windowed && h->in_window)
		b->tid |= LIVE_IN_RANGE;
	snapshot(h, s);
	err = touch(h, s);
	if (err)
		return err;
	s->live_bytes += w * (double)ev->size;
	s->live_objs += w;
	h->live_bytes += w * (double)ev->size;
	h->live_objs += w;
	if (h->live_bytes > h->seg_peak) {
		h->seg_peak = h->live_bytes;
	}
	if (h->live_bytes > h->tot.peak && PLAIN_COUNTING(h, plain)) {
		h->tot.peak = h->live_bytes;
		h->tot.peak_objs = h->live_objs;
		h->tot.peak_t = h->t_now - h->tot.t_first;
		h->epoch++;
	}
	h->last_alloc = ev->ptr;
	note_total(h);
	return 0;
}

/* A free; hash is kiln_livetab_hash(ev->ptr). */
static inline __attribute__((always_inline)) int
on_free(struct kiln_hprof *h, const struct kiln_hprof_ev *ev, const bool plain,
	uint64_t hash)
{
	bool temporary = h->last_alloc && h->last_alloc == ev->ptr;
	size_t slot;
	int found;

	h->last_alloc = 0;
	h->tot.frees++;
	if (!ev->ptr)
		return 0;
	/* (The table has slots from kiln_hprof_new() on.) */
	slot = kiln_livetab_probe_hash(&h->live, ev->ptr, hash,
				       sizeof(struct kiln_hprof_live), &found);
	if (!found) {
		h->tot.unknown_frees++;
		return 0;
	}
	return release(h, slot, ev->tid, temporary, plain);
}

/* munmap: the whole region, or its first `size` bytes. */
static int on_munmap(struct kiln_hprof *h, const struct kiln_hprof_ev *ev)
{
	struct kiln_hprof_live *e = live_find(h, ev->ptr), b;
	struct kiln_hprof_site *s;
	double w0, w1;
	int err;

	h->last_alloc = 0;
	h->tot.frees++;
	if (!e) {
		h->tot.unknown_frees++;
		return 0;
	}
	if (ev->size >= e->size)
		return release(h, slot_of(h, e), ev->tid, false, false);
	/* Partial unmap from the start: the rest stays live, smaller. */
	b = *e;
	s = &h->sites[b.stack];
	w0 = kiln_heapprof_weight(h->sample_bytes, b.size);
	w1 = kiln_heapprof_weight(h->sample_bytes, b.size - ev->size);
	kiln_livetab_remove(&h->live, e);
	if (LIVE_GEN(b.tid) < h->gen) {	/* its rest is another block */
		err = span(h, &b);
		if (err)
			return err;
	}
	b.tid = (b.tid & ~(0xffu << LIVE_GEN_SHIFT)) | h->gen << LIVE_GEN_SHIFT;
	snapshot(h, s);
	err = touch(h, s);
	if (err)
		return err;
	s->live_bytes += w1 * (double)(b.size - ev->size) - w0 * (double)b.size;
	h->live_bytes += w1 * (double)(b.size - ev->size) - w0 * (double)b.size;
	b.ptr += ev->size;
	b.size -= ev->size;
	err = live_insert(h, &b);
	if (err)
		return err;
	note_total(h);
	return 0;
}

int kiln_hprof_set_window(struct kiln_hprof *h, uint64_t t0, uint64_t t1)
{
	if (h->started || t0 >= t1)
		return -EINVAL;
	h->windowed = true;
	h->w0 = t0;
	h->w1 = t1;
	return 0;
}

void kiln_hprof_enter_window(struct kiln_hprof *h)
{
	h->in_window = true;
	h->tot.peak = h->live_bytes;
	h->tot.peak_objs = h->live_objs;
	h->tot.peak_t = h->t_now - h->tot.t_first;
	h->epoch++;
	h->last_alloc = 0;
}

/* What an event does, its time taken; hash is kiln_livetab_hash(ev->ptr). */
static inline __attribute__((always_inline)) int
dispatch(struct kiln_hprof *h, const struct kiln_hprof_ev *ev, const bool plain,
	 uint64_t hash)
{
	switch (ev->kind) {
	case KILN_HPROF_ALLOC:
	case KILN_HPROF_MMAP:
		return on_alloc(h, ev, plain, hash);
	case KILN_HPROF_FREE:
		return on_free(h, ev, plain, hash);
	case KILN_HPROF_MUNMAP:
		return on_munmap(h, ev);
	case KILN_HPROF_END:
		h->tot.ended = true;
		return 0;
	}
	return -EINVAL;
}

/* The same for the rarer kinds, out of the plain loop. */
static __attribute__((noinline)) int dispatch_rare(struct kiln_hprof *h,
						   const struct kiln_hprof_ev *ev)
{
	return dispatch(h, ev, false, kiln_livetab_hash(ev->ptr));
}

/*
 * One event (kiln_hprof_event()); inlined in the batch loops.  plain
 * (see above) also means started and not finished.  hash is
 * kiln_livetab_hash(ev->ptr).
 */
static inline __attribute__((always_inline)) int
event(struct kiln_hprof *h, const struct kiln_hprof_ev *ev, const bool plain,
      uint64_t hash)
{
	uint64_t t = ev->t;
	int err;

	if (!plain) {
		if (h->finished)
			return -EINVAL;
		if (!h->started) {
			h->started = true;
			h->tot.t_first = t;
			h->t_now = t;
		}
	}
	if (t < h->t_now) {
		h->tot.late++;
		t = h->t_now;
	}
	if (!plain && h->windowed) {
		if (t - h->tot.t_first >= h->w1)
			return 0;	/* past the range */
		if (!h->in_window && t - h->tot.t_first >= h->w0) {
			err = advance(h, t);
			if (err)
				return err;
			h->t_now = t;
			kiln_hprof_enter_window(h);
		}
	}
	if (h->nbuckets && t < h->bucket_end) {
		h->t_now = t;	/* still in the open bucket */
	} else {
		err = advance(h, t);
		if (err)
			return err;
	}
	h->tot.t_last = t;
	if (!plain)
		return dispatch(h, ev, false, hash);
	if (ev->kind == KILN_HPROF_ALLOC)
		return on_alloc(h, ev, true, hash);
	if (ev->kind == KILN_HPROF_FREE)
		return on_free(h, ev, true, hash);
	return dispatch_rare(h, ev);
}

int kiln_hprof_event(struct kiln_hprof *h, const struct kiln_hprof_ev *ev)
{
	return event(h, ev, false, kiln_livetab_hash(ev->ptr));
}

/* How many events ahead the batch loop asks for a block's table slot:
 * about one miss to memory's latency of work. */
#define PREFETCH_AHEAD 8

/* Hashes kept from the prefetch to the probe (a power of 2 above
 * PREFETCH_AHEAD). */
#define HASH_RING 16

/* The batch loop, plain or not (a constant).  Each block's hash is
 * computed once, for its prefetch, and kept until its event. */
static inline __attribute__((always_inline)) int
events(struct kiln_hprof *h, const struct kiln_hprof_ev *ev, size_t n,
       const bool plain)
{
	uint64_t hash[HASH_RING];
	size_t i;
	int err;

	for (i = 0; i < PREFETCH_AHEAD && i < n; i++)
		hash[i] = kiln_livetab_hash(ev[i].ptr);
	/* A free's or an END's ptr 0 prefetches slot 0, harmlessly. */
	for (i = 0; i + PREFETCH_AHEAD < n; i++) {
		uint64_t ahead = kiln_livetab_hash(ev[i + PREFETCH_AHEAD].ptr);

		hash[(i + PREFETCH_AHEAD) % HASH_RING] = ahead;
		kiln_livetab_prefetch_hash(&h->live, ahead);
		err = event(h, &ev[i], plain, hash[i % HASH_RING]);
		if (err)
			return err;
	}
	for (; i < n; i++) {
		err = event(h, &ev[i], plain, hash[i % HASH_RING]);
		if (err)
			return err;
	}
	return 0;
}

static __attribute__((noinline)) int events_plain(struct kiln_hprof *h,
						  const struct kiln_hprof_ev *ev,
						  size_t n)
{
	return events(h, ev, n, true);
}

int kiln_hprof_events(struct kiln_hprof *h, const struct kiln_hprof_ev *ev,
		      size_t n)
{
	int err;

	if (!n)
		return 0;
	if (!h->started || h->finished) {
		/* the first, or -EINVAL */
		err = event(h, ev, false, kiln_livetab_hash(ev->ptr));
		if (err)
			return err;
		ev++;
		n--;
	}
	if (!h->windowed && !h->sample_bytes)
		return events_plain(h, ev, n);
	return events(h, ev, n, false);
}

void kiln_hprof_lost(struct kiln_hprof *h, uint64_t count)
{
	h->tot.lost += count;
}

void kiln_hprof_finish(struct kiln_hprof *h)
{
	size_t i;

	if (h->finished)
		return;
	h->finished = true;
	/* Out of memory here leaves the last bucket's points out. */
	if (h->nbuckets)
		kiln_hprof_close_bucket(h);
	if (h->windowed && !h->in_window)
		kiln_hprof_enter_window(h);	/* nothing happened in the range */
	for (i = 1; i <= h->nsites; i++)
		snapshot(h, &h->sites[i]);
	h->tot.leaked = h->live_bytes;
	h->tot.leaked_objs = h->live_objs;
	if (!h->windowed)
		return;
	/* Leaked in a range: what it allocated that is still live (the peak
	 * values are fixed above; the live values are not used again). */
	for (i = 1; i <= h->nsites; i++)
		h->sites[i].live_bytes = h->sites[i].live_objs = 0;
	h->tot.leaked = h->tot.leaked_objs = 0;
	for (i = 0; h->live.slots && i <= h->live.mask; i++) {
		const struct kiln_hprof_live *e = kiln_livetab_at(&h->live, i);
		double w;

		if (!e->ptr || !(e->tid & LIVE_IN_RANGE))
			continue;
		w = kiln_heapprof_weight(h->sample_bytes, e->size);
		h->sites[e->stack].live_bytes += w * (double)e->size;
		h->sites[e->stack].live_objs += w;
		h->tot.leaked += w * (double)e->size;
		h->tot.leaked_objs += w;
	}
}
