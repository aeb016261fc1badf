/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wall-clock sampling (cpu stage): KILN_CPU_MODE=wall or
 * CPUPROFILE_REALTIME=1.  Every thread of the process is sampled at each
 * tick whether it runs or waits, as async-profiler's wall mode does, so
 * that a thread's values add up to its wall time and a server that is
 * slow because it waits shows where.
 *
 * One thread of kiln's ticks on CLOCK_MONOTONIC.  At each tick it reads
 * every thread's state from /proc/self/task/TID/stat and:
 * - a thread that runs (R) gets SIGPROF (rt_tgsigqueueinfo, SI_QUEUE):
 *   cpu.c's handler unwinds it there, as it does a CPU sample, and the
 *   sample weighs the ticks owed to the thread since its last one (a
 *   thread waiting for a CPU on a loaded machine may be owed several:
 *   its pending signal merges them);
 * - a thread that waits in the kernel (S, D, ...) is not disturbed: a
 *   signal would end its nanosleep, poll or epoll_wait with EINTR.  The
 *   kernel says where it waits (/proc/self/task/TID/syscall: its stack
 *   pointer and the pc it returns to) and its stack does not move while
 *   it waits: the ticker copies the top of it (process_vm_readv, which
 *   fails instead of faulting if the thread has just gone) and unwinds
 *   the copy with the CFI tables (unwind/cfi-walk.c).
 * Each sample weighs the monotonic time since the previous tick (a tick
 * the loaded machine delayed weighs more: the values stay wall time).
 * The state becomes the sample's `state` label: running, sleeping (S),
 * blocked-io (D), other (stopped, traced) -- kiln record --wall's names.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/cpuint.h"
#include "cpu/procprof.h"
#include "runtime/kfd.h"

/* The top of a waiting thread's stack that is copied: 64 KiB, 16 pages
 * (process_vm_readv stops at the first page that is not mapped). */
#define PAGE 4096
#define COPY_PAGES (KILN_SAMPLER_COPY_BYTES / PAGE)

