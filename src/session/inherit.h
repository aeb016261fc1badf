/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which threads really inherited a -p session's events (session stage),
 * for kiln stat -p.
 *
 * Attaching to a running process opens events on each of its threads
 * with inherit, one after another (kiln stat: a thread-following dummy
 * event per CPU, then the counters).  The kernel copies a thread's
 * events into a thread it starts at one moment early in clone(): a
 * thread started while its starter's events were being opened gets
 * those opened before that moment and not the others, and so does every
 * thread it starts.  Its FORK record (written at the end of clone())
 * cannot tell: a thread that got the dummy and not the counters was
 * taken as counted, and a whole chain of threads went uncounted (issue
 * 22: t927, one run in fifty).
 *
 * A marker: the same dummy event opened on each thread once the
 * session's events are open on it.  A thread that has the marker's copy
 * has all the events opened before it; when such a thread starts
 * another, the marker's copy writes a FORK record beside the session's.
 * A FORK record written by an inherited copy of the session's events
 * without the marker's beside it says the starter lacks some of them;
 * the caller opens that family again (stat-run.c reopen()).
 * kiln record -p does without: there the events are the per-CPU
 * sampling events themselves, a thread with some CPUs' copies starts
 * threads with no FORK record on the others (opened when listed), and
 * a thread's own events win over inherited copies (capture/perfown.c).
 *
 * Owner: the -p session (stat-run.c); data: the marker's perf session,
 * each opened thread's two open numbers, and the marker's FORK records
 * of the last second.
 */
#ifndef KILN_SESSION_INHERIT_H
#define KILN_SESSION_INHERIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct kiln_inherit;

/*
 * A marker, tried on pid (as the session's thread-following events are);
 * NULL where its buffers cannot be mapped (the memory-lock limit of an
 * unprivileged user) or no memory: then no record is judged.
 */
struct kiln_inherit *kiln_inherit_new(pid_t pid);
void kiln_inherit_free(struct kiln_inherit *h);

/*
 * After the session's events were opened on thread tid (session open
 * number seq, kiln_perf_open_seq()): the marker on it.  Out of
 * descriptors or memory the marker is closed for good (the session's
 * events come first) and nothing is judged any more.  NULL h: nothing.
 */
void kiln_inherit_opened(struct kiln_inherit *h, pid_t tid, uint32_t seq);

/* Reads the marker's records (before the session's own, so that each
 * session record older than `horizon` finds its marker's, if written);
 * forgets those a second older than it. */
void kiln_inherit_read(struct kiln_inherit *h, uint64_t horizon);

/* Reads as they come (a burst of thread starts would fill the rings
 * between two reads).  After the first kiln_inherit_opened(). */
void kiln_inherit_start(struct kiln_inherit *h);

enum kiln_inherit_verdict {
	KILN_INHERIT_UNKNOWN,	/* not written by an inherited copy, or its
				 * open has no marker */
	KILN_INHERIT_WHOLE,	/* the starter has every event */
	KILN_INHERIT_PART,	/* the starter lacks some */
};

/* A FORK record of the session's (time, thread, starter, and the
 * record's task.by_tid and by_seq), older than the last
 * kiln_inherit_read()'s horizon.  NULL h: unknown. */
enum kiln_inherit_verdict kiln_inherit_judge(const struct kiln_inherit *h,
					     uint64_t time, pid_t tid, pid_t ptid,
					     uint32_t by_tid, uint32_t by_seq);

#endif
