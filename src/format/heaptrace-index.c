/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time index of a kiln heap trace (format stage), for kiln serve's
 * time ranges: one whole analysis leaves marks at frame boundaries, every
 * 1/64 of the trace's bytes, each holding what reading on from there
 * needs: where the next frame starts, the reader's state (the time, the
 * threads, each thread's block count, the next stack id, the maps so
 * far) and the blocks live there.  A range [t0, t1) is then analysed from
 * the last mark before t0 (its live blocks put back, kiln_hprof_resume())
 * up to t1 (heaptrace-stream.c stops there), not from the trace's start.
 * The stack and maps definitions are kept once, from the end of the
 * analysis; a resumed analysis defines those it had at the mark.
 *
 * A range that holds whole stretches between marks is not read through
 * them: each mark also keeps what the stretch before it added (per stack:
 * allocations, bytes, temporary allocations; the largest heap in it),
 * so such a range is read in at most three stretches
 * (kiln_heaptrace_index_range()): from the mark before t0 to the first
 * mark in the range, from the last mark in the range to t1, and, when the
 * range's largest heap came in between, that one stretch again for the
 * stacks' values at it.
 *
 * Memory: the blocks live at the marks, each kept once whatever the
 * number of marks it lived at (40 bytes: the block and its first and last
 * mark, kiln_hprof_mark()/kiln_hprof_spans(); the analysis keeps a block
 * as it goes if it lived at a mark, so a mark costs no reading of the
 * live set), and
 * the stretch sums (32 bytes a stack that changed); within INDEX_BUDGET;
 * past it no more marks are taken (later ranges then start at the last
 * mark).  One more mark, whatever the budget, holds the
 * trace's end (its live blocks are its leaks): what is live at the end
 * is then known without reading (the allocation list's most asked
 * filter, heaptrace-allocs.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/heaptrace.h"
#include "format/heaptraceint.h"
#include "profile/hprof.h"
#include "util/buf.h"

#define INDEX_MARKS 64
/* The marks and the one at the end, numbered by the analysis. */
_Static_assert(INDEX_MARKS + 1 <= KILN_HPROF_MAX_MARKS, "too many marks");
#define INDEX_BUDGET ((size_t)256 << 20)

struct mark {
	size_t off;			/* the next frame's first byte */
	size_t nframe, frames;		/* r->nframe, info->frames */
	uint64_t inflated;
	uint64_t t, t_now;		/* the reader's time, the analysis' */
	uint32_t tid, prev_tid, next_stack;
	size_t nmaps;			/* maps texts defined so far */
	struct kiln_tcount counts;
	uint32_t *tids;
	size_t ntids;
	uint64_t last_alloc;		/* the analysis' h->last_alloc */
	/* The stretch since the mark before (or the trace's start): its
	 * largest heap after an allocation (0: none, or none above 0)
	 * and per stack what it added; the totals at the mark. */
	double seg_peak;
	struct seg_site *sums;
	size_t nsums;
	struct kiln_hprof_totals tot;
};

/* What a stretch added to one stack. */
struct seg_site {
	uint32_t id;
	double calls, bytes, temporary;
};

struct kiln_heaptrace_index {
	struct mark *m;
	size_t n;
	size_t every, next_off, bytes;
	size_t fixed;		/* bytes of the marks but their blocks */
	uint64_t t_first;
	/* What the trace defines, from the end of the analysis. */
	struct kiln_heaptrace_info info;	/* header fields, cmdline */
	uint32_t nstacks;			/* stacks 1..nstacks */
	struct kiln_hprof_site *sites;		/* pc0, depth, maps only */
	uint64_t *pcs;
	char **maps;				/* [1..nmaps] */
	size_t *maps_len;
	size_t nmaps;
	/* While it is built: each stack's calls, bytes and temporary at the
	 * last mark ([3 * id]), for the next stretch's sums. */
	double *cum;
	size_t ncum;
	/* Every block live at a mark, and at which (kiln_hprof_spans()),
	 * from the end of the analysis. */
	struct kiln_hprof_span *spans;
	size_t nspans;
	/* Ranges read in stretches, and the stretches they did not read
	 * (tests and messages; kiln serve reads ranges in several
	 * threads at once). */
	size_t fast, skipped;
};

struct kiln_heaptrace_index *kiln_heaptrace_index_new(size_t len)
{
	struct kiln_heaptrace_index *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->m = calloc(INDEX_MARKS + 1, sizeof(*x->m));
	if (!x->m) {
		free(x);
		return NULL;
	}
	x->every = len / INDEX_MARKS ? len / INDEX_MARKS : 1;
	x->next_off = x->every;
	return x;
}

static void mark_release(struct mark *k)
{
	kiln_tcount_release(&k->counts);
	free(k->tids);
	free(k->sums);
}

void kiln_heaptrace_index_free(struct kiln_heaptrace_index *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->n; i++)
		mark_release(&x->m[i]);
	free(x->m);
	for (i = 1; i <= x->nmaps; i++)
		free(x->maps[i]);
	free(x->maps);
	free(x->maps_len);
	free(x->sites);
	free(x->pcs);
	free(x->cum);
	free(x->spans);
	kiln_heaptrace_info_release(&x->info);
	free(x);
}

