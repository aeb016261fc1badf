/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's CPU sampler (cpu stage).
 *
 * Engine: one POSIX timer per thread on that thread's CPU-time clock,
 * delivering SIGPROF to that very thread (SIGEV_THREAD_ID), so busy
 * threads are sampled in proportion to the CPU they burn; threads are
 * registered by interposing pthread_create, and threads that existed
 * before (or were created otherwise) are found in /proc/self/task.  Where
 * timer_create is refused, setitimer(ITIMER_PROF) serves the whole
 * process instead.
 *
 * The SIGPROF handler (sigprof.c, alone in its file; the state it shares
 * with this one is declared in cpuint.h) is async-signal-safe: it
 * unwinds the interrupted stack (frame pointers checked against the
 * thread's stack and the known code ranges, DWARF CFI where the code has
 * it: unwind/cfi-walk.c) into a bounded lock-free queue reserved before the
 * timers are armed, and counts a drop when the queue is full.  A collector thread drains the
 * queue every few milliseconds and interns the stacks into a profile
 * model (memory grows with distinct stacks); the profile gets its
 * mappings and symbols only when it is taken (kiln_sampler_end()),
 * outside any handler.
 */
#include <dirent.h>
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
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "runtime/guard.h"
#include "cpu/cpu.h"
#include "cpu/cpuint.h"
#include "runtime/kfd.h"
#include "unwind/cfi.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"
#include "cpu/procprof.h"

/* The sampler's state shared with the handler (declared in cpuint.h). */
struct kcpu_slot kcpu_slots[KILN_RT_MAX_THREADS];
_Atomic bool kcpu_active;
_Atomic uint64_t kcpu_in_handler;
_Atomic uint64_t kcpu_dropped;
bool kcpu_wall;
pid_t kcpu_own_pid;
struct rec *kcpu_ring;
_Atomic uint64_t kcpu_enq_pos;
struct kiln_cfi *kcpu_cfi;
_Atomic uint32_t kcpu_collector_stop;
struct snap_rec *kcpu_snaps;
_Atomic uint32_t kcpu_snap_next;
_Atomic uint32_t kcpu_snap_gen;
_Atomic bool kcpu_snap_unknown_top;

/* Sampler state: written under state_lock, read by the handler. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
/* The stop waits this long for handlers to leave (kcpu_in_handler). */
#define HANDLER_WAIT_MS 200
static enum kiln_sampler_engine engine;
static int period_ns_cfg;
static bool handler_installed;
static struct sigaction old_prof;


