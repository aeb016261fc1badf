/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Following a running process's threads (session stage), for -p: `kiln
 * record` and `kiln stat` share it.
 *
 * A process's threads are found by listing /proc/PID/task; each thread
 * not yet seen gets the capture stage's events (inherited: they follow
 * the threads it starts).  A thread started by a thread whose events are
 * open inherited them, and the capture stage knows it from its FORK
 * record (kiln_perf_thread_covered()): it is not opened again.  A thread
 * started by one not yet opened has nothing, and neither has anything it
 * starts: the listing is repeated until nothing is new, and again while
 * the session runs (kiln_follow_fresh() says when soon).
 */
#ifndef KILN_SESSION_FOLLOW_H
#define KILN_SESSION_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture/perf.h"

/* What the caller does around a listing. */
struct kiln_follow_ops {
	/* Before each listing: the records read (the FORK records say
	 * which threads inherited events).  May be NULL. */
	void (*before)(void *ctx);
	/* After the capture events were opened on thread tid of pid: the
	 * caller's own (counters, names).  0 or -errno (-ESRCH: the thread
	 * ended, not an error).  May be NULL. */
	int (*opened)(void *ctx, pid_t pid, pid_t tid);
	/* After a rescan's listing of pid that opened threads (their names
	 * to learn).  May be NULL. */
	void (*listed)(void *ctx, pid_t pid);
	/* Whether thread tid already has the caller's events (inherited);
	 * NULL: the capture stage's events (kiln_perf_thread_covered()). */
	bool (*has)(void *ctx, pid_t tid);
	void *ctx;
};

struct kiln_follow;

/* For npids processes (pids, not copied: the caller keeps them), opening
 * s's events (not owned; made with kiln_perf_one_event_per_thread()).
 * s NULL: no events, only the caller's; then each process is listed once
 * (a thread listed later may have inherited the caller's) and
 * kiln_follow_rescan() does nothing.  NULL with errno set. */
struct kiln_follow *kiln_follow_new(struct kiln_perf *s, const pid_t *pids,
				    int npids, const struct kiln_follow_ops *ops);
void kiln_follow_free(struct kiln_follow *f);

/*
 * Lists process i's threads until nothing is new (16 times at most: a
 * process that starts threads all the time always has new ones), opening
 * the new ones.  *any: whether one was opened.  0 or -errno (-ESRCH: the
 * process is gone).
 */
int kiln_follow_process(struct kiln_follow *f, int i, bool *any);

/* Lists every process again (errors: a process gone, end nothing here);
 * sets kiln_follow_fresh(). */
void kiln_follow_rescan(struct kiln_follow *f);

/* The last rescan opened a thread: the threads it started meanwhile have
 * no event either, so the next listing should come soon (in ms, not
 * tenths of a second). */
bool kiln_follow_fresh(const struct kiln_follow *f);

/* Thread tid is listed again as new (the caller closed what it had):
 * it is opened at the next listing that finds it without the caller's
 * events. */
void kiln_follow_forget(struct kiln_follow *f, pid_t tid);

/* A session of dummy events that follow threads (FORK and EXIT
 * records, one event per thread), enabled, tried on pid first; NULL
 * where its buffers cannot be mapped (the memory-lock limit of an
 * unprivileged user on a large machine) or no memory. */
struct kiln_perf *kiln_follow_tracker(pid_t pid);

/* How many threads were left out because their open failed after the
 * first listing (*err: the last failure, a negative errno). */
size_t kiln_follow_failed(const struct kiln_follow *f, int *err);

#endif
