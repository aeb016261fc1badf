/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap analysis (profile stage): turns a time-ordered stream of heap
 * events (allocations and frees with call stacks, as the kiln heap trace
 * of docs/heap-trace.md records them) into totals, per-stack measures and
 * memory over time.
 *
 * Memory grows with the live blocks and the distinct stacks, not with the
 * number of events: events are consumed one by one.
 *
 * Measures (docs/kiln-heap.md):
 *  - calls, bytes allocated: every allocation (realloc counts as one);
 *  - peak: the largest heap size (live bytes) reached, when, and the bytes
 *    and blocks each stack had live at that moment;
 *  - leaked: what is live when the trace ends (at exit, with an `E`
 *    record);
 *  - temporary: an allocation freed by the very next heap event (no other
 *    allocation or free in between), as heaptrack counts them;
 *  - cross-thread: blocks freed by another thread than the one that
 *    allocated them.
 * With sampling (sample_bytes R > 0) a reported allocation of `size`
 * bytes stands for 1/(1-exp(-size/R)) allocations and size/(1-exp(-size/R))
 * bytes, so every measure is an unbiased estimate.
 *
 * Names: kiln_hprof_* is this analysis (run by kiln's commands and the
 * server); kiln_htrace_* (heap/htrace.h) is the tracer inside the
 * profiled process.
 */
#ifndef KILN_PROFILE_HPROF_H
#define KILN_PROFILE_HPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/livetab.h"

struct kiln_prof;

#define KILN_HPROF_SIZE_CLASSES 65

/* The size class of a block of `size` bytes: 0 for 0, else the number
 * of bits of size (k for sizes in [2^(k-1), 2^k)). */
static inline unsigned kiln_hprof_size_class(uint64_t size)
{
	return size ? 64u - (unsigned)__builtin_clzll(size) : 0;
}

enum kiln_hprof_kind {
	KILN_HPROF_ALLOC,	/* malloc & co. */
	KILN_HPROF_FREE,
	KILN_HPROF_MMAP,		/* anonymous mmap, counted as an allocation */
	KILN_HPROF_MUNMAP,
	KILN_HPROF_END,		/* the process exited normally */
};

/* One event.  t is CLOCK_MONOTONIC nanoseconds. */
struct kiln_hprof_ev {
	uint64_t t;
	uint64_t ptr;
	uint64_t size;		/* ALLOC, MMAP, MUNMAP */
	uint32_t tid;
	uint32_t stack;		/* ALLOC, MMAP: a stack id from add_stack */
	enum kiln_hprof_kind kind;
};

/* Whole-process totals; estimates (scaled) when sampling. */
struct kiln_hprof_totals {
	double calls;		/* allocations */
	double allocated;	/* bytes */
	double temporary;	/* allocations freed at once */
	double cross_thread;	/* frees by another thread */
	double peak;		/* bytes live at the peak */
	double peak_objs;	/* blocks live at the peak */
	uint64_t peak_t;	/* ns after the first event */
	double leaked;		/* bytes live at the end */
	double leaked_objs;	/* blocks live at the end */
	uint64_t reported;	/* allocation events seen (unscaled) */
	uint64_t frees;		/* free events seen */
	uint64_t lost;		/* events the process could not record */
	uint64_t late;		/* events earlier than ones already processed */
	uint64_t unknown_frees;	/* frees of blocks no event allocated */
	uint64_t t_first, t_last; /* ns, CLOCK_MONOTONIC */
	bool ended;		/* an END event was seen */
};

/*
 * One point of a stack's memory over time, for a bucket in which its live
 * bytes changed: at the moment the heap was largest within the bucket,
 * and at the bucket's end (which holds until its next point).
 */
struct kiln_hprof_pt {
	uint32_t bucket;
	float at_max, end;
};