size_t kiln_heaptrace_index_marks(const struct kiln_heaptrace_index *x,
				  size_t *bytes)
{
	*bytes = x ? x->bytes : 0;
	return x ? x->n : 0;
}

/* A copy of the per-thread counters (their table as it is). */
static int tcount_copy(struct kiln_tcount *to, const struct kiln_tcount *from)
{
	*to = *from;
	to->e = NULL;
	if (!from->e)
		return 0;
	to->e = malloc((from->mask + 1) * sizeof(*to->e));
	if (!to->e)
		return -ENOMEM;
	memcpy(to->e, from->e, (from->mask + 1) * sizeof(*to->e));
	return 0;
}

/* What the stretch up to mark k added to each stack since the last mark,
 * and its largest heap (whose tracking starts again). */
static int mark_sums(struct kiln_heaptrace_index *x, struct mark *k,
		     struct kiln_hprof *h)
{
	size_t need = 3 * (h->nsites + 1), i, n = 0;
	int err;

	if (need > x->ncum) {
		size_t had = x->ncum;

		err = kiln_array_grow((void **)&x->cum, &x->ncum, need,
				      sizeof(*x->cum));
		if (err)
			return err;
		memset(x->cum + had, 0, (x->ncum - had) * sizeof(*x->cum));
	}
	for (i = 1; i <= h->nsites; i++) {
		const struct kiln_hprof_site *st = &h->sites[i];
		const double *c = x->cum + 3 * i;

		n += st->calls != c[0] || st->bytes != c[1] ||
		     st->temporary != c[2];
	}
	k->sums = malloc((n ? n : 1) * sizeof(*k->sums));
	if (!k->sums)
		return -ENOMEM;
	for (i = 1; i <= h->nsites; i++) {
		const struct kiln_hprof_site *st = &h->sites[i];
		double *c = x->cum + 3 * i;

		if (st->calls == c[0] && st->bytes == c[1] &&
		    st->temporary == c[2])
			continue;
		k->sums[k->nsums++] = (struct seg_site){
			(uint32_t)i, st->calls - c[0], st->bytes - c[1],
			st->temporary - c[2] };
		c[0] = st->calls;
		c[1] = st->bytes;
		c[2] = st->temporary;
	}
	k->seg_peak = h->seg_peak;
	h->seg_peak = 0;
	k->tot = h->tot;
	x->fixed += k->nsums * sizeof(*k->sums);
	return 0;
}

/* A mark of the reader's state now. */
static int mark_now(struct kiln_heaptrace_stream *s)
{
	struct kiln_heaptrace_index *x = s->index;
	const struct reader *r = &s->r;
	struct mark *k;
	int err;

	k = &x->m[x->n];
	memset(k, 0, sizeof(*k));
	k->off = r->frame_off;
	k->nframe = r->nframe;
	k->frames = r->info->frames;
	k->inflated = r->inflated;
	k->t = r->t;
	k->t_now = r->h->t_now;
	k->tid = r->tid;
	k->prev_tid = r->prev_tid;
	k->next_stack = r->next_stack;
	k->nmaps = r->h->nmaps;
	k->last_alloc = r->h->last_alloc;
	k->ntids = r->ntids;
	k->tids = malloc((r->ntids ? r->ntids : 1) * sizeof(*k->tids));
	err = k->tids ? tcount_copy(&k->counts, &r->counts) : -ENOMEM;
	if (!err)
		err = mark_sums(x, k, r->h);
	if (err) {
		mark_release(k);
		return err;
	}
	if (r->ntids)
		memcpy(k->tids, r->tids, r->ntids * sizeof(*k->tids));
	x->t_first = r->h->tot.t_first;
	/* The blocks of the marks so far: those freed since they lived at
	 * one (kept by the analysis), and the live ones, whose spans will
	 * come (at most as many as live now). */
	x->fixed += sizeof(*k) + (k->counts.mask + 1) * sizeof(*k->counts.e);
	x->bytes = x->fixed + (r->h->nspans + r->h->live.n) *
				 sizeof(struct kiln_hprof_span);
	kiln_hprof_mark(r->h);
	x->n++;
	return 0;
}

