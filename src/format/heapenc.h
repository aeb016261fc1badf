/*
 * The kiln heap trace encoder (format stage): turns the heap events that
 * libkiln.so's writer thread drains from the threads' rings (one sorted
 * run per thread and round) into the single time-ordered record stream of
 * docs/heap-trace.md (version 2).
 *
 * It merges the runs by time, keeps the live blocks (pointer -> block
 * number, size, stack) so that a free is written as the number of the
 * block it frees rather than an address, and writes time only when it
 * advanced by KILN_HENC_TICK_NS.  The reader then needs no merge and no
 * address table, and the trace carries no pointers at all.
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

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define KILN_HEAPTRACE_VERSION 2
/* A 'T' record is written when the time advanced by this much (the
 * timeline's resolution; order within a tick is still exact). */
#define KILN_HENC_TICK_NS 100000ull

enum kiln_hev_kind {
	KILN_HEV_ALLOC,		/* a new block: ptr, size, stack */
	KILN_HEV_FREE,		/* ptr freed */
	KILN_HEV_END,		/* the process exits normally */
};

/* One event of one thread. */
struct kiln_hev {
	uint64_t t;		/* CLOCK_MONOTONIC ns */
	uint64_t ptr;
	uint64_t size;		/* ALLOC (and FREE, as the callback sees it) */
	uint64_t num;		/* the block's number, as the callback sees it */
	uint32_t stack;		/* ALLOC (and FREE, as the callback sees it) */
	uint32_t tid;
	uint32_t kind;		/* enum kiln_hev_kind */
};

/* A live block. */
struct kiln_henc_blk {
	uint64_t ptr;		/* 0: empty slot */
	uint64_t num;		/* its number: the A records before it */
	uint64_t size;
	uint32_t stack;
};

struct kiln_henc {
	/* Live blocks, open addressing by pointer. */
	struct kiln_henc_blk *live;
	size_t mask, nlive;
	uint64_t nblocks;		/* A records written so far */
	uint64_t t_mark;		/* time of the last 'T' record */
	uint32_t tid;			/* thread of the last event, 0: none */
	uint32_t prev_tid;		/* the thread before it */
	uint64_t tick_ns;		/* KILN_HENC_TICK_NS; 1: every time */
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
 * Room for n more events of a new run at the end of the waiting ones;
 * NULL on ENOMEM.  The caller fills some of them, in time order, and
 * calls kiln_henc_commit() with how many.
 */
struct kiln_hev *kiln_henc_reserve(struct kiln_henc *e, size_t n);
/* Closes the run of the `used` events filled after kiln_henc_reserve(). */
int kiln_henc_commit(struct kiln_henc *e, size_t used);

/*
 * Called for each event as it is emitted, with ev->num the block's number
 * (from 0, in order of allocation).  For a free of a known block,
 * ev->size and ev->stack are the block's; a free of an unknown block is
 * not reported.  An allocation at an address still live is preceded by a
 * free of the old block (its free was never seen).
 */
typedef void kiln_henc_fn(void *arg, const struct kiln_hev *ev);

/*
 * Emits every waiting event earlier than `limit` (UINT64_MAX: all) in
 * time order (at equal times frees first): its records are appended to
 * out (NULL: no trace, only fn), and fn (may be NULL) sees it.  The
 * later events wait, as one run.  0 or -ENOMEM (the events not yet
 * emitted still wait).
 */
int kiln_henc_emit(struct kiln_henc *e, uint64_t limit, struct kiln_buf *out,
		   kiln_henc_fn *fn, void *arg);

#endif
