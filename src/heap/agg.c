/*
 * The in-process heap aggregate of libkiln.so (heap stage): what the
 * heap profile dumps (KILN_HEAP / HEAPPROFILE), kiln_heap_write() and the
 * /debug/pprof/heap and /allocs endpoints are made of.  The writer thread
 * of trace.c feeds it every allocation and free it drains from the
 * threads' rings, with the writer's lock held: nothing here runs in a
 * hook.  Per stack id it keeps four counters (allocations and bytes so
 * far, blocks and bytes live now), estimates scaled by
 * 1/(1-exp(-size/R)) when sampling, and a table of the live blocks
 * (pointer -> stack, size, time) so that a free is charged to the stack
 * that allocated the block.  See docs/heap.md, "Heap profiles".
 *
 * The rings of different threads are drained one after the other, so a
 * free may arrive before the allocation it frees (another thread freed
 * the block), and an allocation before the free of the block that had
 * the same address.  Times sort it out: a live block older than a new
 * allocation at its address was freed meanwhile; a free older than the
 * live block at its address is stale; a free of an unknown block waits
 * (an "orphan") for its allocation for a second.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap.h"
#include "heap/heapint.h"

#define ORPHAN_NS 1000000000ull		/* an unmatched free waits this long */
#define ORPHAN_MAX (1u << 16)		/* ... and at most this many wait */

struct blk {
	uint64_t ptr;			/* 0: empty slot */
	uint64_t t;			/* time of the allocation (or free) */
	uint64_t size;
	uint32_t stack;
};

struct ptab {
	struct blk *e;
	size_t mask, n;
};

static struct kiln_heap_counts *sites;	/* [0..nsites), by stack id */
static size_t nsites;
static struct ptab live, orphans;
static uint64_t orphan_sweep;
static double alloc_total;		/* estimated bytes allocated */
static double next_dump;
static uint64_t interval;
static void (*on_interval)(void);
static bool agg_nomem;

static size_t slot(uint64_t ptr, size_t mask)
{
	ptr ^= ptr >> 33;
	ptr *= 0xff51afd7ed558ccdULL;
	ptr ^= ptr >> 33;
	return (size_t)ptr & mask;
}

static struct blk *pt_find(const struct ptab *t, uint64_t ptr)
{
	size_t i;

	if (!t->e)
		return NULL;
	for (i = slot(ptr, t->mask); t->e[i].ptr; i = (i + 1) & t->mask)
		if (t->e[i].ptr == ptr)
			return &t->e[i];
	return NULL;
}