static clockid_t thread_cpu_clock(pid_t tid)
{
	/* The kernel's encoding of a thread's CPU clock, as glibc's
	 * pthread_getcpuclockid() builds it: CPUCLOCK_SCHED, per thread. */
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

/* ---- threads and timers (normal context) ---- */

static bool wall_stopped;

static int arm(struct kiln_rt_thread *t)
{
	struct kcpu_slot *k = &kcpu_slots[kiln_rt_thread_index(t)];
	struct sigevent sev;
	struct itimerspec its;
	int tid = atomic_load(&t->tid);

	if (atomic_load(&k->armed) || t->internal || atomic_load(&t->small_alt) ||
	    kiln_rt_frozen() || engine != KILN_ENGINE_THREAD_TIMERS)
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_value.sival_ptr = t;
	sev._sigev_un._tid = tid;
	if (timer_create(thread_cpu_clock(tid), &sev, &k->timer)) {
		int err = -errno;

		/* A filter's EPERM, a limit: that thread goes unsampled,
		 * said when the profile ends. */
		kcpu_missed_timer_refused(k);
		return err;
	}
	its.it_interval.tv_sec = period_ns_cfg / 1000000000;
	its.it_interval.tv_nsec = period_ns_cfg % 1000000000;
	its.it_value = its.it_interval;
	if (timer_settime(k->timer, 0, &its, NULL)) {
		int err = -errno;

		timer_delete(k->timer);
		return err;
	}
	atomic_store(&k->armed, true);
	kcpu_missed_timer_made(k);
	return 0;
}

static void disarm(struct kiln_rt_thread *t)
{
	struct kcpu_slot *k = &kcpu_slots[kiln_rt_thread_index(t)];

	if (atomic_load(&k->armed) && atomic_exchange(&k->armed, false))
		timer_delete(k->timer);
}

/* ---- the registry's hooks (runtime/threads.c) ---- */

/* A slot newly taken: lock-free, on a new thread's first step. */
static void thread_claimed(struct kiln_rt_thread *t)
{
	struct kcpu_slot *k = &kcpu_slots[kiln_rt_thread_index(t)];

	atomic_store(&k->armed, false);
	atomic_store(&k->owed, 0);
	atomic_store(&k->timer_failed, false);
}

/* A thread registered: sampled if a profile runs (never kiln's own). */
static void thread_started(struct kiln_rt_thread *t)
{
	struct kcpu_slot *k = &kcpu_slots[kiln_rt_thread_index(t)];
	bool was = atomic_load(&k->armed);

	if (t->internal)
		disarm(t);
	else if (atomic_load(&kcpu_active))
		arm(t);
	/* Found late by a scan: what it ran before was not sampled. */
	if (!was && atomic_load(&k->armed))
		kcpu_missed_armed(atomic_load(&t->tid),
				  thread_cpu_clock(atomic_load(&t->tid)));
}

/*
 * The thread's own last step.  Its SIGPROF is blocked for the rest of
 * its life: once its slot is freed, the wall ticker or a snapshot that
 * still lists it in /proc would take a fresh slot for it and signal it
 * -- with no mark of a small alternate stack of its own, which the
 * kernel's frame would not fit (SIGSEGV) -- and a sample there would
 * only show kiln's and glibc's exit steps.  A signal still pending then
 * dies with the thread.
 */
static void thread_ended(struct kiln_rt_thread *t)
{
	uint64_t prof = 1ull << (SIGPROF - 1);

	disarm(t);
	kcpu_missed_ended(atomic_load(&t->tid));
	if (atomic_load(&t->tid) == gettid_())
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &prof, NULL, sizeof(prof));
}

static const struct kiln_rt_thread_hooks thread_hooks = {
	.claimed = thread_claimed,
	.started = thread_started,
	.ended = thread_ended,
};

/* ---- start and stop ---- */


bool kiln_sampler_running(void)
{
	return atomic_load(&kcpu_active);
}

enum kiln_sampler_engine kiln_sampler_engine(void)
{
	return engine;
}

bool kiln_sampler_is_own_handler(const struct sigaction *act)
{
	return (act->sa_flags & SA_SIGINFO) && act->sa_sigaction == kcpu_on_sigprof;
}

/* The program's own SIGPROF handler, if it has one. */
static bool foreign_sigprof(void)
{
	struct sigaction sa;

	if (sigaction(SIGPROF, NULL, &sa))
		return false;
	if (sa.sa_flags & SA_SIGINFO)
		return sa.sa_sigaction != kcpu_on_sigprof;
	return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

static int install_handler(void)
{
	struct sigaction sa;

	if (handler_installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = kcpu_on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, &old_prof))
		return -errno;
	/* It stays: a SIGPROF still pending after a stop must not kill the
	 * program (SIGPROF's default action is to terminate). */
	handler_installed = true;
	return 0;
}

/* ---- for the goroutine snapshot (snapshot.c) ---- */

void kcpu_lock_state(void)
{
	pthread_mutex_lock(&state_lock);
}

void kcpu_unlock_state(void)
{
	pthread_mutex_unlock(&state_lock);
}

bool kcpu_handler_ready(void)
{
	return kcpu_cfi && !foreign_sigprof() && !install_handler();
}

/* ---- for the wall-clock ticker (wall.c) ---- */

bool kiln_sampler_internal(pid_t tid)
{
	struct kiln_rt_thread *t = kiln_rt_thread_find(tid);

	return t && (t->internal || atomic_load(&t->small_alt));
}

static _Atomic uint64_t small_alts;

