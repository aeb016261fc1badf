/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counting events (session stage), the session behind `kiln stat`: each
 * event opened as a counter (no ring buffer) on every target, a target
 * being a task followed with its future threads and children (inherit) or
 * one CPU (the whole machine); event groups scheduled together; values read
 * with their time enabled and running so that multiplexed counters can be
 * scaled.
 */
#ifndef KILN_SESSION_STAT_H
#define KILN_SESSION_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/events.h"

struct kiln_stat_value {
	uint64_t val;		/* raw count (already times the sysfs scale: no) */
	uint64_t ena, run;	/* nanoseconds enabled and running */
};

enum kiln_stat_state {
	KILN_STAT_OK,
	KILN_STAT_UNSUPPORTED,	/* the machine lacks the event */
	KILN_STAT_NOT_COUNTED,	/* opened nowhere (its group leader failed) */
};

struct kiln_stat;

/*
 * A session for n events; leader[i] is the index of event i's group leader
 * (i itself for a leader or an event alone; leaders come first in their
 * group).  The events are copied.  NULL with errno set.
 */
struct kiln_stat *kiln_stat_new(const struct kiln_event *evs, const int *leader,
				size_t n);
void kiln_stat_free(struct kiln_stat *s);

/*
 * Adds a target: task `tid` (inherit: and what it starts from now on;
 * on_exec: counting starts when it execs) or, with tid -1, CPU `cpu`.
 * Events the machine lacks are marked, not fatal; an event refused with the
 * kernel counted is retried user-only (as perf does when
 * perf_event_paranoid forbids kernel counting).  0, or -errno of
 * perf_event_open: -ESRCH (no such task), -EACCES/-EPERM (refused),
 * -EMFILE...
 */
int kiln_stat_add(struct kiln_stat *s, pid_t tid, int cpu, bool inherit,
		  bool on_exec);

int kiln_stat_enable(struct kiln_stat *s);
int kiln_stat_disable(struct kiln_stat *s);

size_t kiln_stat_ntargets(const struct kiln_stat *s);
/* The task of target t (-1 for a CPU target). */
pid_t kiln_stat_target_tid(const struct kiln_stat *s, size_t t);

/*
 * Closes the counters of thread tid's newest target: they leave every
 * total (-p: a thread found to have inherited counters already, whose
 * own would count it and what it starts twice).  The target keeps its
 * index; kiln_stat_target_dropped() says so.  0 or -ESRCH.
 */
int kiln_stat_drop(struct kiln_stat *s, pid_t tid);
bool kiln_stat_target_dropped(const struct kiln_stat *s, size_t t);

/*
 * Closes the counters of thread tid's newest target, keeping what they
 * counted until then in every total (-p: counters whose inherited
 * copies cannot be trusted, replaced by new ones).  0, -ESRCH or
 * -ENOMEM.
 */
int kiln_stat_retire(struct kiln_stat *s, pid_t tid);

/* What became of event i: counted, unsupported, not counted. */
enum kiln_stat_state kiln_stat_state(const struct kiln_stat *s, size_t i);
/* Whether event i had to fall back to user space only. */
bool kiln_stat_user_only(const struct kiln_stat *s, size_t i);

/*
 * Reads event i on target t (or summed over every target when t is
 * SIZE_MAX) into *v.  0 or -errno.
 */
int kiln_stat_read(struct kiln_stat *s, size_t t, size_t i,
		   struct kiln_stat_value *v);

/*
 * The value scaled for multiplexing (val * ena / run) and the share of
 * time running (0..1).  Returns false when the counter never ran.
 */
bool kiln_stat_scaled(const struct kiln_stat_value *v, double *value,
		      double *running);

#endif
