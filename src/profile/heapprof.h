/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap counts as a pprof heap profile (profile stage): the one builder of
 * heap profiles, used on both sides of the trace: in the profiled process
 * by heap/dump.c (kiln_htrace_prof(): the aggregate's snapshot, for
 * KILN_HEAP dumps, kiln_heap_write() and /debug/pprof/heap) and by the
 * analysis of a trace, profile/hprof.c (kiln_hprof_prof(): kiln heap,
 * top, flame, convert, serve).  Also the one sampling weight: a reported
 * allocation of `size` bytes stands for 1/(1-exp(-size/R)) allocations.
 *
 * Period type space/bytes, period R (1 when not sampled); one sample per
 * stack whose rounded values are not all 0; one location per return
 * address at the address minus 1 (inside the call instruction), in the
 * mapping of the given table, not symbolized.
 */
#ifndef KILN_PROFILE_HEAPPROF_H
#define KILN_PROFILE_HEAPPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_prof;
struct kiln_maptab;

/*
 * The estimated count that one reported allocation of `size` bytes stands
 * for under sampling rate R (its bytes: size times that): 1 when R is 0.
 */
double kiln_heapprof_weight(uint64_t R, uint64_t size);

/* Which sample types the profile has. */
enum kiln_heapprof_layout {
	/* Go's heap profile: alloc_objects/count, alloc_space/bytes,
	 * inuse_objects/count, inuse_space/bytes; default inuse_space
	 * (alloc_space with `allocs`). */
	KILN_HEAPPROF_GO,
	/* The same, then peak_objects/count, peak_space/bytes. */
	KILN_HEAPPROF_GO_PEAK,
	/* allocated/bytes, calls/count, peak/bytes, leaked/bytes (inuse),
	 * temporary/count; default allocated. */
	KILN_HEAPPROF_MEASURES,
};

/* One stack's counts (estimates when sampling); a layout takes its own. */
struct kiln_heapprof_counts {
	double alloc_objects, alloc_space;	/* allocations, bytes */
	double inuse_objects, inuse_space;	/* live (at the end) */
	double peak_objects, peak_space;	/* live at the peak */
	double temporary;			/* allocations freed at once */
};

/* A profile being built (caller-embedded; kiln_heapprof_release()). */
struct kiln_heapprof {
	struct kiln_prof *p;
	enum kiln_heapprof_layout layout;
	uint32_t *locs;
	size_t locs_alloc;
};

/*
 * Starts building into the empty profile p (still the caller's): sample
 * types, default type, period type and period R.  The caller sets times
 * and mappings next.  0 or -errno.
 */
int kiln_heapprof_init(struct kiln_heapprof *b, struct kiln_prof *p,
		       enum kiln_heapprof_layout layout, bool allocs,
		       uint64_t sample_bytes);

/*
 * Adds stack pcs (depth return addresses, leaf first) with counts c, its
 * locations in the mappings of maps.  *index gets the sample index, or -1
 * when every value rounds to 0 (no sample).  0 or -ENOMEM (p's own
 * failures are kiln_prof_error()'s).
 */
int kiln_heapprof_add(struct kiln_heapprof *b,
		      const struct kiln_heapprof_counts *c, const uint64_t *pcs,
		      uint32_t depth, const struct kiln_maptab *maps, long *index);

/* Frees the builder's memory (not the profile). */
void kiln_heapprof_release(struct kiln_heapprof *b);

#endif
