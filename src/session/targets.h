/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a session measures (session stage): lists of processes, threads or
 * CPUs as -p, -t and -C give them, the CPUs online, whether targets still
 * live, the process a thread belongs to; and the sessions' clock.  `kiln
 * record` and `kiln stat` share them.
 */
#ifndef KILN_SESSION_TARGETS_H
#define KILN_SESSION_TARGETS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/*
 * Parses "N[,N...]" (with ranges, also "A-B": at most 4097 numbers a
 * range) into *out (realloc'ed; the caller frees it), *n numbers, each 0
 * to 0x3fffffff.  0, -EINVAL (nothing, or not such a list) or -ENOMEM.
 */
int kiln_targets_parse_list(const char *arg, int **out, int *n, bool ranges);

/*
 * The same for -p PID[,PID...] and -t TID[,TID...]: 0 is no process.
 * 0, -EINVAL or -ENOMEM.
 */
int kiln_targets_parse_pids(const char *arg, pid_t **out, int *n);

/* The CPUs online (/sys/devices/system/cpu/online, else as many as
 * sysconf counts) into *out, *n of them.  0 or -errno. */
int kiln_targets_online_cpus(int **out, int *n);

/* The index of the first of pids that no longer exists (ESRCH), or -1. */
int kiln_targets_first_gone(const pid_t *pids, int n);

/* Whether any of pids still exists (one kiln may not signal counts). */
bool kiln_targets_alive(const pid_t *pids, int n);

/* The process a thread belongs to (Tgid in /proc/TID/status), or -errno. */
pid_t kiln_targets_tgid(pid_t tid);

/* The sessions' clock: clk in nanoseconds; CLOCK_MONOTONIC in seconds. */
uint64_t kiln_session_ns(clockid_t clk);
double kiln_session_now(void);

#endif
