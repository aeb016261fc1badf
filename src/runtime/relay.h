/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The relay (runtime stage): the one way a signal handler, or a hook that
 * must not block, has work done.  Handlers cannot write a file or take a
 * lock; they ask the relay, a single thread of kiln's ("kiln-relay",
 * started through kiln_rt_thread_start()), which runs the job's work
 * with the fork gate held busy (forkgate.h: no fork meanwhile).  Each part
 * sets the work of its jobs at load; the jobs are listed here so that
 * what can run on the relay is read in one place.
 */
#ifndef KILN_RUNTIME_RELAY_H
#define KILN_RUNTIME_RELAY_H

#include <stdbool.h>

enum kiln_relay_job {
	KILN_RELAY_CPU_TOGGLE,		/* cpu/envprof.c: CPUPROFILESIGNAL */
	KILN_RELAY_CPU_EXIT,		/* cpu/envprof.c: a fatal signal; write now */
	KILN_RELAY_HEAP_SIGNAL,		/* heap/dump.c: HEAPPROFILESIGNAL */
	KILN_RELAY_HEAP_INTERVAL,	/* heap/dump.c: an allocation interval */
	KILN_RELAY_JOBS
};

/*
 * Sets the work job runs (NULL: none) and starts the relay's thread if it
 * is not running.  Normal context.  0 or -errno (the thread could not
 * start: nothing is relayed).
 */
int kiln_relay_set(enum kiln_relay_job job, void (*work)(void));
/* Asks for job to run (several asks before it runs: once).
 * Async-signal-safe; never blocks. */
void kiln_relay_ask(enum kiln_relay_job job);
/*
 * Asks and waits until the relay has run job, at most timeout_ms.  true
 * if it ran.  Async-signal-safe (a fatal signal's handler waits so).
 */
bool kiln_relay_ask_wait(enum kiln_relay_job job, int timeout_ms);
/*
 * In a forked child, after every part's own fork hook (which clear the
 * jobs that the child must not run): the parent's thread is not the
 * child's; one is started if any job is still set.
 */
void kiln_relay_fork_child(void);

#endif
