/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace encoder (format stage): turns the heap events that
 * libkiln.so's writer thread drains from the threads' rings (one sorted
 * run per thread and round) into the single time-ordered record stream of
 * docs/heap-trace.md (version 2), and builds its frames: records split
 * into columns (tags, sizes, stack ids, block numbers, the rest), which
 * zstd compresses far better than the records side by side.
 *
 * It merges the runs by time, keeps the live blocks (pointer -> thread,
 * block number, size, stack) so that a free is written as which block of
 * which thread it frees rather than an address, and writes time only when
 * it advanced by a tick.  The reader then needs no merge and no address
 * table, and the trace carries no pointers at all.
 *
 * Causality: a hook times an allocation after the real allocator returned
 * and puts it in its ring before the caller sees the pointer; it times a
 * free, and puts it, before the real free.  So an event that depends on
 * another (the free of a block, a new block at a freed address) is later
 * in time and was put after it.  The writer takes `limit`, the time just
 * before it starts draining the rings: an event drained with a time
 * before `limit` was preceded by the events it depends on, which were put
 * before it and so drained in this round or an earlier one.  Events at
 * or after `limit` wait for the next round.  Emitting exactly the events
 * before `limit`, in time order, is therefore causally consistent, and an
 * event put late (its thread preempted between timing and putting it)
 * only comes out of time order, never before what it depends on.
 *
 * Runs in the writer thread (allocates with malloc; kiln's own threads
 * are not traced).  Not thread-safe: one encoder, one caller at a time.
 */
#ifndef KILN_FORMAT_HEAPENC_H
#define KILN_FORMAT_HEAPENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/heapcols.h"
#include "util/buf.h"
#include "util/livetab.h"

/* A 'T' record is written when the time advanced by this much (the
 * timeline's resolution; the order of events is exact regardless). */
#define KILN_HENC_TICK_NS 100000ull

/* Records being built, by column.  Zeroed is empty. */
struct kiln_hcols {
	struct kiln_buf c[KILN_HCOL_N];
};

void kiln_hcols_release(struct kiln_hcols *f);
void kiln_hcols_reset(struct kiln_hcols *f);
/* Whether no record was added since the last reset. */
bool kiln_hcols_empty(const struct kiln_hcols *f);

/* Non-event records (docs/heap-trace.md).  Each returns 0 or -ENOMEM. */
int kiln_hcols_header(struct kiln_hcols *f, uint64_t pid, uint64_t ppid,
		      uint64_t realtime_ns, uint64_t sample_bytes,
		      const char *cmdline, size_t len);
int kiln_hcols_maps(struct kiln_hcols *f, const char *text, size_t len);
int kiln_hcols_stack(struct kiln_hcols *f, uint64_t id, const uint64_t *pcs,
		     size_t depth);
int kiln_hcols_name(struct kiln_hcols *f, uint64_t tid, const char *name,
		    size_t len);
int kiln_hcols_lost(struct kiln_hcols *f, uint64_t count);

/*
 * Appends one frame's contents to out: with `first`, the stream's magic
 * "KILNHEAP" and version; then the column table and the columns of
 * parts[0..n), each column the concatenation of the parts' (so parts[0]'s
 * records come first).  0 or -ENOMEM.
 */
int kiln_hcols_frame(const struct kiln_hcols *const *parts, size_t n,
		     bool first, struct kiln_buf *out);

/* Per-thread counters: tid -> allocations so far (open addressing). */
struct kiln_tcount {
	struct { uint32_t tid; uint64_t n; } *e;
	size_t mask, used;
	size_t last[2];		/* slots of the two threads asked last */
};

/* kiln_tcount_get() but for the thread asked last. */
uint64_t *kiln_tcount_find(struct kiln_tcount *m, uint32_t tid);

/* The counter of tid (0 when new), NULL on ENOMEM.  tid must not be 0.
 * Inline for the thread asked last: events come in runs of one thread. */
static inline uint64_t *kiln_tcount_get(struct kiln_tcount *m, uint32_t tid)
{
	if (m->e && m->e[m->last[0]].tid == tid)
		return &m->e[m->last[0]].n;
	return kiln_tcount_find(m, tid);
}
void kiln_tcount_release(struct kiln_tcount *m);

enum kiln_hev_kind {
	KILN_HEV_ALLOC,		/* a new block: ptr, size, stack */
	KILN_HEV_FREE,		/* ptr freed */
	KILN_HEV_END,		/* the process exits normally */
};