static pthread_t ticker;
static _Atomic uint32_t ticker_stop;	/* futex word: 1 stops it */
static int64_t period_ns;
static struct kiln_kfd task_dir = KILN_KFD_INIT;
static uint64_t copy[COPY_PAGES * PAGE / 8];

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Reads the small file rel under task folder dir into buf (NUL-ended). */
static ssize_t read_rel(int dir, const char *rel, char *buf, size_t size)
{
	int fd = openat(dir, rel, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* The state letter of /proc/self/task/TID/stat ("pid (comm) S ..."; the
 * name may hold parentheses: the last one ends it); 0 if gone. */
char kiln_sampler_thread_state(int dir, pid_t tid)
{
	char rel[32], buf[512], *p;

	snprintf(rel, sizeof(rel), "%d/stat", (int)tid);
	if (read_rel(dir, rel, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

enum kiln_sampler_wall_state kiln_sampler_wall_state_of(char c)
{
	switch (c) {
	case 'R':
		return KILN_WALL_RUNNING;
	case 'S':
		return KILN_WALL_SLEEPING;
	case 'D':
		return KILN_WALL_BLOCKED_IO;
	default:
		return KILN_WALL_OTHER;
	}
}

/* SIGPROF to a running thread: cpu.c's handler takes the sample. */
static void signal_thread(pid_t pid, pid_t tid, int64_t weight)
{
	if (kiln_sampler_owe(tid, (uint64_t)weight))
		kiln_sampler_sigprof_to(pid, tid, 0);
}

/*
 * The stack of waiting thread tid, from outside it, into pcs (the copy
 * of its stack goes to buf, KILN_SAMPLER_COPY_BYTES): the number of frames, 0
 * when there is none to take (the thread is gone, /proc refused), -1
 * when the thread is not waiting after all (/proc says "running": it
 * woke up) and must be signalled instead.
 */
int kiln_sampler_unwind_waiting(int dir, pid_t pid, pid_t tid, uint64_t *buf,
			      uint64_t *pcs)
{
	char rel[32], line[256], *f[12], *save = NULL, *tok;
	struct iovec local, remote[COPY_PAGES];
	uint64_t sp, pc;
	ssize_t got;
	int nf = 0, i;

	snprintf(rel, sizeof(rel), "%d/syscall", (int)tid);
	if (read_rel(dir, rel, line, sizeof(line)) <= 0)
		return 0;
	if (!strncmp(line, "running", 7))
		return -1;
	/* "NR ARG1 .. ARG6 SP PC", or "-1 SP PC" outside a system call. */
	for (tok = strtok_r(line, " \n", &save); tok && nf < 12;
	     tok = strtok_r(NULL, " \n", &save))
		f[nf++] = tok;
	if (nf < 3)
		return 0;
	sp = strtoull(f[nf - 2], NULL, 16);
	pc = strtoull(f[nf - 1], NULL, 16);
	if (!pc || (sp & 7))
		return 0;
	/* Whole pages from sp's: a partial copy ends at a page boundary. */
	remote[0].iov_base = (void *)(uintptr_t)sp;
	remote[0].iov_len = PAGE - (sp & (PAGE - 1));
	for (i = 1; i < COPY_PAGES; i++) {
		remote[i].iov_base = (char *)remote[i - 1].iov_base + remote[i - 1].iov_len;
		remote[i].iov_len = PAGE;
	}
	local.iov_base = buf;
	local.iov_len = COPY_PAGES * PAGE;
	got = process_vm_readv(pid, &local, 1, remote, COPY_PAGES, 0);
	if (got < 0)
		got = 0;	/* seccomp, say: the pc alone */
	return kiln_sampler_unwind_copy(pc, sp, buf, (size_t)got, pcs,
					  KILN_SAMPLER_MAX_DEPTH);
}

/* A waiting thread's sample, from the ticker; false as
 * kiln_sampler_unwind_waiting()'s
 * -1. */
static bool sample_waiting(pid_t pid, pid_t tid,
			   enum kiln_sampler_wall_state st,
			   int64_t weight)
{
	uint64_t pcs[KILN_SAMPLER_MAX_DEPTH];
	int n = kiln_sampler_unwind_waiting(task_dir.fd, pid, tid, copy, pcs);

	if (n > 0)
		kiln_sampler_push(tid, st, (uint64_t)weight, pcs, n);
	return n >= 0;
}

int kiln_sampler_each_thread(int dir, pid_t me,
			   int (*fn)(pid_t tid, char state, void *ctx), void *ctx)
{
	char dents[4096];
	int err;

	if (lseek(dir, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		long len = syscall(SYS_getdents64, dir, dents, sizeof(dents));
		long off;

		if (len <= 0)
			return len < 0 ? -errno : 0;
		for (off = 0; off < len;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(dents + off);
			pid_t tid = (pid_t)strtol(d->name, NULL, 10);
			char c;

			off += d->reclen;
			if (tid <= 0 || tid == me || kiln_sampler_internal(tid))
				continue;
			c = kiln_sampler_thread_state(dir, tid);
			if (!c || c == 'Z' || c == 'X')
				continue;
			err = fn(tid, c, ctx);
			if (err)
				return err;
		}
	}
}

struct tick_ctx {
	pid_t pid;
	int64_t weight;
};

static int sample_one(pid_t tid, char c, void *ctx)
{
	const struct tick_ctx *t = ctx;

	if (c == 'R' || !sample_waiting(t->pid, tid, kiln_sampler_wall_state_of(c),
					t->weight))
		signal_thread(t->pid, tid, t->weight);
	return 0;
}

static void sample_all(pid_t pid, pid_t me, int64_t weight)
{
	struct tick_ctx t = { pid, weight };

	if (kiln_kfd_ours(&task_dir))
		kiln_sampler_each_thread(task_dir.fd, me, sample_one, &t);
}

static void *tick(void *arg)
{
	pid_t pid = getpid(), me = (pid_t)syscall(SYS_gettid);
	int64_t last = mono_ns(), next = last + period_ns;

	(void)arg;
	while (!atomic_load(&ticker_stop)) {
		struct timespec at = { (time_t)(next / 1000000000), (long)(next % 1000000000) };
		int64_t now;

		/* An absolute wait on CLOCK_MONOTONIC that a stop wakes. */
		syscall(SYS_futex, &ticker_stop, FUTEX_WAIT_BITSET_PRIVATE, 0, &at,
			NULL, FUTEX_BITSET_MATCH_ANY);
		if (atomic_load(&ticker_stop))
			break;
		now = mono_ns();
		if (now < next)
			continue;	/* woken early (a signal): wait on */
		next += period_ns;
		if (next <= now)	/* ticks the machine held back: one, heavier */
			next = now + period_ns;
		kiln_rt_busy_begin();
		sample_all(pid, me, now - last);
		kiln_rt_busy_end();
		last = now;
	}
	return NULL;
}

int kiln_sampler_wall_start(int64_t period)
{
	int err;

	period_ns = period;
	/* A fork child's copy of its parent's folder (CLOEXEC, kiln's). */
	kiln_kfd_close(&task_dir);
	err = kiln_procprof_proc_openat(&task_dir, "task", O_RDONLY | O_DIRECTORY);
	if (err)
		return err;
	atomic_store(&ticker_stop, 0);
	err = kiln_rt_thread_start(&ticker, "kiln-wall", tick, NULL, false);
	if (err)
		kiln_kfd_close(&task_dir);
	return err;
}

void kcpu_wall_fork_child(void)
{
	/* (Before: a worker whose parent ran a wall profile kept its parent's
	 * folder open for its life.) */
	kiln_kfd_close(&task_dir);
}

void kiln_sampler_wall_stop(void)
{
	atomic_store(&ticker_stop, 1);
	syscall(SYS_futex, &ticker_stop, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	kiln_rt_thread_join(ticker);
	kiln_kfd_close(&task_dir);
}