/* Per-stack measures (estimates when sampling). */
struct kiln_hprof_site {
	uint32_t pc0, depth;	/* pcs: h->pcs[pc0 .. pc0+depth), leaf first */
	uint32_t maps;		/* maps version it was defined under, 0: none */
	double calls, bytes, temporary;
	double live_bytes, live_objs;	/* now */
	double peak_bytes, peak_objs;	/* at the peak, once finished */
	uint64_t snap;			/* see hprof.c: lazy peak snapshots */
	struct kiln_hprof_pt *hist;	/* changes of live_bytes by bucket */
	uint32_t nhist, hist_alloc;
	double bsnap;			/* live bytes at the bucket's max */
	uint64_t bsnap_epoch;
	uint32_t dirty;			/* bucket + 1 it changed in last */
};

struct kiln_hprof {
	uint64_t sample_bytes;		/* R; 0: every allocation */
	struct kiln_hprof_site *sites;	/* [1..nsites], by stack id */
	size_t nsites, sites_alloc;
	uint64_t *pcs;
	size_t npcs, pcs_alloc;
	char **maps;			/* [1..nmaps] /proc/self/maps texts */
	size_t *maps_len;
	size_t nmaps;
	struct kiln_hprof_totals tot;

	/* Memory over time: nbuckets buckets of bucket_ns from t_first;
	 * total_end[i] is the heap size at bucket i's end, total_max[i] the
	 * largest within it (the sum of the stacks' at_max values). */
	uint64_t bucket_ns;
	uint32_t nbuckets;
	double *total_end, *total_max;
	/* Allocations and temporary allocations made in each bucket
	 * (estimates when sampling), coarsened with the buckets. */
	double *calls_n, *temp_n;
	/* Allocations and bytes by size class: class 0 holds size 0,
	 * class k sizes in [2^(k-1), 2^k) (kiln_hprof_size_class()). */
	double size_calls[KILN_HPROF_SIZE_CLASSES];
	double size_bytes[KILN_HPROF_SIZE_CLASSES];

	/* Internal state (hprof.c). */
	struct kiln_livetab live;	/* of struct kiln_hprof_live */
	double live_bytes, live_objs;
	uint64_t epoch;
	uint64_t last_alloc;		/* ptr of the previous event if it was
					 * an allocation, else 0 */
	uint64_t t_now;
	uint64_t bucket_end;		/* the open bucket's end (t_first +
					 * nbuckets * bucket_ns) */
	size_t hist_total;
	uint64_t bepoch;		/* new maximum within the bucket */
	uint32_t *dirty;		/* stacks changed in the open bucket */
	size_t ndirty, dirty_alloc;
	bool started, finished;
	/* A time range (kiln_hprof_set_window): [w0, w1) ns after the
	 * first event; in_window once an event at or after w0 was seen. */
	bool windowed, in_window;
	uint64_t w0, w1;
	/* The largest heap size after an allocation since seg_peak was last
	 * set (a time index sets it to 0 at each of its marks). */
	double seg_peak;
	/* Time-index marks taken (kiln_hprof_mark()), and the blocks
	 * that lived at one of them and are freed (kiln_hprof_spans()). */
	uint32_t gen;
	struct kiln_hprof_span *spans;
	size_t nspans, spans_alloc;
};

/* A new analysis; sample_bytes is the trace's R (0: not sampled).  NULL
 * with errno set. */
struct kiln_hprof *kiln_hprof_new(uint64_t sample_bytes);
void kiln_hprof_free(struct kiln_hprof *h);

/*
 * Adds a /proc/self/maps text (copied); stacks added from now on are
 * symbolized against it.  0 or -ENOMEM.
 */
int kiln_hprof_add_maps(struct kiln_hprof *h, const char *text, size_t len);

/*
 * Defines stack `id` (ids start at 1 and grow by 1), pcs leaf first:
 * return addresses, pcs[0] in the allocation function's caller.
 * 0, -EINVAL (id out of sequence) or -ENOMEM.
 */
