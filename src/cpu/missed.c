/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a CPU profile misses, counted as it runs and said when it ends
 * (cpu stage): threads whose CPU timer was refused (a seccomp filter's
 * EPERM, a limit), threads sampled only from when the collector found
 * them in /proc/self/task (made by a raw clone(), which kiln does not see
 * start, or whose timer was refused on the thread and made by the
 * collector's scan: the CPU they ran before), threads still unregistered
 * or blocking SIGPROF when the profile ends.  kiln_sampler_end() puts it
 * in the log and the profile's comment.  Normal context only.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/cpuint.h"
#include "runtime/threads.h"
#include "util/buf.h"
#include "util/file.h"

/* Threads whose CPU timer could not be made, at their last try. */
static _Atomic uint64_t timer_failures;
/* Threads armed late by the collector's scan and the CPU time they had
 * used by then. */
static _Atomic uint64_t late_threads, late_ns;
static _Atomic bool scanning_late;

/* The last threads that ended: /proc lists a thread a moment after kiln's
 * exit step freed its slot (and blocked its SIGPROF), and a scan would
 * take it for one kiln did not see start. */
#define ENDED_RECENT 64
static _Atomic pid_t ended_recent[ENDED_RECENT];
static _Atomic uint32_t ended_pos;

static bool ended_lately(pid_t tid)
{
	for (size_t i = 0; i < ENDED_RECENT; i++)
		if (atomic_load(&ended_recent[i]) == tid)
			return true;
	return false;
}

void kcpu_missed_reset(void)
{
	atomic_store(&timer_failures, 0);
	for (size_t i = 0; i < KILN_RT_MAX_THREADS; i++)
		atomic_store(&kcpu_slots[i].timer_failed, false);
	atomic_store(&late_threads, 0);
	atomic_store(&late_ns, 0);
}

void kcpu_missed_timer_refused(struct kcpu_slot *k)
{
	/* Once, however often a scan tries again. */
	if (!atomic_exchange(&k->timer_failed, true))
		atomic_fetch_add(&timer_failures, 1);
}

void kcpu_missed_timer_made(struct kcpu_slot *k)
{
	/* Refused on the thread (under its filter), made by the collector's
	 * scan: sampled from now on. */
	if (atomic_exchange(&k->timer_failed, false))
		atomic_fetch_sub(&timer_failures, 1);
}

void kcpu_missed_armed(pid_t tid, clockid_t clock)
{
	struct timespec ts;

	if (!atomic_load(&scanning_late) || ended_lately(tid) ||
	    clock_gettime(clock, &ts))
		return;
	atomic_fetch_add(&late_threads, 1);
	atomic_fetch_add(&late_ns, (uint64_t)ts.tv_sec * 1000000000u +
				   (uint64_t)ts.tv_nsec);
}

void kcpu_missed_ended(pid_t tid)
{
	atomic_store(&ended_recent[atomic_fetch_add(&ended_pos, 1) % ENDED_RECENT],
		     tid);
}

void kcpu_scan_late(void)
{
	atomic_store(&scanning_late, true);
	kiln_rt_threads_scan();
	atomic_store(&scanning_late, false);
}

/* What /proc/self/task says of the program's threads when a profile
 * ends (not those ending now): those that block SIGPROF (their status's
 * SigBlk: signalled, they take no sample), and those kiln never
 * registered with their CPU time (utime + stime of their stat, in clock
 * ticks; one that has used none yet, starting now, misses nothing). */
struct task_scan {
	uint64_t blocked, unseen, unseen_ticks;
};

static void scan_tasks(struct task_scan *ts)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	memset(ts, 0, sizeof(*ts));
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		struct kiln_buf b = KILN_BUF_INIT;
		unsigned long long ut = 0, st = 0;
		char path[64];
		const char *p;
		bool known;

		if (tid <= 0 || kiln_sampler_internal(tid) || ended_lately(tid))
			continue;
		known = kiln_rt_thread_find(tid) != NULL;
		snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid,
			 known ? "status" : "stat");
		if (kiln_read_proc(AT_FDCWD, path, &b) || !b.data) {
			kiln_buf_release(&b);
			continue;
		}
		if (known && (p = strstr(b.data, "\nSigBlk:")) &&
		    (strtoull(p + 9, NULL, 16) >> (SIGPROF - 1)) & 1)
			ts->blocked++;
		/* After "(comm)": state, then 10 fields, utime, stime. */
		if (!known && (p = strrchr(b.data, ')')) &&
		    sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu",
			   &ut, &st) == 2 && ut + st) {
			ts->unseen++;
			ts->unseen_ticks += ut + st;
		}
		kiln_buf_release(&b);
	}
	closedir(d);
}

void kcpu_missed_note(char *note, size_t size, bool thread_timers)
{
	struct task_scan ts;
	size_t len = strlen(note);

	if (atomic_load(&timer_failures))
		len += (size_t)snprintf(note + len, size - len,
			"%skiln: not sampled: %" PRIu64 " thread(s) whose CPU "
			"timer could not be made (a seccomp filter's EPERM, a "
			"limit; at the last try)", len ? "; " : "",
			atomic_load(&timer_failures));
	scan_tasks(&ts);
	if (len < size && ts.blocked)
		len += (size_t)snprintf(note + len, size - len,
			"%skiln: %" PRIu64 " thread(s) blocked SIGPROF when the "
			"profile ended: their samples may be missing",
			len ? "; " : "", ts.blocked);
	/* (setitimer's signal goes to any thread; the wall ticker finds
	 * every thread at its next tick.) */
	if (len < size && thread_timers && (ts.unseen || atomic_load(&late_threads)))
		snprintf(note + len, size - len,
			 "%skiln: not sampled: %.2f s of CPU of %" PRIu64
			 " thread(s) before kiln could sample them (made by a raw "
			 "clone that kiln did not see start, or their CPU timer "
			 "refused at first)", len ? "; " : "",
			 (double)atomic_load(&late_ns) / 1e9 +
			 (double)ts.unseen_ticks / (double)sysconf(_SC_CLK_TCK),
			 atomic_load(&late_threads) + ts.unseen);
}
