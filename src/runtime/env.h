/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libkiln.so's variables (runtime stage): every KILN_* variable the
 * in-process runtime reads and gperftools' names for the same things
 * (CPUPROFILE, HEAPPROFILE, ...), parsed here and nowhere else.  The
 * KILN_ name wins where both are set and not empty.  A bad value is said
 * once (KILN_LOG) and replaced by the default, never fatal: the program
 * runs as it would without.
 *
 * Output paths follow one rule (docs/agent.md "Outputs"): resolved to an
 * absolute path at load (the variable itself is rewritten, so that the
 * programs this one starts and a later chdir() change nothing); the
 * process that first saw the variable owns the name (KILN_*_OWNER); a
 * program it starts (exec after fork) writes NAME.PID.
 *
 * In secure execution (getauxval(AT_SECURE): a set-user-ID program) none
 * of them is read: the caller's environment names no file, address or
 * option the program's privileges would act on.
 */
#ifndef KILN_RUNTIME_ENV_H
#define KILN_RUNTIME_ENV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* An output a variable names, as this process writes it. */
struct kiln_env_out {
	char *path;	/* NAME, or NAME.PID where another process owns NAME;
			 * NULL: not asked (or no memory, said) */
	char *base;	/* NAME, absolute */
	bool again;	/* this very process owned NAME before an exec of itself */
};

struct kiln_env {
	/* Secure execution (AT_SECURE: set-user-ID, set-group-ID, file
	 * capabilities): nothing below was taken from the environment */
	bool secure;
	int log_level;		/* KILN_LOG: quiet, error (default), info, debug */
	/* KILN_CPU / CPUPROFILE */
	struct kiln_env_out cpu;
	int cpu_hz;		/* KILN_CPU_HZ / CPUPROFILE_FREQUENCY: 99 */
	bool cpu_wall;		/* KILN_CPU_MODE=wall / CPUPROFILE_REALTIME */
	int cpu_signal;		/* KILN_CPU_SIGNAL / CPUPROFILESIGNAL: 0, none */
	bool cpu_children;	/* KILN_CPU_CHILDREN=1: a forked child profiles
				 * itself into KILN_CPU.PID */
	/* KILN_HTTP: the address, where this process serves it */
	const char *http;
	/* KILN_HTTP set but another process's (KILN_HTTP_OWNER), without
	 * KILN_HTTP_INHERIT=1: that process's pid */
	pid_t http_owner;
	/* KILN_HTTP_CHILDREN=1: /debug/pprof/profile covers the children
	 * the serving process fork()s (http/workers.c) */
	bool http_children;
	/* KILN_HEAP / HEAPPROFILE: the dumps' prefix */
	struct kiln_env_out heap;
	uint64_t heap_interval;	/* KILN_HEAP_INTERVAL / HEAP_PROFILE_ALLOCATION_INTERVAL */
	int heap_signal;	/* KILN_HEAP_SIGNAL / HEAPPROFILESIGNAL: 0, none */
	/* KILN_HEAP_TRACE */
	struct kiln_env_out trace;
	bool heap_sample_set;	/* KILN_HEAP_SAMPLE given (and good) */
	uint64_t heap_sample;
	/* KILN_HEAP_CLOCK: the hooks' clock (heap/clock.c) */
	enum { KILN_ENV_CLOCK_AUTO, KILN_ENV_CLOCK_MONOTONIC,
	       KILN_ENV_CLOCK_TSC } heap_clock;
};

/* gperftools' default dump interval: 1 GiB allocated. */
#define KILN_ENV_HEAP_INTERVAL (1ull << 30)

/*
 * The variables, parsed at the first call (libkiln.so's constructor makes
 * it first).  Never NULL.
 */
const struct kiln_env *kiln_env(void);

/*
 * KILN_HTTP_TOKEN as it is now (read when a server starts, which the
 * embedding API may do long after load), NULL where unset or empty.
 */
const char *kiln_env_http_token(void);

/* KILN_HEAP_SAMPLE's default without a trace (tcmalloc's and Go's). */
#define KILN_HEAP_DEFAULT_SAMPLE 524288

#endif