/*
 * The calling thread t has just been marked small_alt: no sender starts a
 * SIGPROF to it any more (kiln_sampler_sigprof_to() raises `sending`,
 * then looks at small_alt; here small_alt was raised, then `sending` is
 * looked at: one of the two sees the other).  A signal a sender was
 * sending is waited for, and one already queued (the wall ticker's, the
 * snapshot's, the CPU timer's last) is taken off the queue unhandled:
 * delivered after the small stack is set, the kernel's frame would not
 * fit on it (SIGSEGV) or would run over it.  Only while the disposition
 * is kiln's handler: a SIGPROF of the program's own is its business.
 * System calls only (a runtime may set stacks from a signal handler).
 */
static void drop_sent_sigprof(struct kiln_rt_thread *t)
{
	struct kcpu_slot *k = &kcpu_slots[kiln_rt_thread_index(t)];
	struct timespec zero = { 0, 0 };
	uint64_t prof = 1ull << (SIGPROF - 1), old;

	while (atomic_load(&k->sending))
		syscall(SYS_sched_yield);
	if (!handler_installed || foreign_sigprof())
		return;
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &prof, &old, sizeof(prof)))
		return;
	while (syscall(SYS_rt_sigtimedwait, &prof, NULL, &zero, sizeof(prof)) == SIGPROF)
		continue;	/* a tick of a thread that is not sampled now */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(old));
}

bool kiln_sampler_small_altstack(bool small)
{
	struct kiln_rt_thread *t;
	bool was;

	kiln_rt_registry_lock();
	/* No register_self(): it allocates, and a runtime may set its
	 * stacks from inside a signal handler. */
	t = kiln_rt_self ? kiln_rt_self : kiln_rt_thread_register(gettid_(), 0, false);
	if (!t || t->internal) {
		kiln_rt_registry_unlock();
		return false;
	}
	kiln_rt_self = t;
	was = atomic_exchange(&t->small_alt, small);
	if (small && !was) {
		atomic_fetch_add(&small_alts, 1);
		disarm(t);
	} else if (!small && was && atomic_load(&kcpu_active)) {
		arm(t);
	}
	kiln_rt_registry_unlock();
	if (small && !was) {
		drop_sent_sigprof(t);
		kiln_rt_log(KILN_LOG_INFO, "thread %d set its own alternate signal "
			       "stack, too small for a sample: not sampled while it "
			       "has it", (int)gettid_());
	}
	return was;
}

uint64_t kiln_sampler_small_altstacks(void)
{
	return atomic_load(&small_alts);
}

void kiln_sampler_freeze(const char *why)
{
	size_t i;

	if (!kiln_rt_freeze(why))
		return;
	pthread_mutex_lock(&state_lock);
	if (atomic_load(&kcpu_active)) {
		if (engine == KILN_ENGINE_ITIMER) {
			struct itimerval zero = { { 0, 0 }, { 0, 0 } };

			setitimer(ITIMER_PROF, &zero, NULL);
		}
		if (engine == KILN_ENGINE_WALL && !wall_stopped) {
			kiln_sampler_wall_stop();
			wall_stopped = true;
		}
		kiln_rt_registry_lock();
		for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++)
			disarm(&kiln_rt_threads[i]);
		kiln_rt_registry_unlock();
	}
	pthread_mutex_unlock(&state_lock);
	kiln_rt_log(KILN_LOG_INFO, "%s: CPU sampling stops here (its system "
		       "calls could be forbidden); what was taken is kept", why);
}

/* Thread tid's slot, taken for it if it has none (a thread kiln did not
 * see start, signalled from outside: its handler learns its stack top). */
struct kiln_rt_thread *kcpu_slot_for(pid_t tid)
{
	struct kiln_rt_thread *t = kiln_rt_thread_find(tid);

	if (!t) {
		kiln_rt_registry_lock();
		t = kiln_rt_thread_register(tid, 0, false);
		kiln_rt_registry_unlock();
	}
	return t;
}

bool kiln_sampler_owe(pid_t tid, uint64_t weight)
{
	struct kiln_rt_thread *t = kcpu_slot_for(tid);

	if (!t || t->internal)
		return false;
	atomic_fetch_add_explicit(&kcpu_slots[kiln_rt_thread_index(t)].owed, weight,
				  memory_order_relaxed);
	return true;
}

