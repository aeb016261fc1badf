/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every thread's stack now (cpu stage): the goroutine profile that
 * /debug/pprof/goroutine answers and continuous profilers scrape, one
 * sample per thread.  Running threads are interrupted by SIGPROF for a
 * moment (the handler's snapshot record, sigprof.c); waiting ones are
 * unwound from a copy of their stack taken from outside (wall.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/cpuint.h"
#include "cpu/procprof.h"
#include "profile/profile.h"
#include "runtime/guard.h"
#include "runtime/kfd.h"
#include "runtime/threads.h"
#include "symbolize/symbolize.h"
#include "unwind/cfi.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"


static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
/* How long a snapshot waits for running threads' handlers (ms). */
#define SNAP_WAIT_MS 200

/* One pass of a snapshot: its state (snap_pass()). */
struct snap_ctx {
	struct kiln_prof *raw;
	int dir;
	pid_t pid;
	uint32_t gen, sent;
	bool can_signal;
	uint64_t *buf;
};

static void snap_add(struct kiln_prof *raw, pid_t tid, uint8_t state,
		     const uint64_t *pcs, uint32_t n)
{
	uint32_t locs[MAX_DEPTH], i, nl;
	struct kiln_label l[4];
	int64_t one = 1;

	for (i = 0; i < n && i < MAX_DEPTH; i++)
		locs[i] = kiln_prof_location(raw, 0, pcs[i], NULL, 0);
	nl = kcpu_thread_labels(raw, (uint32_t)tid, state, l);
	kiln_prof_add_sample(raw, locs, i, &one, kiln_prof_labelset(raw, l, nl));
}

/* A thread of the snapshot: unwound from here if it waits, signalled
 * (its handler unwinds it) if it runs. */
static int snap_one(pid_t tid, char c, void *arg)
{
	struct snap_ctx *x = arg;
	uint64_t pcs[MAX_DEPTH];
	int n = c == 'R' ? -1 : kiln_sampler_unwind_waiting(x->dir, x->pid, tid,
							   x->buf, pcs);

	if (n < 0 && x->can_signal) {
		if (!kiln_sampler_sigprof_to(x->pid, tid, (int)(SNAP_MAGIC | x->gen)))
			x->sent++;
		return 0;
	}
	/* (A running thread that cannot be signalled: an empty stack.) */
	snap_add(x->raw, tid, kiln_sampler_wall_state_of(c), pcs,
		 n < 0 ? 0 : (uint32_t)n);
	return 0;
}

/* One pass: waiting threads unwound here into raw, running ones
 * signalled; their records are then taken into raw too. */
static int snap_pass(struct kiln_prof *raw, int dir, uint32_t gen,
		     bool can_signal, uint64_t *buf)
{
	struct timespec pause = { 0, 1000000 };
	struct snap_ctx x = { raw, dir, getpid(), gen, 0, can_signal, buf };
	uint32_t i;
	int err;

	atomic_store(&kcpu_snap_next, 0);
	for (i = 0; i < SNAP_MAX; i++)
		atomic_store_explicit(&kcpu_snaps[i].gen, 0, memory_order_relaxed);
	atomic_store_explicit(&kcpu_snap_gen, gen, memory_order_release);
	err = kiln_sampler_each_thread(dir, gettid_(), snap_one, &x);
	/* The running threads' handlers (a thread with SIGPROF blocked, or
	 * one that exited, is not waited for beyond SNAP_WAIT_MS). */
	for (i = 0; !err && i < SNAP_WAIT_MS; i++) {
		uint32_t done = 0, k, lim = atomic_load(&kcpu_snap_next);

		for (k = 0; k < lim && k < SNAP_MAX; k++)
			done += atomic_load_explicit(&kcpu_snaps[k].gen, memory_order_acquire) == gen;
		if (done >= x.sent)
			break;
		nanosleep(&pause, NULL);
	}
	atomic_store_explicit(&kcpu_snap_gen, 0, memory_order_release);
	for (i = 0; i < SNAP_MAX && i < atomic_load(&kcpu_snap_next); i++) {
		struct snap_rec *r = &kcpu_snaps[i];

		if (atomic_load_explicit(&r->gen, memory_order_acquire) == gen)
			snap_add(raw, (pid_t)r->tid, KILN_WALL_RUNNING, r->pcs, r->n);
	}
	return err ? err : kiln_prof_error(raw);
}

int kiln_sampler_snapshot(struct kiln_prof **out)
{
	static uint32_t gen;
	struct kiln_kfd dir = KILN_KFD_INIT;
	struct kiln_prof *raw = NULL;
	uint64_t *buf = NULL;
	bool can_signal = false;
	int err, pass;

	pthread_mutex_lock(&snap_lock);
	/* The unwinding tables and the handler, as a profile's start makes
	 * them (both stay). */
	kcpu_lock_state();
	if (!kcpu_cfi) {
		kcpu_cfi = kiln_cfi_new();
		if (kcpu_cfi) {
			uint64_t lo, hi;

			kiln_cfi_set_lazy(kcpu_cfi, true, kcpu_wake_collector, NULL);
			kiln_rt_own_frames(&lo, &hi);
			kiln_cfi_set_skip(kcpu_cfi, lo, hi);
		}
	}
	if (kcpu_cfi)
		kiln_cfi_refresh(kcpu_cfi);
	if (kcpu_handler_ready())
		can_signal = true;
	kcpu_unlock_state();
	err = kcpu_cfi ? 0 : -ENOMEM;
	if (!err && !kcpu_snaps) {
		void *m = mmap(NULL, SNAP_MAX * sizeof(*kcpu_snaps), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			err = -ENOMEM;
		else
			kcpu_snaps = m;
	}
	if (!err)
		err = kiln_procprof_proc_openat(&dir, "task", O_RDONLY | O_DIRECTORY);
	buf = err ? NULL : malloc(KILN_SAMPLER_COPY_BYTES);
	if (!err && !buf)
		err = -ENOMEM;
	/* A second pass when the first met code whose unwinding rows were
	 * not built yet (lazy tables) or a thread whose stack top was not
	 * known: both are learnt in between. */
	for (pass = 0; !err && pass < 2; pass++) {
		kiln_prof_free(raw);
		raw = kiln_prof_new();
		if (!raw || kiln_prof_set_types_str(raw, (const char *const[]){
				"goroutine/count" }, 1)) {
			err = -ENOMEM;
			break;
		}
		raw->period = 1;
		{
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			raw->time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
		}
		atomic_store(&kcpu_snap_unknown_top, false);
		if (++gen > 0xff)
			gen = 1;
		err = snap_pass(raw, dir.fd, gen, can_signal, buf);
		if (err || (!kiln_cfi_wanted(kcpu_cfi) && !atomic_load(&kcpu_snap_unknown_top)))
			break;
		kiln_cfi_refresh(kcpu_cfi);
		kcpu_resolve_stacks();
	}
	kiln_kfd_close(&dir);
	free(buf);
	if (!err)
		err = kcpu_finish(raw, out, NULL);
	kiln_prof_free(raw);
	pthread_mutex_unlock(&snap_lock);
	return err;
}

void kcpu_snapshot_fork_child(void)
{
	pthread_mutex_init(&snap_lock, NULL);
	atomic_store(&kcpu_snap_gen, 0);
}
