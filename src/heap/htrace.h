/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap profiler inside the profiled process (heap stage): malloc
 * interposition in libkiln.so (hooks.c) feeding a streamed trace
 * (trace.c) in the format of docs/heap-trace.md.  See docs/heap.md for the
 * design: per-thread lock-free byte rings filled by the hooks, a writer
 * thread of kiln's own that drains them every 100 ms into one zstd frame
 * and one write(2), stacks interned in the process.
 *
 * The same events also feed an in-process aggregate (agg.c) when heap
 * profiling is on (KILN_HEAP / HEAPPROFILE, the HTTP server, the API):
 * per stack, allocations and live blocks, for pprof heap profiles.
 *
 * Environment (read once, when libkiln.so loads):
 *   KILN_HEAP_TRACE=PATH    stream the trace to PATH (children: PATH.PID)
 *   KILN_HEAP_SAMPLE=BYTES  sample one allocation per BYTES on average
 *                           (Poisson over bytes); 0: every one; unset:
 *                           every one with a trace, else 524288
 *
 * Names: kiln_htrace_* runs in the profiled process (this folder);
 * kiln_hprof_* (profile/hprof.h) is the analysis that kiln's commands run
 * on a trace.  The public kiln_heap_start()/kiln_heap_write() of
 * include/kiln/kiln.h call into this header.
 */
#ifndef KILN_HEAP_HTRACE_H
#define KILN_HEAP_HTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/env.h"

struct kiln_prof;

/*
 * Starts tracing when KILN_HEAP_TRACE is set (idempotent; called by the
 * library constructor in trace.c).  Logs why when it cannot start; the
 * program then runs untraced.  Not for hooks or signal handlers.
 */
void kiln_htrace_init(void);

/* Whether a trace is being written by this process. */
bool kiln_htrace_tracing(void);

/*
 * Counters of this process's trace so far (for tests and KILN_LOG=info):
 * events written to rings, events lost (rings full), stacks interned,
 * compressed bytes written.  Not async-signal-safe.
 */
struct kiln_htrace_stats {
	uint64_t events, lost, stacks, bytes_written, frames;
};
void kiln_htrace_stats(struct kiln_htrace_stats *st);


/*
 * Turns heap profiling on: the aggregate below is kept from now on.
 * Starts the hooks and the writer if no trace runs (sampling at
 * KILN_HEAP_SAMPLE, default KILN_HEAP_DEFAULT_SAMPLE).  Idempotent and
 * thread-safe.  0, or -errno when the profiler cannot start (logged;
 * -ENOTSUP: the malloc interposer is not loaded).
 * Not for hooks or signal handlers.
 */
int kiln_htrace_profile_start(void);

/*
 * Whether the malloc interposer (libkiln-malloc.so) is in the process:
 * without it heap profiling cannot start (-ENOTSUP, logged with the fix).
 */
bool kiln_htrace_available(void);

/* Whether heap profiling is on (the aggregate is kept). */
bool kiln_htrace_profiling(void);

/*
 * Stops recording for good (the process exits): the writer drains the
 * rings, ends the trace and exits; waits at most 2 s.  Only the process
 * that started it does anything.  Idempotent.
 */
void kiln_htrace_stop(void);

/*
 * kiln_htrace_exit_flush() and kiln_htrace_exec_flush(), libkiln/life.c's hooks:
 * the process ends without its destructors (_exit, _Exit: a forked
 * snapshot child, a shell): the writer drains every thread, writes the
 * end record and stops (2 s at most), as at a normal exit; the process
 * is about to exec: the writer's lock is taken (2 s at most) and
 * everything the threads recorded is written, without the end record;
 * tracing goes on (if exec fails).  The new image, same pid, keeps this
 * trace as PATH.old (docs/agent.md) and starts its own.  Only the process
 * that writes the trace does anything (never a vfork child).
 */

/* One stack's counters: estimates when sampling, exact otherwise. */
struct kiln_htrace_counts {
	uint32_t stack;			/* stack id (kiln_htrace_stack) */
	double alloc_objects, alloc_space;	/* since profiling started */
	double inuse_objects, inuse_space;	/* live now */
};

/* A snapshot of the aggregate (kiln_htrace_snap_take). */
struct kiln_htrace_snap {
	struct kiln_htrace_counts *sites;	/* stacks with any count, malloc'ed */
	size_t n;
	uint64_t sample_bytes;		/* R, 0: every allocation */
	int64_t time_nanos;		/* CLOCK_REALTIME when taken */
	size_t live_blocks;		/* blocks followed */
	bool incomplete;		/* memory ran out: counts are low */
};

/*
 * Drains every thread's pending events into the aggregate and copies it
 * to *out (release with kiln_htrace_snap_release).  0, -ENOENT (heap
 * profiling is off) or -ENOMEM.  Thread-safe; kiln's own allocations in
 * it are not profiled.
 */
int kiln_htrace_snap_take(struct kiln_htrace_snap *out);
void kiln_htrace_snap_release(struct kiln_htrace_snap *s);

/*
 * Stack id's return addresses, leaf first (pcs[0]: in the allocation
 * function's caller); *depth receives their number.  NULL for an unknown
 * id.  The memory stays valid for the life of the process.
 */
const uint64_t *kiln_htrace_stack(uint32_t id, uint32_t *depth);

/*
 * Has fn called (from the writer thread, with its lock held: fn must only
 * signal someone, e.g. write(2) to a pipe) each time another `bytes`
 * bytes were allocated (estimated when sampling).  0 turns it off.
 */
void kiln_htrace_on_interval(uint64_t bytes, void (*fn)(void));

/* ---- heap profiles of this process (dump.c) ---- */

struct kiln_htrace_snap;

/*
 * A pprof heap profile of snapshot now, or of now minus base (a
 * difference over time) when base is not NULL: sample types
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes, period type space/bytes, default inuse_space (or
 * alloc_space with allocs), symbolized.  *out is the caller's.
 * 0 or -errno.
 */
int kiln_htrace_prof(const struct kiln_htrace_snap *now,
			 const struct kiln_htrace_snap *base, bool allocs,
			 struct kiln_prof **out);

/*
 * Starts heap profiling if it is off, takes a snapshot and writes it as
 * gzipped pprof to path (atomically).  0 or -errno.
 */
int kiln_htrace_write(const char *path);

/* ---- hooks libkiln/life.c calls, in the order it states ---- */

void kiln_htrace_dump_load(void);		/* dump.c: KILN_HEAP dumps */
void kiln_htrace_load(void);		/* trace.c: hooks, KILN_HEAP_TRACE */
void kiln_htrace_fini(void);		/* the end of the heap trace */
void kiln_htrace_dump_fini(void);		/* the last heap dump */
void kiln_htrace_exit_flush(void);	/* trace.c: the trace's rest, its end */
void kiln_htrace_exec_flush(void);	/* trace.c: the trace so far */
/* trace.c: before a dlclose(): the maps (the library still mapped) and
 * the stacks so far, written now, so that the library's frames are named
 * when the trace is read. */
void kiln_htrace_dlclose_flush(void);
void kiln_htrace_dump_before_exec(void);	/* dump.c: the image's last dump */
void kiln_htrace_fork_prepare(void);	/* trace.c: tables consistent */
void kiln_htrace_fork_parent(void);
void kiln_htrace_fork_child(void);
void kiln_htrace_dump_fork_child(void);	/* PREFIX.PID dumps of the child's */

#endif
