/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recording session (session stage), what `kiln record` drives once its
 * options are parsed: the perf_event rings opened on the targets (a
 * command kiln starts, -p processes, -t threads, -a/-C every CPU), the
 * recorder fed until the command ends, the targets are gone, the duration
 * is over or a signal asks to stop, and the profile handed back with its
 * comments.  Prints nothing: what failed is said in the result, for the
 * CLI to explain.
 */
#ifndef KILN_SESSION_RECORD_RUN_H
#define KILN_SESSION_RECORD_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/perf.h"
#include "session/record.h"

struct kiln_prof;

struct kiln_record_opts {
	struct kiln_perf_attr pa;	/* the sampled event */
	struct kiln_rec_opts ro;	/* the recorder's (start_ns is set here) */
	size_t ring_pages;		/* data pages per CPU (kiln_perf_new()) */
	/* --off-cpu / --wall: sched_switch (swa, tracepoint tp_id) too. */
	bool offcpu, wall;
	struct kiln_perf_attr swa;
	uint64_t tp_id;
	/* Targets: one of cmd, pids, tids or system_wide (cmd may come
	 * with system_wide: -a -- CMD). */
	char **cmd;
	int ncmd;
	const pid_t *pids;
	int npids;
	const pid_t *tids;
	int ntids;
	bool system_wide;
	const char *cpu_arg;		/* -C, with system_wide */
	double duration;		/* seconds, 0: until the targets end */
	/* SIGINT, SIGTERM and SIGHUP get on_stop, which sets *stop. */
	void (*on_stop)(int sig);
	volatile sig_atomic_t *stop;
	/* Called every half second while recording and once at the end
	 * (final), when not NULL. */
	void (*progress)(void *arg, double secs, uint64_t samples,
			 uint64_t lost, bool final);
	void *progress_arg;
};

/* Where a recording failed (kiln_record_result.failed). */
enum kiln_record_failure {
	KILN_RECORD_OK,
	KILN_RECORD_OFFCPU,	/* sched_switch's fields not readable: err */
	KILN_RECORD_NOMEM,	/* before recording */
	KILN_RECORD_CPUS,	/* -C names no CPUs of this machine */
	KILN_RECORD_OPEN,	/* perf_event_open (or a target): err; with
				 * -ESRCH, gone_pid or gone_tid says which */
	KILN_RECORD_READER,	/* the ring reader thread: err */
	KILN_RECORD_EXEC,	/* the command did not run: err (reaped) */
	KILN_RECORD_DETACH,	/* out of memory while recording */
	/* kiln_record_inject() */
	KILN_RECORD_TMPDIR,	/* no temporary folder: err */
	KILN_RECORD_SPAWN,	/* the command could not be started: err */
	KILN_RECORD_NOPROFILE,	/* the in-process sampler wrote none */
};

struct kiln_record_result {
	enum kiln_record_failure failed;
	int err;			/* -errno of the failure */
	pid_t gone_pid, gone_tid;	/* the target that is no more */
	struct kiln_prof *prof;		/* the profile: the caller frees it */
	uint64_t samples, self_samples, lost;
	/* ro.carry_lost: the event's own count (counted: known), and the
	 * events in the profile without a record of their own, added to the
	 * stacks recorded beside their loss (an estimate). */
	bool counted;
	uint64_t count, estimated;
	size_t ring_pages;		/* the rings' data pages (perhaps fewer
					 * than asked: memory-lock limit) */
	bool kernel_counted;		/* kiln_perf_kernel_counted() */
	int stopped_by;			/* the signal that stopped it, or 0 */
	int status;			/* the command's wait status (ncmd) */
	int exec_err;			/* inject: the exec's -errno, 0 if it ran */
	/* A command that ended by itself: the processes it started that
	 * still run (a daemon), recorded only until then; one's pid. */
	size_t nleft;
	pid_t left_pid;
};

/*
 * Records as o says.  0 with res->prof set, or -1 with res->failed and
 * res->err saying what failed (a command kiln started is killed and
 * reaped by then).
 */
int kiln_record_run(const struct kiln_record_opts *o,
		    struct kiln_record_result *res);

/* --mode inject: the command with libkiln.so preloaded. */
struct kiln_inject_opts {
	char **cmd;
	int ncmd;
	long freq;			/* KILN_CPU_HZ */
	bool wall;			/* the agent's wall-clock sampler */
	const char *agent;		/* libkiln.so's path */
	/* SIGINT and SIGTERM get on_stop, which sets *stop: the command
	 * is sent SIGTERM. */
	void (*on_stop)(int sig);
	volatile sig_atomic_t *stop;
};

/*
 * Runs the command with libkiln.so preloaded and its in-process sampler
 * on; every process of the command writes its own profile (the first
 * PATH, the others PATH.PID) into a temporary folder, and they are merged
 * into res->prof with the command line as a comment.  0, or -1 with
 * res->failed set; res->status is the command's wait status, and
 * res->exec_err says an exec that failed (the command exited 127).
 */
int kiln_record_inject(const struct kiln_inject_opts *o,
		       struct kiln_record_result *res);

/* Adds "PREFIX ARGV..." as a comment of p. */
void kiln_record_comment_cmdline(struct kiln_prof *p, char **argv, int argc,
				 const char *prefix);

#endif
