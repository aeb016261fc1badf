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
 * Memory: the live blocks of every mark (32 bytes each), within
 * INDEX_BUDGET; past it no more marks are taken (later ranges then start
 * at the last mark).  One more mark, whatever the budget, holds the
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

#define INDEX_MARKS 64
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
	struct kiln_hprof_block *live;
	size_t nlive;
};

struct kiln_heaptrace_index {
	struct mark *m;
	size_t n;
	size_t every, next_off, bytes;
	uint64_t t_first;
	/* What the trace defines, from the end of the analysis. */
	struct kiln_heaptrace_info info;	/* header fields, cmdline */
	uint32_t nstacks;			/* stacks 1..nstacks */
	struct kiln_hprof_site *sites;		/* pc0, depth, maps only */
	uint64_t *pcs;
	char **maps;				/* [1..nmaps] */
	size_t *maps_len;
	size_t nmaps;
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
	free(k->live);
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
	k->ntids = r->ntids;
	k->tids = malloc((r->ntids ? r->ntids : 1) * sizeof(*k->tids));
	err = k->tids ? tcount_copy(&k->counts, &r->counts) : -ENOMEM;
	if (!err)
		err = kiln_hprof_live_blocks(r->h, &k->live, &k->nlive);
	if (err) {
		mark_release(k);
		return err;
	}
	if (r->ntids)
		memcpy(k->tids, r->tids, r->ntids * sizeof(*k->tids));
	x->t_first = r->h->tot.t_first;
	x->bytes += k->nlive * sizeof(*k->live) + sizeof(*k) +
		    (k->counts.mask + 1) * sizeof(*k->counts.e);
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
			     const struct kiln_hprof *h,
			     const struct kiln_heaptrace_info *info)
{
	size_t i;

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

int kiln_heaptrace_index_resume(struct kiln_heaptrace_stream *s,
				const struct kiln_heaptrace_index *x,
				uint64_t t0, size_t *from)
{
	struct reader *r = &s->r;
	const struct mark *k = NULL;
	size_t i;
	int err;

	*from = 0;
	/* The last mark whose events all came before t0 (the analysis'
	 * time, which late events never pass, strictly before it). */
	for (i = 0; i < x->n; i++)
		if (x->m[i].t_now - x->t_first < t0 && x->m[i].next_stack - 1 <= x->nstacks)
			k = &x->m[i];
	if (!k || !r->window)
		return 0;
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
		err = kiln_hprof_resume(r->h, x->t_first, k->t_now, k->live, k->nlive);
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
	*from = k->off;
	return 0;
}
