/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap analysis (profile stage): what a time index of a trace keeps and
 * how an analysis resumes from it (format/heaptrace-index.c): the live
 * blocks copied out, the marks and the blocks' spans of marks, a
 * windowed analysis started part way through a trace, and a range read
 * in stretches put together (the counts of one stretch added to another's
 * analysis, the per-stack sums the index kept, the peak taken from the
 * stretch that held it).  See hprof.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/hprof.h"
#include "profile/hprofint.h"
#include "util/buf.h"
#include "util/livetab.h"

int kiln_hprof_live_blocks(const struct kiln_hprof *h,
			   struct kiln_hprof_block **out, size_t *n)
{
	struct kiln_hprof_block *b = malloc((h->live.n ? h->live.n : 1) * sizeof(*b));
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	if (!b)
		return -ENOMEM;
	for (i = 0; h->live.slots && i <= h->live.mask; i++) {
		const struct kiln_hprof_live *e = kiln_livetab_at(&h->live, i);

		if (!e->ptr)
			continue;
		b[k].ptr = e->ptr;
		b[k].size = e->size;
		b[k].stack = e->stack;
		b[k].t = e->t;
		b[k].tid = e->tid & ~LIVE_FLAGS;
		k++;
	}
	*out = b;
	*n = k;
	return 0;
}

uint32_t kiln_hprof_mark(struct kiln_hprof *h)
{
	return h->gen++;
}

int kiln_hprof_spans(struct kiln_hprof *h, struct kiln_hprof_span **out,
		     size_t *n)
{
	struct kiln_hprof_span *sp;
	size_t i, k;

	if (KILN_GROW(h->spans, h->spans_alloc, h->nspans + h->live.n + 1, 1024))
		return -ENOMEM;
	sp = h->spans;
	k = h->nspans;
	for (i = 0; h->live.slots && i <= h->live.mask; i++) {
		const struct kiln_hprof_live *e = kiln_livetab_at(&h->live, i);

		if (!e->ptr || LIVE_GEN(e->tid) >= h->gen)
			continue;	/* none, or at no mark */
		sp[k].b.ptr = e->ptr;
		sp[k].b.size = e->size;
		sp[k].b.t = e->t;
		sp[k].b.stack = e->stack;
		sp[k].b.tid = e->tid & LIVE_TID;
		sp[k].first = LIVE_GEN(e->tid);
		sp[k].last = UINT32_MAX;
		k++;
	}
	*out = sp;
	*n = k;
	h->spans = NULL;
	h->nspans = h->spans_alloc = 0;
	return 0;
}

int kiln_hprof_resume(struct kiln_hprof *h, uint64_t t_first, uint64_t t_now,
		      const struct kiln_hprof_block *b, size_t n,
		      uint64_t last_alloc)
{
	struct kiln_hprof_ev ev = { .t = t_now, .kind = KILN_HPROF_ALLOC };
	uint64_t w0 = h->w0;
	bool inside;
	size_t i;
	int err;

	if (h->started || !h->windowed || t_now < t_first ||
	    t_now - t_first >= h->w1)
		return -EINVAL;
	inside = t_now - t_first >= w0;
	/* The table sized for the blocks at once (no growing on the way). */
	if (!h->live.n && h->live.first < 2 * n + 2) {
		kiln_livetab_release(&h->live);
		while (h->live.first < 2 * n + 2)
			h->live.first *= 2;
		if (kiln_livetab_reserve(&h->live))
			return -ENOMEM;
	}
	h->started = true;
	h->tot.t_first = t_first;
	h->t_now = t_first;
	/* Allocated again as they were, counted in no measure: the window
	 * is kept shut while they are (its start put out of reach). */
	h->w0 = UINT64_MAX;
	for (i = 0; i < n; i++) {
		struct kiln_hprof_live *e;

		ev.ptr = b[i].ptr;
		ev.size = b[i].size;
		ev.stack = b[i].stack;
		ev.tid = b[i].tid;
		err = kiln_hprof_event(h, &ev);
		if (err) {
			h->w0 = w0;
			return err;
		}
		if (!ev.ptr)
			continue;
		e = (struct kiln_hprof_live *)kiln_livetab_find(&h->live, ev.ptr);
		e->t = b[i].t;	/* allocated then, not now */
		if (inside && b[i].t - t_first >= w0)
			e->tid |= LIVE_IN_RANGE;
	}
	h->w0 = w0;
	h->tot.reported = 0;
	h->last_alloc = 0;
	if (inside) {
		kiln_hprof_enter_window(h);
		h->last_alloc = last_alloc;
	}
	return 0;
}

/* ---- a range read in stretches ---- */

int kiln_hprof_add_counts(struct kiln_hprof *h, const struct kiln_hprof *src)
{
	size_t i;

	if (src->nsites > h->nsites)
		return -EINVAL;
	for (i = 1; i <= src->nsites; i++) {
		h->sites[i].calls += src->sites[i].calls;
		h->sites[i].bytes += src->sites[i].bytes;
		h->sites[i].temporary += src->sites[i].temporary;
	}
	kiln_hprof_add_totals(h, &src->tot, NULL);
	return 0;
}

void kiln_hprof_add_totals(struct kiln_hprof *h,
			   const struct kiln_hprof_totals *to,
			   const struct kiln_hprof_totals *from)
{
	const struct kiln_hprof_totals none = { 0 };

	if (!from)
		from = &none;
	h->tot.calls += to->calls - from->calls;
	h->tot.allocated += to->allocated - from->allocated;
	h->tot.temporary += to->temporary - from->temporary;
	h->tot.cross_thread += to->cross_thread - from->cross_thread;
	h->tot.reported += to->reported - from->reported;
	h->tot.frees += to->frees - from->frees;
	h->tot.lost += to->lost - from->lost;
	h->tot.late += to->late - from->late;
	h->tot.unknown_frees += to->unknown_frees - from->unknown_frees;
}

int kiln_hprof_add_site(struct kiln_hprof *h, uint32_t id, double calls,
			double bytes, double temporary)
{
	if (!id || id > h->nsites)
		return -EINVAL;
	h->sites[id].calls += calls;
	h->sites[id].bytes += bytes;
	h->sites[id].temporary += temporary;
	return 0;
}

void kiln_hprof_take_peak(struct kiln_hprof *h, const struct kiln_hprof *src)
{
	size_t i;

	h->tot.peak = src->tot.peak;
	h->tot.peak_objs = src->tot.peak_objs;
	h->tot.peak_t = src->tot.peak_t;
	for (i = 1; i <= h->nsites; i++) {
		bool in = i <= src->nsites;

		h->sites[i].peak_bytes = in ? src->sites[i].peak_bytes : 0;
		h->sites[i].peak_objs = in ? src->sites[i].peak_objs : 0;
	}
}