bool kiln_heaptrace_index_due(const struct kiln_heaptrace_stream *s)
{
	const struct kiln_heaptrace_index *x = s->index;

	return x && s->r.frame_off >= x->next_off && x->n < INDEX_MARKS &&
	       x->bytes <= INDEX_BUDGET;
}

int kiln_heaptrace_index_mark(struct kiln_heaptrace_stream *s)
{
	struct kiln_heaptrace_index *x = s->index;
	const struct reader *r = &s->r;

	if (r->frame_off < x->next_off || x->n >= INDEX_MARKS ||
	    !r->h || !r->h->started || x->bytes > INDEX_BUDGET)
		return 0;
	while (x->next_off <= r->frame_off)
		x->next_off += x->every;
	return mark_now(s);
}

int kiln_heaptrace_index_mark_end(struct kiln_heaptrace_stream *s)
{
	struct kiln_heaptrace_index *x = s->index;
	const struct reader *r = &s->r;

	/* Not twice at one place (a mark was just taken there). */
	if (!r->h || !r->h->started ||
	    (x->n && x->m[x->n - 1].off == r->frame_off))
		return 0;
	return mark_now(s);
}

int kiln_heaptrace_index_end(struct kiln_heaptrace_index *x,
			     struct kiln_hprof *h,
			     const struct kiln_heaptrace_info *info)
{
	size_t i;
	int err = kiln_hprof_spans(h, &x->spans, &x->nspans);

	if (err)
		return err;
	x->bytes = x->fixed + x->nspans * sizeof(*x->spans);

	x->info.version = info->version;
	x->info.pid = info->pid;
	x->info.ppid = info->ppid;
	x->info.start_realtime_ns = info->start_realtime_ns;
	x->info.sample_bytes = info->sample_bytes;
	x->info.cmdline = info->cmdline ? strdup(info->cmdline) : NULL;
	if (info->cmdline && !x->info.cmdline)
		return -ENOMEM;
	x->nstacks = (uint32_t)h->nsites;
	x->sites = calloc(h->nsites + 1, sizeof(*x->sites));
	x->pcs = malloc((h->npcs ? h->npcs : 1) * sizeof(*x->pcs));
	x->maps = calloc(h->nmaps + 1, sizeof(*x->maps));
	x->maps_len = calloc(h->nmaps + 1, sizeof(*x->maps_len));
	if (!x->sites || !x->pcs || !x->maps || !x->maps_len)
		return -ENOMEM;
	for (i = 1; i <= h->nsites; i++) {
		x->sites[i].pc0 = h->sites[i].pc0;
		x->sites[i].depth = h->sites[i].depth;
		x->sites[i].maps = h->sites[i].maps;
	}
	if (h->npcs)
		memcpy(x->pcs, h->pcs, h->npcs * sizeof(*x->pcs));
	for (i = 1; i <= h->nmaps; i++) {
		x->maps[i] = malloc(h->maps_len[i] + 1);
		if (!x->maps[i])
			return -ENOMEM;
		memcpy(x->maps[i], h->maps[i], h->maps_len[i]);
		x->maps[i][h->maps_len[i]] = '\0';
		x->maps_len[i] = h->maps_len[i];
		x->nmaps = i;
	}
	return 0;
}

/* Defines in h the stacks and maps the trace had defined at mark k, in
 * the order that gives each stack the maps version it had. */
static int define(struct kiln_hprof *h, const struct kiln_heaptrace_index *x,
		  const struct mark *k)
{
	uint32_t id;
	int err = 0;

	for (id = 1; id < k->next_stack && !err; id++) {
		const struct kiln_hprof_site *st = &x->sites[id];

		while (h->nmaps < st->maps && !err)
			err = kiln_hprof_add_maps(h, x->maps[h->nmaps + 1],
						  x->maps_len[h->nmaps + 1]);
		if (!err)
			err = kiln_hprof_add_stack(h, id, x->pcs + st->pc0, st->depth);
	}
	while (h->nmaps < k->nmaps && !err)
		err = kiln_hprof_add_maps(h, x->maps[h->nmaps + 1],
					  x->maps_len[h->nmaps + 1]);
	return err;
}

/* The blocks live at mark k into a new array *out of *n.  0 or -ENOMEM. */
static int live_at(const struct kiln_heaptrace_index *x, const struct mark *k,
		   struct kiln_hprof_block **out, size_t *n)
{
	uint32_t j = (uint32_t)(k - x->m);
	struct kiln_hprof_block *b;
	size_t i, c = 0;

