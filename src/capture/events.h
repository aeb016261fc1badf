/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event names (capture stage): perf's names for software, hardware and
 * hardware-cache events, kernel PMU events described in sysfs
 * (/sys/bus/event_source/devices/PMU/{type,events,format}) and tracepoints
 * in tracefs, turned into perf_event_attr type and config; the list of
 * them for `kiln list`, a probe of whether one can be opened here, and the
 * closest names to a misspelt one.
 */
#ifndef KILN_CAPTURE_EVENTS_H
#define KILN_CAPTURE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum kiln_ev_kind {
	KILN_EV_SOFTWARE,
	KILN_EV_HARDWARE,
	KILN_EV_CACHE,		/* PERF_TYPE_HW_CACHE */
	KILN_EV_PMU,		/* a kernel PMU from sysfs: "msr/tsc/" */
	KILN_EV_TRACEPOINT,
	KILN_EV_NKINDS,
};

struct kiln_event {
	char name[128];		/* as perf prints it (canonical, modifiers kept) */
	enum kiln_ev_kind kind;
	uint32_t type;
	uint64_t config, config1, config2;
	/*
	 * Counting event: one sample per event by default (tracepoints,
	 * page-faults, context-switches...), as perf gives them period 1;
	 * false for time and hardware events sampled by frequency.
	 */
	bool counting;
	bool time_ns;		/* the value is nanoseconds (cpu/task-clock) */
	bool exclude_user, exclude_kernel;	/* ":k" / ":u" modifiers */
	double scale;		/* sysfs .scale of a PMU event, else 1 */
	char unit[16];		/* "msec" for clocks, sysfs .unit, else "" */
};

/*
 * Parses one event name: "task-clock", "cs", "cycles", "L1-dcache-load-misses",
 * "msr/tsc/", "cpu/event=0x3c,umask=0/", "syscalls:sys_enter_read", with an
 * optional ":u" or ":k" modifier.  Tracepoints need tracefs; as root it is
 * mounted at /sys/kernel/tracing when it is not yet.  Returns 0, -ENOENT
 * (no such event), -ENODEV (tracefs not mounted and cannot be),
 * -EACCES (tracefs not readable), -EINVAL (bad PMU term), or -errno.
 */
int kiln_event_parse(const char *name, struct kiln_event *ev);

/* The tracefs root (".../tracing") or NULL when it is not mounted. */
const char *kiln_event_tracefs(void);

/* "Software event", "Hardware event", ... as perf list names the kinds. */
const char *kiln_event_kind_name(enum kiln_ev_kind k);

/*
 * Calls fn for every event this machine names, kind by kind in perf
 * list's order: software, hardware, hardware cache, kernel PMU (from
 * sysfs), tracepoints (from tracefs, when mounted).  alias: the other
 * name of the event or NULL.  fn returns nonzero to stop.  0 or -errno.
 */
typedef int (*kiln_event_fn)(void *ctx, const struct kiln_event *ev,
			     const char *alias);
int kiln_event_foreach(kiln_event_fn fn, void *ctx);

/*
 * Whether the event can be counted here: opens it (disabled) on the
 * calling thread.  0, or the -errno of perf_event_open (-ENOENT,
 * -EOPNOTSUPP: the machine lacks it; -EACCES/-EPERM: not allowed).
 * An event refused with the kernel counted is tried again user-only.
 */
int kiln_event_probe(const struct kiln_event *ev);

struct perf_event_attr;
/* Fills a for ev: size, type, configs, exclude_user and exclude_kernel;
 * the rest zero. */
void kiln_event_attr(const struct kiln_event *ev, struct perf_event_attr *a);
/*
 * perf_event_open(a, tid, cpu, group_fd), close-on-exec.  Refused with
 * the kernel counted (EACCES, EPERM: perf_event_paranoid), it is tried
 * again user-only (a changed; *user_only, when not NULL, set if that
 * opened), as perf does.  The fd, or -errno.
 */
int kiln_event_open(struct perf_event_attr *a, pid_t tid, int cpu,
		    int group_fd, bool *user_only);

/*
 * Fills names[0..n) with up to n known names closest to `name` (edit
 * distance), best first; returns how many.  The strings are the caller's
 * to free.
 */
size_t kiln_event_suggest(const char *name, char **names, size_t n);

#endif
