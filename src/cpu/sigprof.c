/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU sampler's SIGPROF handler (cpu stage) and what it calls: the
 * push into the sample queue (Vyukov's bounded MPMC queue, drained by
 * cpu.c's collector), the slot lookup, the goroutine snapshot's record.
 * Everything here is async-signal-safe; the file holds nothing else, so
 * what runs inside a signal can be read in one place.  The state it
 * reads is cpu.c's (cpuint.h).
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/cpuint.h"
#include "unwind/cfi.h"

void kcpu_wake_collector(void *arg)
{
	syscall(SYS_futex, &kcpu_collector_stop, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

bool kcpu_ring_push(uint32_t tid, uint8_t state, uint64_t weight,
		    const uint64_t *pcs, int n)
{
	uint64_t pos = atomic_load_explicit(&kcpu_enq_pos, memory_order_relaxed);
	struct rec *r;

	for (;;) {
		uint64_t seq;
		int64_t dif;

		r = &kcpu_ring[pos & (RING_SLOTS - 1)];
		seq = atomic_load_explicit(&r->seq, memory_order_acquire) +
		      (pos & (RING_SLOTS - 1));
		dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &kcpu_enq_pos, &pos, pos + 1, memory_order_relaxed,
				    memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return false;	/* full */
		} else {
			pos = atomic_load_explicit(&kcpu_enq_pos, memory_order_relaxed);
		}
	}
	r->tid = tid;
	r->n = (uint16_t)n;
	r->state = state;
	r->weight = weight;
	memcpy(r->pcs, pcs, (size_t)n * sizeof(*pcs));
	atomic_store_explicit(&r->seq, pos + 1 - (pos & (RING_SLOTS - 1)),
			      memory_order_release);
	/* A quarter of the queue since the last time: the collector drains
	 * now rather than at the end of its period. */
	if (((pos + 1) & (RING_SLOTS / 4 - 1)) == 0)
		kcpu_wake_collector(NULL);
	return true;
}

/* The interrupted stack pointer of a handler's ucontext (0 where the
 * architecture is not known).  Async-signal-safe. */
static inline uint64_t uc_sp(const void *ucv)
{
#if defined(__x86_64__)
	return (uint64_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	return ((const ucontext_t *)ucv)->uc_mcontext.sp;
#else
	(void)ucv;
	return 0;
#endif
}

static void snap_take(uint32_t gen, void *ucv)
{
	struct kiln_rt_thread *t = kiln_rt_self;
	struct snap_rec *r;
	uint64_t hi, sp;
	uint32_t i;

	if (!gen || gen != atomic_load_explicit(&kcpu_snap_gen, memory_order_acquire))
		return;
	i = atomic_fetch_add_explicit(&kcpu_snap_next, 1, memory_order_relaxed);
	if (i >= SNAP_MAX)
		return;
	r = &kcpu_snaps[i];
	kiln_rt_altstack_ensure();
	if (!t) {
		t = kiln_rt_thread_find(gettid_());
		kiln_rt_self = t;
	}
	sp = uc_sp(ucv);
	hi = t ? atomic_load_explicit(&t->stack_hi, memory_order_relaxed) : 0;
	if (!hi) {
		if (t)
			atomic_store_explicit(&t->sp_seen, sp, memory_order_relaxed);
		atomic_store_explicit(&kcpu_snap_unknown_top, true, memory_order_relaxed);
		hi = sp;
	}
	r->tid = (uint32_t)gettid_();
	r->n = (uint32_t)kiln_cfi_unwind(kcpu_cfi, ucv, sp, hi, r->pcs, MAX_DEPTH);
	atomic_store_explicit(&r->gen, gen, memory_order_release);
}

/* The room a sample needs below the handler's entry: its frame (the
 * stack copy of MAX_DEPTH addresses) and the unwinder's. */
#define SAMPLE_ROOM (16 * 1024)

_Atomic uint64_t kcpu_short_stack;	/* samples dropped for want of room */

static void sample(int sig, siginfo_t *si, void *ucv);

/*
 * Async-signal-safe.  Not re-entrant (SIGPROF is blocked while it runs).
 * Runs on the thread's alternate stack (SA_ONSTACK, altstack.c); every
 * function it calls was bound when libkiln.so loaded (-z now: no lazy
 * binding, with its deep stack, in a handler).  Nothing it holds stays
 * held if the program jumps out of it (see in_handler).
 *
 * Its own frame is small: on an alternate stack of the program's too
 * small for a sample (set by a raw system call, which the interposer
 * does not see) it drops the sample before sample()'s frame would run
 * over the stack's end into the program's memory.
 */
void kcpu_on_sigprof(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;

	if (kiln_rt_altstack_short(SAMPLE_ROOM)) {
		atomic_fetch_add_explicit(&kcpu_short_stack, 1, memory_order_relaxed);
		errno = saved_errno;
		return;
	}
	errno = saved_errno;
	sample(sig, si, ucv);
}

__attribute__((noinline))
static void sample(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	struct kiln_rt_thread *t;
	uint64_t pcs[MAX_DEPTH], weight = 1, hi, sp, epoch, v;
	uint8_t state = 0;
	int n;

	epoch = atomic_fetch_add_explicit(&kcpu_in_handler, 1, memory_order_acquire) >> 32;
	if (si && si->si_code == SI_QUEUE &&
	    ((unsigned)si->si_value.sival_int & ~0xffu) == SNAP_MAGIC &&
	    si->si_pid == getpid()) {
		snap_take((unsigned)si->si_value.sival_int & 0xff, ucv);
		goto out;
	}
	if (!atomic_load_explicit(&kcpu_active, memory_order_acquire))
		goto out;
	/* A timer's signal still pending when the thread's ending disarmed
	 * it: the thread now runs kiln's exit steps (and may have given its
	 * alternate stack back). */
	if (si && si->si_code == SI_TIMER && si->si_value.sival_ptr) {
		t = si->si_value.sival_ptr;
		if (t >= kiln_rt_threads && t < kiln_rt_threads + KILN_RT_MAX_THREADS &&
		    !atomic_load_explicit(&kcpu_slots[kiln_rt_thread_index(t)].armed,
					  memory_order_relaxed))
			goto out;
	}
	/* A thread kiln had not seen start: its next samples run on an
	 * alternate stack (this one still runs where it was taken). */
	kiln_rt_altstack_ensure();
	t = kiln_rt_self;
	if (kcpu_wall) {
		/* Only the ticker's (wall.c): the wall time of the ticks
		 * that found the thread running since its last sample (a
		 * signal still pending when the next is sent is merged). */
		if (!si || si->si_code != SI_QUEUE || si->si_pid != kcpu_own_pid)
			goto out;
		if (!t) {
			t = kiln_rt_thread_find(gettid_());
			kiln_rt_self = t;
		}
		weight = t ? atomic_exchange_explicit(&kcpu_slots[kiln_rt_thread_index(t)].owed, 0,
							 memory_order_relaxed) : 0;
		if (!weight)
			goto out;
		state = KILN_WALL_RUNNING;
	} else if (si && si->si_code == SI_TIMER && si->si_value.sival_ptr) {
		t = si->si_value.sival_ptr;
		if (t < kiln_rt_threads || t >= kiln_rt_threads + KILN_RT_MAX_THREADS)
			goto out;
		/* Expirations merged into one signal still cost CPU time;
		 * the kernel puts their count in the siginfo (no
		 * timer_getoverrun() call: one syscall less per signal). */
		if (si->si_overrun > 0)
			weight += (uint64_t)si->si_overrun;
	} else if (!t) {
		t = kiln_rt_thread_find(gettid_());
		kiln_rt_self = t;
	}
	if (t && t->internal)
		goto out;
	hi = t ? atomic_load_explicit(&t->stack_hi, memory_order_relaxed) : 0;
	sp = uc_sp(ucv);
	/* The stack top is found later by the collector from this sp;
	 * until then only the interrupted pc is taken. */
	if (t && !hi)
		atomic_store_explicit(&t->sp_seen, sp, memory_order_relaxed);
	if (hi <= sp)
		hi = sp;
	n = kiln_cfi_unwind(kcpu_cfi, ucv, sp, hi, pcs, MAX_DEPTH);
	if (n <= 0)
		goto out;
	/* The thread's own slot knows its tid (no gettid call). */
	if (!kcpu_ring_push(t && t == kiln_rt_self ?
		       (uint32_t)atomic_load_explicit(&t->tid, memory_order_relaxed) :
		       (uint32_t)gettid_(), state, weight, pcs, n))
		atomic_fetch_add_explicit(&kcpu_dropped, 1, memory_order_relaxed);
out:
	v = atomic_load_explicit(&kcpu_in_handler, memory_order_relaxed);
	while ((v >> 32) == epoch &&
	       !atomic_compare_exchange_weak_explicit(&kcpu_in_handler, &v, v - 1,
						      memory_order_release,
						      memory_order_relaxed))
		;
	errno = saved_errno;
}

