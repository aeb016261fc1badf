/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sampling through perf_event_open (capture stage): per-CPU events that
 * follow a process and its future threads and children (inherit), one
 * mmap'ed ring buffer per event, and a parser for the records kiln asks
 * the kernel for.  Records are handed to the caller in time order within
 * each drain.
 */
#ifndef KILN_CAPTURE_PERF_H
#define KILN_CAPTURE_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/perfevent.h"

struct kiln_perf_attr {
	uint32_t type;		/* PERF_TYPE_SOFTWARE, _HARDWARE, _TRACEPOINT */
	uint64_t config, config1, config2;	/* see capture/events.h */
	uint64_t sample;	/* frequency (freq) or period */
	bool freq;
	bool kernel;		/* sample kernel code and kernel stacks too */
	bool kernel_time;	/* without kernel: still take samples in kernel
				 * mode (counted on the user stack) where the
				 * kernel may be sampled */
	uint32_t stack_bytes;	/* > 0: copy this much user stack and the user
				 * registers per sample, for DWARF unwinding */
	bool enable_on_exec;	/* counting starts when the target execs */
	bool raw;		/* PERF_SAMPLE_RAW: a tracepoint's fields */
	bool context_switch;	/* KILN_PERF_SWITCH records (switch in/out) */
	bool tasks_only;	/* no mapping, name or build-ID records: a
				 * dummy event that follows threads (FORK,
				 * EXIT) for kiln_perf_thread_covered() */
	bool task_counts;	/* inherited: each task's own count at its
				 * exit (KILN_PERF_READ, attr.inherit_stat) */
};


struct kiln_perf;

/* NULL with errno set.  pages: ring buffer data pages per CPU (power of 2). */
struct kiln_perf *kiln_perf_new(const struct kiln_perf_attr *a, size_t pages);
void kiln_perf_free(struct kiln_perf *s);

/*
 * Opens events on every CPU for process or thread `pid` (-1: every
 * process, system-wide).  inherit: also
 * follow threads and processes it creates from now on.  Returns 0 or
 * -errno of perf_event_open (EACCES/EPERM: refused, ESRCH: no such process,
 * ENOENT/EINVAL: no such event on this machine).
 */
int kiln_perf_open(struct kiln_perf *s, pid_t pid, bool inherit);

/*
 * For events opened with inherit on several threads of one process (-p):
 * a thread started by a thread whose event is already open inherits that
 * event, and when it is then opened itself (listed after its creator was
 * opened) it and every thread it starts are covered twice.  With this
 * call each thread's samples and context switches are taken from one
 * event only: the first (in time order) that delivers one for it, until
 * the event opened on the thread itself does (samples carry the event's
 * id, PERF_SAMPLE_IDENTIFIER; see perfown.c).  Call before
 * kiln_perf_open().  0 or -EBUSY.
 */
int kiln_perf_one_event_per_thread(struct kiln_perf *s);

/* With the above: whether a sample or the start of thread tid came from
 * one of the events (then it inherited one: no need to open it). */
bool kiln_perf_thread_covered(struct kiln_perf *s, pid_t tid);

/* Which kiln_perf_open() the last was (1, 2, ...): FORK and EXIT
 * records' task.by_seq. */
uint32_t kiln_perf_open_seq(const struct kiln_perf *s);

/* Samples dropped so far as a thread's second event's (above). */
uint64_t kiln_perf_dropped_twice(const struct kiln_perf *s);

/*
 * Limits kiln_perf_open() to the CPUs listed in `list` (perf's -C syntax:
 * "0,2-3").  0, or -EINVAL for a bad list or a CPU this machine lacks.
 */
int kiln_perf_set_cpus(struct kiln_perf *s, const char *list);

/* Whether samples in kernel mode are taken (false: the kernel refused
 * them, and time in the kernel goes uncounted). */
bool kiln_perf_kernel_counted(const struct kiln_perf *s);

/*
 * Adds a second event, opened beside the first on every CPU by
 * kiln_perf_open() and writing into the same buffers, so that its samples
 * come in time order with the first's (--wall: cpu-clock and
 * sched:sched_switch).  Only a->type, config, sample, freq and kernel are
 * used: samples have the first event's layout, side-band records come from
 * the first event only.  Call before kiln_perf_open().  0 or -EBUSY.
 */
int kiln_perf_add_event(struct kiln_perf *s, const struct kiln_perf_attr *a);

/* Sample times are CLOCK_MONOTONIC (else the kernel's perf clock, on
 * kernels before 4.1). */
bool kiln_perf_monotonic(const struct kiln_perf *s);
int kiln_perf_enable(struct kiln_perf *s);
int kiln_perf_disable(struct kiln_perf *s);

/*
 * Starts a thread that empties the ring buffers into memory as they fill,
 * so that slow work in the drain callback (symbolizing) loses no records.
 * kiln_perf_wait() and kiln_perf_drain() then take what it gathered.  It
 * holds at most about as much as the rings (half of them, 4 MiB at least,
 * and one ring's worth beyond): a drain further behind leaves records in
 * the rings, and the kernel counts those
 * it cannot write (kiln_perf_lost()), so that memory does not grow with
 * the records' rate.  Call after the rings are opened.  0 or -errno.
 */
int kiln_perf_start_reader(struct kiln_perf *s);
/* Stops that thread (records still in the rings are left to drain). */
void kiln_perf_stop_reader(struct kiln_perf *s);

/* Waits up to timeout_ms for data in any buffer.  0, or -errno. */
int kiln_perf_wait(struct kiln_perf *s, int timeout_ms);

/* Reads every record now in the buffers, sorted by time, calling fn. */
int kiln_perf_drain(struct kiln_perf *s, kiln_perf_fn fn, void *ctx);

/*
 * The event's own count (read(2) of each event, its inherited copies
 * summed by the kernel): how many times it occurred, records lost or
 * not.  Call after kiln_perf_disable().  0, -EOPNOTSUPP where events may
 * overlap (a second event, or one event per thread: a thread covered
 * twice would count twice), or -errno of read.
 */
int kiln_perf_count(struct kiln_perf *s, uint64_t *count);

/* The rings' data pages: those asked, or fewer where the memory-lock
 * limit of an unprivileged user allowed less. */
size_t kiln_perf_pages(const struct kiln_perf *s);

/* Records the kernel reported lost (PERF_RECORD_LOST), so far. */
uint64_t kiln_perf_lost(const struct kiln_perf *s);

/* The user registers kiln asks for (x86-64: all general-purpose ones):
 * KILN_PERF_REGS_MASK (util/perfevent.h). */
uint64_t kiln_perf_regs_mask(void);

#endif
