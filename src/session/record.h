/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From perf records to a symbolized profile (session stage): tracks the
 * processes, threads and mappings that MMAP2/COMM/FORK/EXIT records
 * describe, so that each sample meets the mappings of its process at the
 * time it was taken (exec, dlopen and dlclose included), unwinds user
 * stacks with DWARF when asked, symbolizes each distinct address once, on
 * the spot, while the process still lives (deleted binaries are reached
 * through /proc/PID/map_files, containers through /proc/PID/root), and
 * adds the samples to a profile with pid/comm/thread/thread_name labels.
 */
#ifndef KILN_SESSION_RECORD_H
#define KILN_SESSION_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/offcpu.h"
#include "capture/perf.h"

struct kiln_prof;

enum kiln_callgraph {
	KILN_CG_FP,		/* frame pointers (the kernel's call chain) */
	KILN_CG_DWARF,		/* copied user stacks unwound with libdw CFI */
	KILN_CG_AUTO,		/* DWARF where the code has CFI, frame pointers
				 * where it has none (JIT code) */
};

struct kiln_rec_opts {
	enum kiln_callgraph callgraph;
	const char *event;	/* event name, for the sample type */
	bool ns_values;		/* the period is in nanoseconds (cpu/task-clock) */
	uint64_t period_ns;	/* nominal period for the profile's period field */
	bool kernel_frames;	/* show kernel frames (--kernel); without it a
				 * sample taken in the kernel is counted on its
				 * user stack */
	bool system_wide;	/* -a: learn processes unknown so far from
				 * /proc when their first sample comes */
	uint32_t self_pid;	/* samples of this process are left out (kiln) */
	const char *value_type;	/* "type/unit" of the value, NULL: from the
				 * event ("cpu/nanoseconds", "EVENT/count") */
	/*
	 * Several events in one profile (a perf.data of `perf record -e
	 * A,B`): ncolumns "type/unit" value types after samples/count, one
	 * per event, instead of the one above; a sample adds its period to
	 * column s->column and 0 to the others.  A unit of "nanoseconds"
	 * is a clock's (as ns_values).  At most KILN_REC_MAX_COLUMNS; the
	 * strings are copied.
	 */
	const char *const *columns;
	uint32_t ncolumns;
	bool wall;		/* samples get the label state=running */
	/*
	 * A counting event (period 1): the events of the records the kernel
	 * dropped (a LOST record) are added half to the stack of the sample
	 * before the loss, half to the one after it, and kiln_rec_carry()
	 * adds those never reported to the last sample's; the samples
	 * column keeps the records' own count.
	 */
	bool carry_lost;
	uint64_t start_ns;	/* the recording's start on the samples' clock,
				 * for the time labels (0: the first sample) */
	/*
	 * Offline (perf.data): the processes are gone or the pids reused, so
	 * nothing is read from /proc; a mapping's file is the open_path of
	 * its MMAP event (none: not symbolized), kernel frames are named from
	 * the kallsyms text below (NULL: not named).
	 */
	bool offline;
	const char *kallsyms;
	size_t kallsyms_len;
};


#define KILN_REC_MAX_COLUMNS 64

struct kiln_rec;

/* NULL with errno set. */
struct kiln_rec *kiln_rec_new(const struct kiln_rec_opts *o);
void kiln_rec_free(struct kiln_rec *r);

/* The kiln_perf_fn for kiln_perf_drain(): ctx is the struct kiln_rec. */
void kiln_rec_event(void *ctx, const struct kiln_perf_event *ev);

/*
 * The stack of sample s as location ids, leaf first, symbolized now (the
 * process's mappings as they are at s->time), in *locs: valid until the
 * next call.  Counts the sample.  Returns the depth (0: nothing to show),
 * or -ENOMEM.
 */
long kiln_rec_stack(struct kiln_rec *r, const struct kiln_perf_sample *s,
		    const uint32_t **locs);

/*
 * Adds a sample of thread tid of process pid taken at time (the samples'
 * clock) with the stack locs (from kiln_rec_stack(), copied by the caller
 * if other samples came between), weighing 1 sample and value, with the
 * labels pid, thread, thread_name, time and, if state is not NULL, state.
 */
void kiln_rec_add(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		  uint64_t time, const uint32_t *locs, uint32_t n,
		  int64_t value, const char *state);

/* Fills sink with r's stack, add and event calls, for kiln_offcpu_new(). */
void kiln_rec_sink(struct kiln_rec *r, struct kiln_offcpu_sink *sink);

/*
 * Learns the present state of a running process (its mappings from
 * /proc/PID/maps, its threads' names) before sampling starts, for -p.
 * 0 or -errno.
 */
int kiln_rec_seed(struct kiln_rec *r, pid_t pid);

/* Its threads' names only, again: for threads that started or named
 * themselves while -p attached.  0 or -errno. */
int kiln_rec_seed_names(struct kiln_rec *r, pid_t pid);

/*
 * With o.carry_lost: adds n events to the stack of the last sample (the
 * events the kernel counted and dropped the records of at the end, which
 * no LOST record reported: the event's own count less
 * kiln_rec_event_total()), as that sample's thread at its time, with no
 * sample of their own.  0, or -ENOENT when no sample came.
 */
int kiln_rec_carry(struct kiln_rec *r, uint64_t n);

/* With o.carry_lost: the event values added so far, and how many of them
 * came from lost records (kiln_rec_carry() included). */
uint64_t kiln_rec_event_total(const struct kiln_rec *r);
uint64_t kiln_rec_carried(const struct kiln_rec *r);

/* Samples taken so far. */
uint64_t kiln_rec_samples(const struct kiln_rec *r);

/* Samples of opts.self_pid left out so far. */
uint64_t kiln_rec_self_samples(const struct kiln_rec *r);

/* The processes recorded (seeded, forked or exec'ed while recording)
 * that still run, except: their number in *n, the first one's pid
 * returned (0: none).  After a command's end: the daemons it left. */
pid_t kiln_rec_procs_running(const struct kiln_rec *r, pid_t except, size_t *n);

/*
 * Hands over the profile built so far (the caller frees it) and leaves
 * the recorder without one.  NULL with errno set on failure.
 */
struct kiln_prof *kiln_rec_detach(struct kiln_rec *r);

#endif