int kiln_sampler_sigprof_to(pid_t pid, pid_t tid, int value)
{
	struct kiln_rt_thread *t = kcpu_slot_for(tid);
	struct kcpu_slot *k;
	siginfo_t si;
	int rc;

	if (!t)
		return -ENOSPC;	/* not followed: could set a small stack unseen */
	k = &kcpu_slots[kiln_rt_thread_index(t)];
	/* Raised before small_alt is looked at (drop_sent_sigprof()). */
	atomic_fetch_add(&k->sending, 1);
	if (t->internal || atomic_load(&t->small_alt)) {
		rc = -EAGAIN;
	} else {
		memset(&si, 0, sizeof(si));
		si.si_signo = SIGPROF;
		si.si_code = SI_QUEUE;
		si.si_pid = pid;
		si.si_uid = getuid();
		si.si_value.sival_int = value;
		rc = syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGPROF, &si) ? -errno : 0;
	}
	atomic_fetch_sub(&k->sending, 1);
	return rc;
}

void kiln_sampler_push(pid_t tid, enum kiln_sampler_wall_state state,
			 uint64_t weight, const uint64_t *pcs, int n)
{
	if (!atomic_load_explicit(&kcpu_active, memory_order_acquire))
		return;
	if (!kcpu_ring_push((uint32_t)tid, (uint8_t)state, weight, pcs,
		       n > MAX_DEPTH ? MAX_DEPTH : n))
		atomic_fetch_add_explicit(&kcpu_dropped, 1, memory_order_relaxed);
}

int kiln_sampler_unwind_copy(uint64_t pc, uint64_t sp, const void *copy,
			       size_t len, uint64_t *pcs, int max)
{
	struct kiln_cfi_regs r = { pc, sp, 0 };
	int n = kiln_cfi_unwind_copy(kcpu_cfi, &r, copy, len, pcs, max);

	/* A function whose rows were not built yet (lazy tables) ended the
	 * walk: this is a normal thread, which may build them now. */
	if (kiln_cfi_wanted(kcpu_cfi)) {
		kiln_cfi_refresh(kcpu_cfi);
		n = kiln_cfi_unwind_copy(kcpu_cfi, &r, copy, len, pcs, max);
	}
	return n;
}

