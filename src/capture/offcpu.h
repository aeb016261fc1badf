/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU and wall time from context switches (capture stage), for
 * `kiln record --off-cpu` and `--wall`.
 *
 * The sched:sched_switch tracepoint, sampled at every event with call
 * chains, fires in the thread that leaves the CPU: its sample gives the
 * stack at which the thread left and, in its raw fields, prev_state (the
 * reason: sleeping, uninterruptible, preempted).  PERF_RECORD_SWITCH
 * records (attr.context_switch) say when the same thread gets a CPU back;
 * the interval between the two is one off-CPU sample whose value is its
 * length in nanoseconds, labelled state=runnable|sleeping|blocked-io|other.
 * With --wall the cpu-clock samples (state=running) weigh the CPU time run
 * since the thread's previous sample, measured from the same switch
 * records, so that the values of one thread add up to its wall time.
 * Every other record goes to the recorder unchanged.
 */
#ifndef KILN_CAPTURE_OFFCPU_H
#define KILN_CAPTURE_OFFCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/perf.h"

struct kiln_offcpu;

/*
 * Where the intervals go: the recorder that symbolizes stacks and builds
 * the profile (session/record.c fills one, kiln_rec_sink()), reached
 * through these calls so that capture/ needs nothing of session/.
 */
struct kiln_offcpu_sink {
	void *ctx;
	/* The stack of s as location ids (kiln_rec_stack()). */
	long (*stack)(void *ctx, const struct kiln_perf_sample *s,
		      const uint32_t **locs);
	/* Adds a sample (kiln_rec_add()). */
	void (*add)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time,
		    const uint32_t *locs, uint32_t n, int64_t value,
		    const char *state);
	/* Any other record (kiln_rec_event()). */
	void (*event)(void *ctx, const struct kiln_perf_event *ev);
};

/*
 * Reads where sched_switch keeps prev_state from tracefs.  tp_id: the
 * tracepoint's id (kiln_perf_parse_event("sched:sched_switch")).  The
 * sink rec is copied, its ctx not owned.  NULL with errno set (ENOENT: no
 * such field).
 */
struct kiln_offcpu *kiln_offcpu_new(const struct kiln_offcpu_sink *rec,
				    uint64_t tp_id, bool wall);
/* The same with the layout given: common_type tp_type, prev_state at
 * state_off, state_size (4 or 8) bytes into the raw record. */
struct kiln_offcpu *kiln_offcpu_new_layout(const struct kiln_offcpu_sink *rec,
					   uint16_t tp_type, uint32_t state_off,
					   uint32_t state_size, bool wall);
void kiln_offcpu_free(struct kiln_offcpu *o);

/* The kiln_perf_fn for kiln_perf_drain(): ctx is the struct kiln_offcpu. */
void kiln_offcpu_event(void *ctx, const struct kiln_perf_event *ev);

/*
 * Ends the intervals of threads still off CPU at time now (the samples'
 * clock), when the recording stops while they wait.
 */
void kiln_offcpu_finish(struct kiln_offcpu *o, uint64_t now);

/* Off-CPU intervals added to the profile so far. */
uint64_t kiln_offcpu_intervals(const struct kiln_offcpu *o);

/* The state label of a sched_switch prev_state (exposed for tests). */
const char *kiln_offcpu_state(int64_t prev_state);

#endif