int kiln_hprof_add_stack(struct kiln_hprof *h, uint32_t id, const uint64_t *pcs,
			uint32_t depth);

/*
 * Restricts the measures to a time range: [t0, t1) nanoseconds after the
 * first event (before any event is added).  Then allocated, calls,
 * temporary and cross-thread count what happened in the range; peak is
 * the largest heap size within it (blocks allocated before t0 included:
 * they take room), and leaked is what was allocated in the range and is
 * still live at its end (the heap's growth over the range).  Events at
 * or after t1 are ignored.  For the whole run ([0, end]) the measures are
 * those without a range.  0 or -EINVAL (events already added, t0 >= t1).
 */
int kiln_hprof_set_window(struct kiln_hprof *h, uint64_t t0, uint64_t t1);

/*
 * Consumes one event.  Events should come in time order; an earlier one
 * is still processed (at the current time) and counted in tot.late.
 * 0, -EINVAL (an allocation with an undefined stack) or -ENOMEM.
 */
int kiln_hprof_event(struct kiln_hprof *h, const struct kiln_hprof_ev *ev);

/*
 * Consumes ev[0..n) in order, as n calls of kiln_hprof_event() would
 * (the same results), faster: the live blocks' table is read ahead.
 * Stops at the first error.
 */
int kiln_hprof_events(struct kiln_hprof *h, const struct kiln_hprof_ev *ev,
		      size_t n);

/* A live block as kiln_hprof_live_blocks() copies it out. */
struct kiln_hprof_block {
	uint64_t ptr, size;
	uint64_t t;		/* when it was allocated (CLOCK_MONOTONIC ns) */
	uint32_t stack, tid;
};

/*
 * The blocks live now, copied into a new array *out of *n (free() it):
 * what a time index of a trace keeps at each of its marks.  0 or -ENOMEM.
 */
int kiln_hprof_live_blocks(const struct kiln_hprof *h,
			   struct kiln_hprof_block **out, size_t *n);

/*
 * A block and the time-index marks it was live at, first..last (a mark is
 * numbered by kiln_hprof_mark(); UINT32_MAX: still live at the end).
 */
struct kiln_hprof_span {
	struct kiln_hprof_block b;
	uint32_t first, last;
};

/* The most marks kiln_hprof_mark() numbers (a block keeps its mark count
 * in 8 bits). */
#define KILN_HPROF_MAX_MARKS 255

/*
 * A time index's mark is taken now (after the events so far): returns its
 * number, from 0, at most KILN_HPROF_MAX_MARKS - 1.  From then on, a block live at a mark keeps, when freed,
 * which marks it lived at (one kiln_hprof_span, 40 bytes); so the blocks
 * live at each mark are kept once, whatever the number of marks, without
 * reading the live set at a mark.  Without marks, nothing is kept.
 */
uint32_t kiln_hprof_mark(struct kiln_hprof *h);

/*
 * Every block that lived at a mark: those freed since (kept as they went)
 * and those live now (last UINT32_MAX), into a new array *out of *n
 * (free() it); h keeps none after.  The blocks live at mark k are those
 * with first <= k <= last.  0 or -ENOMEM.
 */
int kiln_hprof_spans(struct kiln_hprof *h, struct kiln_hprof_span **out,
		     size_t *n);

/*
 * Starts a new windowed analysis (set_window done, the stacks the blocks
 * use defined, no event added) part way through a trace, from a mark of
 * its time index: t_first is the trace's first event, the blocks (as
 * kiln_hprof_live_blocks() gave them) are live at t_now (the time of the
 * last event before the mark), last_alloc the block the event before the
 * mark allocated (0: that event was no allocation).  The events after the
 * mark then follow.  t_now may be before the window or inside it: inside,
 * the window is entered at the mark (its heap is the first peak
 * candidate) and blocks allocated since the window's start count as
 * allocated in it.  The window's measures are those of reading the trace
 * from its start, but for what happened inside the window before the mark
 * (kiln_hprof_add_counts(), kiln_hprof_take_peak() add it).  0, -EINVAL
 * (not new, not windowed, t_now past the window, a stack not defined) or
 * -ENOMEM.
 */