int kiln_sampler_begin(int hz, bool wall_mode)
{
	int err = 0;
	size_t i;

	if (hz <= 0 || hz > 100000)
		return -EINVAL;
	if (kiln_rt_frozen()) {
		kiln_rt_log(KILN_LOG_ERROR, "no CPU profile: %s", kiln_rt_frozen());
		return -EPERM;
	}
	pthread_mutex_lock(&state_lock);
	if (atomic_load(&kcpu_active) || kcpu_collect_opened()) {
		err = -EBUSY;
		goto out_unlock;
	}
	if (foreign_sigprof()) {
		kiln_rt_log(KILN_LOG_INFO, "the program has its own SIGPROF "
			       "handler: CPU profiling steps aside");
		err = -EEXIST;
		goto out_unlock;
	}
	period_ns_cfg = 1000000000 / hz;
	if (!kcpu_cfi) {
		kcpu_cfi = kiln_cfi_new();
		if (!kcpu_cfi) {
			err = -ENOMEM;
			goto out_unlock;
		}
		/*
		 * A module's unwinding tables are built when a sample first
		 * lands in it (the handler wakes the collector, which builds
		 * them; that sample walks it by frame pointers): most loaded
		 * libraries never show up in a profile, and building them all
		 * cost several milliseconds at every start.
		 */
		kiln_cfi_set_lazy(kcpu_cfi, true, kcpu_wake_collector, NULL);
		{
			uint64_t lo, hi;

			kiln_rt_own_frames(&lo, &hi);
			kiln_cfi_set_skip(kcpu_cfi, lo, hi);
		}
	}
	kiln_cfi_refresh(kcpu_cfi);
	/* Its pages are made writable by the collector (populate_ring()).
	 * Mapped once for the life of the process (see in_handler); a
	 * stop gives its pages back (MADV_DONTNEED: zeros again). */
	if (!kcpu_ring) {
		void *m = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED) {
			err = -ENOMEM;
			goto out_unlock;
		}
		kcpu_ring = m;
	} else {
		madvise(kcpu_ring, RING_BYTES, MADV_DONTNEED);
	}
	/* All zeros: slot i's sequence is i (see struct rec). */
	atomic_store(&kcpu_enq_pos, 0);
	atomic_store(&kcpu_dropped, 0);
	atomic_store(&kcpu_short_stack, 0);
	kcpu_missed_reset();
	kcpu_wall = wall_mode;
	kcpu_own_pid = getpid();
	err = kcpu_collect_open(period_ns_cfg, kcpu_wall);
	if (err)
		goto out_unlock;
	err = install_handler();
	if (err)
		goto out_free;
	/* Our own thread first: the collector is never sampled. */
	err = kcpu_collect_start();
	if (err)
		goto out_free;
	if (!kiln_rt_self)
		kiln_rt_register_self(false);
	kiln_rt_altstack_ensure();
	if (kcpu_wall) {
		engine = KILN_ENGINE_WALL;
		atomic_store(&kcpu_active, true);
		err = kiln_sampler_wall_start(period_ns_cfg);
		if (err) {
			atomic_store(&kcpu_active, false);
			kcpu_collect_stop();
			goto out_free;
		}
		kiln_rt_log(KILN_LOG_INFO, "wall-clock profiling at %d Hz", hz);
		pthread_mutex_unlock(&state_lock);
		return 0;
	}
	engine = KILN_ENGINE_THREAD_TIMERS;
	atomic_store(&kcpu_active, true);
	kiln_rt_registry_lock();
	for (i = 0; i < atomic_load(&kiln_rt_threads_hw) && !err; i++)
		if (atomic_load(&kiln_rt_threads[i].tid))
			err = arm(&kiln_rt_threads[i]);
	kiln_rt_registry_unlock();
	if (err) {
		/* timer_create refused (seccomp, old kernels): one process-wide
		 * CPU-time timer, as gperftools does. */
		struct itimerval it;

		kiln_rt_log(KILN_LOG_INFO, "per-thread timers refused (%s): "
			       "using setitimer(ITIMER_PROF)", strerror(-err));
		kiln_rt_registry_lock();
		for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++)
			disarm(&kiln_rt_threads[i]);
		kiln_rt_registry_unlock();
		engine = KILN_ENGINE_ITIMER;
		it.it_interval.tv_sec = period_ns_cfg / 1000000000;
		it.it_interval.tv_usec = (period_ns_cfg % 1000000000) / 1000;
		if (!it.it_interval.tv_sec && !it.it_interval.tv_usec)
			it.it_interval.tv_usec = 1;
		it.it_value = it.it_interval;
		err = setitimer(ITIMER_PROF, &it, NULL) ? -errno : 0;
		if (err) {
			atomic_store(&kcpu_active, false);
			kcpu_collect_stop();
			goto out_free;
		}
	} else {
		kiln_rt_threads_scan();
	}
	kiln_rt_log(KILN_LOG_INFO, "CPU profiling at %d Hz (%s)", hz,
		       engine == KILN_ENGINE_THREAD_TIMERS ?
		       "per-thread CPU-time timers" : "setitimer(ITIMER_PROF)");
	pthread_mutex_unlock(&state_lock);
	return 0;
out_free:
	kcpu_collect_close();
	engine = KILN_ENGINE_NONE;
out_unlock:
	pthread_mutex_unlock(&state_lock);
	return err;
}