/* Removes e (linear probing: later entries of the run move back). */
static void pt_del(struct ptab *t, struct blk *e)
{
	size_t i = (size_t)(e - t->e), j = i;

	t->e[i].ptr = 0;
	t->n--;
	for (;;) {
		size_t home;

		j = (j + 1) & t->mask;
		if (!t->e[j].ptr)
			return;
		home = slot(t->e[j].ptr, t->mask);
		/* Move j back to i unless its home lies in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			t->e[i] = t->e[j];
			t->e[j].ptr = 0;
			i = j;
		}
	}
}

static int pt_grow(struct ptab *t)
{
	size_t cap = t->e ? (t->mask + 1) * 2 : 4096, i;
	struct blk *e = calloc(cap, sizeof(*e)), *old = t->e;
	size_t oldcap = t->e ? t->mask + 1 : 0;

	if (!e)
		return -ENOMEM;
	t->e = e;
	t->mask = cap - 1;
	for (i = 0; i < oldcap; i++) {
		size_t k;

		if (!old[i].ptr)
			continue;
		for (k = slot(old[i].ptr, t->mask); e[k].ptr; k = (k + 1) & t->mask)
			;
		e[k] = old[i];
	}
	free(old);
	return 0;
}

/* Adds a block known to be absent.  0 or -ENOMEM. */
static int pt_add(struct ptab *t, const struct blk *b)
{
	size_t i;

	if ((t->n + 1) * 2 > (t->e ? t->mask + 1 : 0) && pt_grow(t))
		return -ENOMEM;
	for (i = slot(b->ptr, t->mask); t->e[i].ptr; i = (i + 1) & t->mask)
		;
	t->e[i] = *b;
	t->n++;
	return 0;
}

static void pt_release(struct ptab *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* The estimated allocations one reported block of `size` stands for. */
static double weight(uint64_t size)
{
	double p;

	if (!kheap_sample)
		return 1.0;
	p = -expm1(-(double)size / (double)kheap_sample);
	return p > 0 ? 1.0 / p : 1.0;
}

static struct kiln_heap_counts *site(uint32_t id)
{
	if (id >= nsites) {
		size_t n = nsites ? nsites : 1024, i;
		struct kiln_heap_counts *s;

		while (n <= id)
			n *= 2;
		s = realloc(sites, n * sizeof(*s));
		if (!s) {
			agg_nomem = true;
			return NULL;
		}
		memset(s + nsites, 0, (n - nsites) * sizeof(*s));
		for (i = nsites; i < n; i++)
			s[i].stack = (uint32_t)i;
		sites = s;
		nsites = n;
	}
	return &sites[id];
}

static void unlive(const struct blk *b)
{
	struct kiln_heap_counts *s = b->stack < nsites ? &sites[b->stack] : NULL;
	double w = weight(b->size);

	if (s) {
		s->inuse_objects -= w;
		s->inuse_space -= w * (double)b->size;
	}
}

void kheap_agg_alloc(uint64_t t, uint64_t ptr, uint64_t size, uint32_t stack)
{
	struct kiln_heap_counts *s = site(stack);
	struct blk *e, b = { ptr, t, size, stack };
	double w = weight(size);

	if (!s)
		return;
	s->alloc_objects += w;
	s->alloc_space += w * (double)size;
	alloc_total += w * (double)size;
	if (interval && on_interval && alloc_total >= next_dump) {
		next_dump = alloc_total + (double)interval;
		on_interval();
	}
	e = pt_find(&orphans, ptr);
	if (e && e->t >= t) {
		/* Its free came first, from another thread's ring. */
		pt_del(&orphans, e);
		return;
	}
	e = pt_find(&live, ptr);
	if (e) {
		if (e->t > t)
			return;	/* freed before the block live there now */
		/* The block there was freed; that free comes later (stale). */
		unlive(e);
		pt_del(&live, e);
	}
	if (pt_add(&live, &b)) {
		agg_nomem = true;
		return;
	}
	s->inuse_objects += w;
	s->inuse_space += w * (double)size;
}

static void sweep_orphans(uint64_t now)
{
	size_t i;

	if (!orphans.e)
		return;
	for (i = 0; i <= orphans.mask;) {
		if (orphans.e[i].ptr && orphans.e[i].t + ORPHAN_NS < now)
			pt_del(&orphans, &orphans.e[i]);	/* i again */
		else
			i++;
	}
}

void kheap_agg_free(uint64_t t, uint64_t ptr)
{
	struct blk *e = pt_find(&live, ptr), o = { ptr, t, 0, 0 };

	if (e && e->t <= t) {
		unlive(e);
		pt_del(&live, e);
		return;
	}
	/* A block allocated before profiling started, or whose allocation
	 * is still in another thread's ring. */
	if (t > orphan_sweep + ORPHAN_NS) {
		sweep_orphans(t);
		orphan_sweep = t;
	}
	e = pt_find(&orphans, ptr);
	if (e) {
		if (e->t < t)
			e->t = t;
		return;
	}
	if (orphans.n < ORPHAN_MAX && pt_add(&orphans, &o))
		agg_nomem = true;
}

void kheap_agg_reset(void)
{
	free(sites);
	sites = NULL;
	nsites = 0;
	pt_release(&live);
	pt_release(&orphans);
	alloc_total = 0;
	next_dump = (double)interval;
	agg_nomem = false;
}

void kheap_agg_interval(uint64_t bytes, void (*fn)(void))
{
	interval = bytes;
	on_interval = fn;
	next_dump = alloc_total + (double)bytes;
}

int kheap_agg_copy(struct kiln_heap_snap *out)
{
	size_t i, n = 0;

	out->sites = NULL;
	out->n = 0;
	for (i = 0; i < nsites; i++)
		if (sites[i].alloc_objects != 0 || sites[i].inuse_objects != 0)
			n++;
	if (!n)
		return 0;
	out->sites = malloc(n * sizeof(*out->sites));
	if (!out->sites)
		return -ENOMEM;
	for (i = 0; i < nsites; i++)
		if (sites[i].alloc_objects != 0 || sites[i].inuse_objects != 0)
			out->sites[out->n++] = sites[i];
	out->live_blocks = live.n;
	out->incomplete = agg_nomem;
	return 0;
}
