/*
 * The heap profiler inside the profiled process (heap stage): malloc
 * interposition in libkiln.so (hooks.c) feeding a streamed trace
 * (trace.c) in the format of docs/heap-trace.md.  See docs/heap.md for the
 * design: per-thread lock-free byte rings filled by the hooks, a writer
 * thread of kiln's own that drains them every 100 ms into one zstd frame
 * and one write(2), stacks interned in the process.
 *
 * Environment (read once, when libkiln.so loads):
 *   KILN_HEAP_TRACE=PATH    stream the trace to PATH (children: PATH.PID)
 *   KILN_HEAP_SAMPLE=BYTES  sample one allocation per BYTES on average
 *                           (Poisson over bytes); 0 or unset: every one
 */
#ifndef KILN_HEAP_HEAP_H
#define KILN_HEAP_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Starts tracing when KILN_HEAP_TRACE is set (idempotent; called by the
 * library constructor in trace.c).  Logs why when it cannot start; the
 * program then runs untraced.  Not for hooks or signal handlers.
 */
void kiln_heap_init(void);

/* Whether a trace is being written by this process. */
bool kiln_heap_tracing(void);

/*
 * Counters of this process's trace so far (for tests and KILN_LOG=info):
 * events written to rings, events lost (rings full), stacks interned,
 * compressed bytes written.  Not async-signal-safe.
 */
struct kiln_heap_stats {
	uint64_t events, lost, stacks, bytes_written, frames;
};
void kiln_heap_stats(struct kiln_heap_stats *st);

/*
 * Brackets kiln's own work on a program's thread (registering it with the
 * CPU sampler, say): allocations in between are not traced.  Nestable.
 */
void kiln_heap_quiet_begin(void);
void kiln_heap_quiet_end(void);

#endif