	for (i = 0; i < x->nspans; i++)
		c += x->spans[i].first <= j && j <= x->spans[i].last;
	b = malloc((c ? c : 1) * sizeof(*b));
	if (!b)
		return -ENOMEM;
	*n = 0;
	for (i = 0; i < x->nspans; i++)
		if (x->spans[i].first <= j && j <= x->spans[i].last)
			b[(*n)++] = x->spans[i].b;
	*out = b;
	return 0;
}

/* Sets up s (new, windowed) to go on from mark k. */
static int resume_at(struct kiln_heaptrace_stream *s,
		     const struct kiln_heaptrace_index *x, const struct mark *k)
{
	struct reader *r = &s->r;
	struct kiln_hprof_block *live = NULL;
	size_t nlive = 0;
	int err;

	r->info->version = x->info.version;
	r->info->pid = x->info.pid;
	r->info->ppid = x->info.ppid;
	r->info->start_realtime_ns = x->info.start_realtime_ns;
	r->info->sample_bytes = x->info.sample_bytes;
	r->info->cmdline = x->info.cmdline ? strdup(x->info.cmdline) : NULL;
	r->info->frames = k->frames;
	r->h = kiln_hprof_new(x->info.sample_bytes);
	if (!r->h || (x->info.cmdline && !r->info->cmdline))
		return -ENOMEM;
	err = kiln_hprof_set_window(r->h, r->window[0], r->window[1]);
	if (!err)
		err = define(r->h, x, k);
	if (!err)
		err = live_at(x, k, &live, &nlive);
	if (!err)
		err = kiln_hprof_resume(r->h, x->t_first, k->t_now, live, nlive,
					k->last_alloc);
	free(live);
	if (!err)
		err = tcount_copy(&r->counts, &k->counts);
	if (err)
		return err;
	r->tids = malloc((k->ntids ? k->ntids : 1) * sizeof(*r->tids));
	if (!r->tids)
		return -ENOMEM;
	if (k->ntids)
		memcpy(r->tids, k->tids, k->ntids * sizeof(*r->tids));
	r->ntids = r->tids_alloc = k->ntids;
	r->have_magic = r->have_header = true;
	r->next_stack = k->next_stack;
	r->t = k->t;
	r->tid = k->tid;
	r->prev_tid = k->prev_tid;
	r->nframe = k->nframe;
	r->frame_off = k->off;
	r->inflated = k->inflated;
	return 0;
}

/* The time of mark k: ns after the first event. */
static uint64_t mark_t(const struct kiln_heaptrace_index *x, const struct mark *k)
{
	return k->t_now - x->t_first;
}

/* Whether a resumed analysis can define what mark k had. */
static bool usable(const struct kiln_heaptrace_index *x, const struct mark *k)
{
	return k->next_stack - 1 <= x->nstacks;
}

int kiln_heaptrace_index_resume(struct kiln_heaptrace_stream *s,
				const struct kiln_heaptrace_index *x,
				uint64_t t0, size_t *from)
{
	const struct mark *k = NULL;
	size_t i;
	int err;

	*from = 0;
	/* The last mark whose events all came before t0 (the analysis'
	 * time, which late events never pass, strictly before it). */
	for (i = 0; i < x->n; i++)
		if (mark_t(x, &x->m[i]) < t0 && usable(x, &x->m[i]))
			k = &x->m[i];
	if (!k || !s->r.window)
		return 0;
	err = resume_at(s, x, k);
	if (!err)
		*from = k->off;
	return err;
}

/*
 * Whether a heap of v bytes is a new peak after top.  Sampled, the sizes
 * are estimates, and the same heap added up in another order (a resumed
 * stretch puts its live blocks back in the table's order) may differ in
 * the last bits: such a tie is no new peak, as an exact one is not.
 */
static bool beats(double v, double top, bool sampled)
{
	return sampled ? v > top + top * 1e-9 : v > top;
}

/*
 * One stretch of a range's reading: the trace over [range[0], range[1])
 * from mark k (NULL: the start) up to byte `to` (the end: len) into *out,
 * finished; its reader's facts into *info (released by the caller).
 * With k inside the range, *p0 is the heap at the mark (its first peak
 * candidate).
 */