int kiln_hprof_resume(struct kiln_hprof *h, uint64_t t_first, uint64_t t_now,
		      const struct kiln_hprof_block *b, size_t n,
		      uint64_t last_alloc);

/*
 * Adds src's allocations, bytes and temporary allocations (per stack and
 * in total) and its counts of frees, cross-thread frees, unknown frees,
 * late and lost events to h: src analysed another stretch of the same
 * trace over the same window.  Stacks src has that h has not are an
 * error.  0 or -EINVAL.
 */
int kiln_hprof_add_counts(struct kiln_hprof *h, const struct kiln_hprof *src);

/*
 * Adds to h's totals the counts of a stretch of the same trace: those of
 * `to` less those of `from` (totals of one analysis at the stretch's end
 * and start; from NULL: to's alone) -- allocations, bytes, temporary,
 * cross-thread and unknown frees, frees, late and lost events.
 */
void kiln_hprof_add_totals(struct kiln_hprof *h,
			   const struct kiln_hprof_totals *to,
			   const struct kiln_hprof_totals *from);

/*
 * Adds stack id's allocations, bytes and temporary allocations of a
 * stretch of the trace (a time index's sums) to h.  0 or -EINVAL (no such
 * stack).
 */
int kiln_hprof_add_site(struct kiln_hprof *h, uint32_t id, double calls,
			double bytes, double temporary);

/*
 * Makes the peak of src, finished, that of h, finished: the total, when,
 * and every stack's values at it.  For a range analysed in stretches,
 * the stretch that held the largest heap.
 */
void kiln_hprof_take_peak(struct kiln_hprof *h, const struct kiln_hprof *src);

/* Counts events the process could not record. */
void kiln_hprof_lost(struct kiln_hprof *h, uint64_t count);

/*
 * Ends the analysis: fixes the per-stack peak values and the leaks.
 * Events cannot be added afterwards.  Idempotent.
 */
void kiln_hprof_finish(struct kiln_hprof *h);

/*
 * Live bytes of site `id` in each of the h->nbuckets buckets, at the
 * moment the heap was largest within the bucket (so that the sites'
 * series add up to total_max), into out[0 .. nbuckets).  Only after
 * kiln_hprof_finish().
 */
void kiln_hprof_site_series(const struct kiln_hprof *h, uint32_t id,
			   double *out);

/* Which sample types kiln_hprof_prof() writes (profile/heapprof.h builds
 * the profile; kiln_heapprof_weight() is the sampling weight). */
enum kiln_hprof_layout {
	/* allocated/bytes, calls/count, peak/bytes, leaked/bytes,
	 * temporary/count; default allocated (what kiln top and kiln flame
	 * read from a trace). */
	KILN_HPROF_MEASURES,
	/* Go's heap profile: alloc_objects/count, alloc_space/bytes,
	 * inuse_objects/count, inuse_space/bytes (inuse: live at the end),
	 * then peak_objects/count, peak_space/bytes; default inuse_space. */
	KILN_HPROF_GO,
};

/*
 * Fills the empty profile p from a finished analysis: one sample per
 * stack with any non-zero measure (values rounded), mappings from the
 * maps texts, one location per pc at the pc minus 1 (inside the call
 * instruction), not yet symbolized (see kiln_sym_prof(), without
 * KILN_SYM_RETURN_ADDRS).  Period type space/bytes, period R (1 when not
 * sampled).  If sample_of is not NULL it gets h->nsites + 1 entries: the
 * sample index of each stack id, -1 for none (free() it).
 * 0 or -ENOMEM.
 */
int kiln_hprof_prof(const struct kiln_hprof *h, enum kiln_hprof_layout layout,
		   struct kiln_prof *p, long **sample_of);

#endif
