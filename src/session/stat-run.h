/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln stat`'s counting session (session stage): one run of the
 * measurement (targets opened, the command started, intervals printed,
 * the command waited for) and the printing of its counts as perf stat
 * does: derived metrics (perf's stat-shadow.c), the default, CSV (-x) and
 * JSON lines, intervals, per-thread counts, the spread of repeats.  The
 * counts are written to the caller's FILE (opts.out); errors are not
 * printed but said in the result, for the CLI to explain.
 */
#ifndef KILN_SESSION_STAT_RUN_H
#define KILN_SESSION_STAT_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "session/stat.h"

/* Running mean and spread (Welford), for -r. */
struct kiln_stat_spread {
	unsigned n;
	double mean, m2;
};

void kiln_stat_spread_add(struct kiln_stat_spread *s, double v);
/* perf's "+-": the standard deviation of the mean, relative to it, in %. */
double kiln_stat_spread_pct(const struct kiln_stat_spread *s);

/* What to count and how to print it (kiln stat's options). */
struct kiln_stat_opts {
	struct kiln_event *evs;
	int *leader;
	size_t n;
	pid_t *pids;
	int npids;
	int *cpus;
	int ncpus;
	const char *pid_arg, *cpu_arg;
	bool all_cpus, per_thread, json;
	const char *sep;		/* -x */
	double duration;
	long interval_ms;
	long repeat;
	char **cmd;
	int ncmd;
	FILE *out;
	volatile sig_atomic_t *stop;	/* set by a signal: stop (or pass it
					 * on to the command) */
};

/* The values of one print: per event. */
struct kiln_stat_vals {
	double v;			/* scaled */
	double running;			/* 0..1 */
	uint64_t run;
	enum kiln_stat_state state;	/* OK but never ran: not counted */
	bool counted;
	double var;			/* -r: spread in % */
};

struct kiln_stat_line {
	const struct kiln_stat_opts *o;
	double interval_ts;		/* < 0: not interval mode */
	const char *thread;		/* "comm-tid" or NULL */
	double elapsed_ns;		/* for CPUs utilized */
	bool repeat;
};

/* Where a run failed (kiln_stat_result.failed). */
enum kiln_stat_failure {
	KILN_STAT_RUN_OK,
	KILN_STAT_RUN_NOMEM,
	KILN_STAT_RUN_SPAWN,	/* the command could not be started: err */
	KILN_STAT_RUN_CPU,	/* CPU `which` cannot be counted on: err */
	KILN_STAT_RUN_GONE,	/* process `which` is gone */
	KILN_STAT_RUN_OPEN,	/* perf_event_open: err */
	KILN_STAT_RUN_EXEC,	/* the command did not run: err */
};

struct kiln_stat_result {
	struct kiln_stat_vals *v;	/* per event (the caller's array) */
	double elapsed_s;
	struct rusage ru;
	int status;			/* wait status of the command */
	bool have_status;
	enum kiln_stat_failure failed;
	int err;			/* -errno of the failure */
	int which;			/* the CPU or PID it names */
	uint64_t follow_lost;		/* -p: records of thread starts the
					 * kernel could not write: threads
					 * started then may count twice */
	size_t follow_failed;		/* -p: threads left out (their open
					 * failed while counting) */
	int follow_err;			/* the last such failure (-errno) */
};

/*
 * Runs the measurement once: 0 with *res filled and *s_out the session
 * (and *names_out the thread names of -p, *nnames_out of them) kept for
 * printing, the caller's to free; -1 with res->failed saying what failed
 * (a command started is killed and reaped by then).
 */
int kiln_stat_run(const struct kiln_stat_opts *o, struct kiln_stat_result *res,
		  struct kiln_stat **s_out, char ***names_out, size_t *nnames_out);

/* Turns a read value into what is printed. */
void kiln_stat_to_vals(struct kiln_stat *s, size_t i,
		       const struct kiln_stat_value *kv,
		       struct kiln_stat_vals *out);
/* Prints a line per event (for the thread or interval c says). */
void kiln_stat_print_block(const struct kiln_stat_line *c, struct kiln_stat *s,
			   const struct kiln_stat_vals *v);
/* -I: the counts since the last interval (prev: the last reads). */
void kiln_stat_print_interval(const struct kiln_stat_opts *o,
			      struct kiln_stat *s,
			      struct kiln_stat_value *prev, char **names,
			      double ts, double dt, bool *header);
/* --per-thread: the final counts, a block per thread. */
void kiln_stat_print_threads(const struct kiln_stat_opts *o,
			     struct kiln_stat *s, char **names,
			     double elapsed_s);
/* " Performance counter stats for ...:" */
void kiln_stat_print_header(const struct kiln_stat_opts *o);
/*
 * The totals after the runs: header, a line per event (or per thread),
 * the time elapsed; with -r (sp: each event's spread, el: the elapsed
 * time's) the means, which go into res->v, and their spread.
 */
void kiln_stat_print_final(const struct kiln_stat_opts *o, struct kiln_stat *s,
			   char **names, struct kiln_stat_result *res,
			   const struct kiln_stat_spread *sp,
			   const struct kiln_stat_spread *el);

#endif
