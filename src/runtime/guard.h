/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocation guard (runtime stage): a per-thread count that, while
 * above zero, keeps the calling thread's allocations out of the heap
 * trace and the heap profile.  The malloc hooks (libkiln-malloc.so,
 * src/heap/hooks.c) set it while they record, so that what recording
 * allocates is not recorded (re-entrancy); kiln's own work on a program's
 * thread brackets itself with kiln_rt_quiet_begin()/_end(); kiln's own
 * threads hold it for good from their first step (runtime/threads.c), and
 * so do the threads they start.
 *
 * A private interface between libkiln.so, which defines it, and
 * libkiln-malloc.so, which reads it on every allocation: exported, with
 * the initial-exec TLS model (no lazy TLS allocation inside malloc).
 * Async-signal-safe; nestable.
 */
#ifndef KILN_RUNTIME_GUARD_H
#define KILN_RUNTIME_GUARD_H

__attribute__((visibility("default")))
extern __thread int kiln_rt_guard __attribute__((tls_model("initial-exec")));

static inline void kiln_rt_quiet_begin(void)
{
	kiln_rt_guard++;
}

static inline void kiln_rt_quiet_end(void)
{
	kiln_rt_guard--;
}

#endif