int kiln_sampler_end(struct kiln_prof **out)
{
	struct kiln_prof *raw;
	struct timespec now, pause = { 0, 1000000 };
	char note[1024];
	uint64_t v;
	size_t i;
	int err;

	pthread_mutex_lock(&state_lock);
	if (!atomic_load(&kcpu_active)) {
		pthread_mutex_unlock(&state_lock);
		return -ENOENT;
	}
	if (engine == KILN_ENGINE_ITIMER) {
		struct itimerval zero = { { 0, 0 }, { 0, 0 } };

		setitimer(ITIMER_PROF, &zero, NULL);
	}
	/* No tick after this: the ticker's signals stop with it. */
	if (engine == KILN_ENGINE_WALL && !wall_stopped)
		kiln_sampler_wall_stop();
	wall_stopped = false;
	kiln_rt_registry_lock();
	for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++)
		disarm(&kiln_rt_threads[i]);
	kiln_rt_registry_unlock();
	atomic_store(&kcpu_active, false);
	/* Handlers still running finish their sample before the last drain;
	 * one the program jumped out of is not waited for (see in_handler). */
	for (i = 0; (uint32_t)atomic_load(&kcpu_in_handler) && i < HANDLER_WAIT_MS; i++)
		nanosleep(&pause, NULL);
	v = atomic_load(&kcpu_in_handler);
	if ((uint32_t)v) {
		kiln_rt_log(KILN_LOG_DEBUG, "%u SIGPROF handler(s) never returned "
			       "(the program jumped out of them): not waited for",
			       (unsigned)(uint32_t)v);
		atomic_store(&kcpu_in_handler, ((v >> 32) + 1) << 32);
	}
	kcpu_collect_stop();
	raw = kcpu_collect_take();
	clock_gettime(CLOCK_REALTIME, &now);
	raw->duration_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec -
			      raw->time_nanos;
	if (atomic_load(&kcpu_dropped))
		kiln_rt_log(KILN_LOG_INFO, "%" PRIu64 " samples dropped (buffer full)",
			       atomic_load(&kcpu_dropped));
	/* What the profile misses, said in it too. */
	note[0] = '\0';
	if (kiln_rt_frozen())
		snprintf(note, sizeof(note), "kiln: sampling stopped early: %s",
			 kiln_rt_frozen());
	if (atomic_load(&small_alts) || atomic_load(&kcpu_short_stack)) {
		snprintf(note + strlen(note), sizeof(note) - strlen(note),
			 "%skiln: not sampled: %" PRIu64 " thread(s) "
			 "while on an alternate signal stack of their own smaller "
			 "than %d KiB; %" PRIu64 " sample(s) dropped on one",
			 note[0] ? "; " : "", atomic_load(&small_alts),
			 KILN_ALTSTACK_MIN / 1024,
			 atomic_load(&kcpu_short_stack));
	}
	kcpu_missed_note(note, sizeof(note), engine == KILN_ENGINE_THREAD_TIMERS);
	if (note[0])
		kiln_rt_log(KILN_LOG_INFO, "%s", note + 6);
	madvise(kcpu_ring, RING_BYTES, MADV_DONTNEED);
	engine = KILN_ENGINE_NONE;
	err = kiln_prof_error(raw);
	if (!err)
		err = kcpu_finish_warm(raw, out);
	if (!err)
		(*out)->duration_nanos = raw->duration_nanos;
	if (!err && note[0])
		kiln_prof_add_comment(*out, note);
	kiln_prof_free(raw);
	pthread_mutex_unlock(&state_lock);
	return err;
}

/*
 * In a child after fork(): no timers, no collector thread exist here.
 * The child starts with no profile running (it must not write over the
 * parent's file); its own pthread_create calls still register threads.
 */
void kiln_sampler_fork_child(void)
{
	size_t i;

	atomic_store(&kcpu_active, false);
	atomic_store(&kcpu_in_handler, 0);
	kcpu_wall = false;
	/* No timer exists here (the registry's part: kiln_rt_threads_fork_child()). */
	for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++)
		atomic_store(&kcpu_slots[i].armed, false);
	pthread_mutex_init(&state_lock, NULL);
	kcpu_collect_fork_child();
	kcpu_snapshot_fork_child();
	kcpu_wall_fork_child();
	/* The CFI tables' lock may have been held by a parent thread that
	 * does not exist here: start afresh (the old set is leaked). */
	kcpu_cfi = NULL;
	/* The queue's mapping was copied: kept for a profile of its own. */
	engine = KILN_ENGINE_NONE;
}

void kiln_sampler_init(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	kiln_rt_gate_init();
	kiln_rt_thread_hooks_set(&thread_hooks);
	kiln_rt_register_self(false);
}