static int stretch(const char *data, size_t len, size_t to,
		   const struct kiln_heaptrace_index *x, const struct mark *k,
		   const uint64_t *range, kiln_heaptrace_progress_fn fn,
		   void *arg, struct kiln_hprof **out, double *p0,
		   struct kiln_heaptrace_info *info, struct kiln_diag *d)
{
	struct kiln_heaptrace_stream *s = kiln_heaptrace_stream_new(info, d);
	size_t used, from = k ? k->off : 0;
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	kiln_heaptrace_stream_progress(s, fn, arg, len);
	err = kiln_heaptrace_stream_window(s, range[0], range[1]);
	if (!err && k)
		err = resume_at(s, x, k);
	if (!err && p0)
		*p0 = s->r.h->tot.peak;
	if (!err)
		err = kiln_heaptrace_stream_feed(s, data + from, to - from,
						 to == len, &used);
	if (!err)
		err = kiln_heaptrace_stream_end(s, to, out);
	kiln_heaptrace_stream_free(s);
	return err;
}

int kiln_heaptrace_index_range(const char *data, size_t len,
			       const struct kiln_heaptrace_index *x,
			       const uint64_t *range,
			       kiln_heaptrace_progress_fn fn, void *arg,
			       struct kiln_hprof **out,
			       struct kiln_heaptrace_info *info,
			       struct kiln_diag *d)
{
	struct kiln_heaptrace_info i1 = { 0 }, i3 = { 0 };
	struct kiln_hprof *h1 = NULL, *h2 = NULL, *h3 = NULL;
	const struct mark *ms = NULL, *me = NULL, *a = NULL, *pk = NULL;
	double top, p0 = 0;
	size_t si = 0, ei = 0, i, j;
	int err;

	*out = NULL;
	memset(info, 0, sizeof(*info));
	/* ms: the first mark in the range (the events before it reach
	 * range[0]), me: the last one before range[1]; at least one whole
	 * stretch between them, or this is no faster. */
	for (i = 0; i < x->n; i++) {
		const struct mark *k = &x->m[i];

		if (!usable(x, k))
			break;
		if (!ms && mark_t(x, k) >= range[0]) {
			ms = k;
			si = i;
		}
		if (mark_t(x, k) < range[1]) {
			me = k;
			ei = i;
		}
	}
	if (!ms || !me || ei <= si)
		return 1;
	a = si ? &x->m[si - 1] : NULL;
	err = stretch(data, len, ms->off, x, a, range, fn, arg, &h1, NULL, &i1, d);
	if (!err)
		err = stretch(data, len, len, x, me, range, fn, arg, &h2, &p0, info,
			      d);
	if (!err)
		err = kiln_hprof_add_counts(h2, h1);
	/* The stretches between: their sums, and the first largest heap. */
	top = h1 ? h1->tot.peak : 0;
	for (i = si + 1; i <= ei && !err; i++) {
		const struct mark *k = &x->m[i];

		for (j = 0; j < k->nsums && !err; j++)
			err = kiln_hprof_add_site(h2, k->sums[j].id, k->sums[j].calls,
						  k->sums[j].bytes,
						  k->sums[j].temporary);
		if (beats(k->seg_peak, top, x->info.sample_bytes)) {
			top = k->seg_peak;
			pk = &x->m[i - 1];
		}
	}
	if (!err)
		kiln_hprof_add_totals(h2, &me->tot, &ms->tot);
	/* The peak: the first stretch to pass the ones before it; the last
	 * stretch's only if an event of its own made it (its heap at the
	 * mark, added up again, is no new peak). */
	if (!err && !(beats(h2->tot.peak, top, x->info.sample_bytes) &&
		      h2->tot.peak > p0)) {
		if (pk) {
			err = stretch(data, len, pk[1].off, x, pk, range, fn, arg,
				      &h3, NULL, &i3, d);
			if (!err)
				kiln_hprof_take_peak(h2, h3);
		} else if (h1) {
			kiln_hprof_take_peak(h2, h1);
		}
	}
	if (!err) {
		__atomic_add_fetch(&((struct kiln_heaptrace_index *)x)->fast, 1,
				   __ATOMIC_RELAXED);
		__atomic_add_fetch(&((struct kiln_heaptrace_index *)x)->skipped,
				   ei - si, __ATOMIC_RELAXED);
		*out = h2;
		h2 = NULL;
	}
	kiln_hprof_free(h1);
	kiln_hprof_free(h2);
	kiln_hprof_free(h3);
	kiln_heaptrace_info_release(&i1);
	kiln_heaptrace_info_release(&i3);
	if (err)
		kiln_heaptrace_info_release(info);
	return err;
}

void kiln_heaptrace_index_stats(const struct kiln_heaptrace_index *x,
				size_t *fast, size_t *skipped)
{
	*fast = __atomic_load_n(&x->fast, __ATOMIC_RELAXED);
	*skipped = __atomic_load_n(&x->skipped, __ATOMIC_RELAXED);
}