/* One event of one thread. */
struct kiln_hev {
	uint64_t t;		/* the caller's clock (kiln_henc_clock()) */
	uint64_t ptr;
	uint64_t size;		/* ALLOC (and FREE, as the callback sees it) */
	uint32_t stack;		/* ALLOC (and FREE, as the callback sees it) */
	uint32_t tid;
	uint32_t kind;		/* enum kiln_hev_kind */
	uint32_t epoch;		/* FREE, as the callback sees it: the
				 * encoder's epoch when the block was made */
};

/* A live block. */
struct kiln_henc_blk {
	uint64_t ptr;		/* 0: empty slot */
	uint64_t size;
	uint64_t num;		/* its thread's allocations before it */
	uint32_t tid, stack;
	uint32_t epoch;
};

struct kiln_henc {
	struct kiln_livetab live;	/* of struct kiln_henc_blk */
	struct kiln_tcount counts;	/* allocations per thread */
	uint64_t t_mark;		/* time of the last 'T' record (ns) */
	/* The events' clock -> CLOCK_MONOTONIC ns (kiln_henc_clock()):
	 * ns = c_ns + (t - c_raw) * c_mult / 2^32; identity by default. */
	uint64_t c_raw, c_ns, c_mult;
	/* Events before this raw time need no 'T' (0: look): the time
	 * is converted only when a tick may have passed. */
	uint64_t raw_next;
	uint32_t tid;			/* thread of the last event, 0: none */
	uint32_t prev_tid;		/* the thread before it */
	uint64_t tick_ns;		/* KILN_HENC_TICK_NS; 1: every time */
	uint32_t epoch;			/* the caller's; blocks remember it */
	/* Events waiting: sorted runs, back to back in ev. */
	struct kiln_hev *ev, *spare;
	size_t nev, ev_alloc, spare_alloc;
	size_t *runs;			/* run i: [runs[i], runs[i+1] or nev) */
	size_t nruns, runs_alloc;
	/* Counts. */
	uint64_t unknown_frees;		/* frees of blocks never seen */
	uint64_t reused;		/* allocations at a live address */
};

/* An empty encoder whose tick is KILN_HENC_TICK_NS. */
void kiln_henc_init(struct kiln_henc *e);
/* Frees everything; e can be initialised again. */
void kiln_henc_release(struct kiln_henc *e);

/*
 * The events' times are not ns but a raw clock (the TSC): from now on an
 * event time t is written as CLOCK_MONOTONIC ns by the line through
 * (raw0, ns0) and (raw1, ns1), two readings of both clocks (raw1 > raw0,
 * ns1 >= ns0; the caller passes the previous segment's end as the next
 * one's start, so that times stay continuous and monotonic across
 * segments).  raw1 <= raw0 keeps the slope and moves the anchor.  Never
 * called: times are ns already.
 */
void kiln_henc_clock(struct kiln_henc *e, uint64_t raw0, uint64_t ns0,
		     uint64_t raw1, uint64_t ns1);
/* Moves the line's anchor to raw time raw, along the line (same slope):
 * for when no good reading of both clocks could be had. */
void kiln_henc_clock_at(struct kiln_henc *e, uint64_t raw);
/* The ns of raw time t (kiln_henc_clock()). */
uint64_t kiln_henc_ns(const struct kiln_henc *e, uint64_t t);

/*
 * Room for n more events of a new run at the end of the waiting ones;
 * NULL on ENOMEM.  The caller fills some of them, in time order, and
 * calls kiln_henc_commit() with how many.
 */
struct kiln_hev *kiln_henc_reserve(struct kiln_henc *e, size_t n);
/* Closes the run of the `used` events filled after kiln_henc_reserve(). */
int kiln_henc_commit(struct kiln_henc *e, size_t used);

/*
 * Called for each event as it is emitted.  For a free of a known block,
 * ev->size, ev->stack and ev->epoch are the block's; a free of an unknown
 * block is not reported.  An allocation at an address still live is
 * preceded by a free of the old block (its free was never seen).
 */
typedef void kiln_henc_fn(void *arg, const struct kiln_hev *ev);

/*
 * Emits every waiting event earlier than `limit` (UINT64_MAX: all) in
 * time order (at equal times frees first): its records are added to out
 * (NULL: no trace, only fn), and fn (may be NULL) sees it.  The later
 * events wait, as one run.  0 or -ENOMEM (the events not yet emitted
 * still wait).
 */
int kiln_henc_emit(struct kiln_henc *e, uint64_t limit, struct kiln_hcols *out,
		   kiln_henc_fn *fn, void *arg);

#endif
