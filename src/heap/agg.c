/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process heap aggregate of libkiln.so (heap stage): what the
 * heap profile dumps (KILN_HEAP / HEAPPROFILE), kiln_heap_write() and the
 * /debug/pprof/heap and /allocs endpoints are made of.  The writer thread
 * of trace.c feeds it every allocation and free it drains from the
 * threads' rings, with the writer's lock held: nothing here runs in a
 * hook.  Per stack id it keeps four counters (allocations and bytes so
 * far, blocks and bytes live now), estimates scaled by
 * 1/(1-exp(-size/R)) when sampling.  The writer's encoder
 * (format/heapenc.c) merges the threads' events in time order and tells
 * the size and stack of each block freed, so no table of blocks is kept
 * here.  See docs/heap.md, "Heap profiles".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heap/htrace.h"
#include "heap/heapint.h"
#include "profile/heapprof.h"

static struct kiln_htrace_counts *sites;	/* [0..nsites), by stack id */
static size_t nsites;
static uint64_t live_blocks;
static double alloc_total;		/* estimated bytes allocated */
static double next_dump;
static uint64_t interval;
static void (*on_interval)(void);
static bool agg_nomem;

/* The estimated allocations one reported block of `size` stands for. */
static double weight(uint64_t size)
{
	return kiln_heapprof_weight(kheap_sample, size);
}

static struct kiln_htrace_counts *site(uint32_t id)
{
	if (id >= nsites) {
		size_t n = nsites ? nsites : 1024, i;
		struct kiln_htrace_counts *s;

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

void kheap_agg_alloc(uint64_t size, uint32_t stack)
{
	struct kiln_htrace_counts *s = site(stack);
	double w = weight(size);

	if (!s)
		return;
	s->alloc_objects += w;
	s->alloc_space += w * (double)size;
	s->inuse_objects += w;
	s->inuse_space += w * (double)size;
	live_blocks++;
	alloc_total += w * (double)size;
	if (interval && on_interval && alloc_total >= next_dump) {
		next_dump = alloc_total + (double)interval;
		on_interval();
	}
}

void kheap_agg_free(uint64_t size, uint32_t stack)
{
	double w = weight(size);

	if (stack >= nsites)
		return;		/* its allocation found no memory */
	sites[stack].inuse_objects -= w;
	sites[stack].inuse_space -= w * (double)size;
	if (live_blocks)
		live_blocks--;
}

void kheap_agg_reset(void)
{
	free(sites);
	sites = NULL;
	nsites = 0;
	live_blocks = 0;
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

int kheap_agg_copy(struct kiln_htrace_snap *out)
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
	out->live_blocks = live_blocks;
	out->incomplete = agg_nomem;
	return 0;
}
