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
 * mappings and symbols only when it is taken (kiln_agent_cpu_end()),
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
static enum kiln_agent_engine engine;
static int period_ns_cfg;
static uint64_t deq_pos;
static pthread_t collector;
static bool handler_installed;
static struct sigaction old_prof;

/* The collector's aggregation. */
static struct kiln_prof *agg;
static struct kiln_htab tid_index;	/* tid -> label set (value in tids[]) */
static struct tid_ent { uint32_t tid, state, lset; } *tids;
static size_t ntids, tids_alloc;
static uint64_t dl_generation;

static clockid_t thread_cpu_clock(pid_t tid)
{
	/* The kernel's encoding of a thread's CPU clock, as glibc's
	 * pthread_getcpuclockid() builds it: CPUCLOCK_SCHED, per thread. */
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

/* ---- threads and timers (normal context) ---- */

/* Threads whose CPU timer could not be made (this profile's). */
static _Atomic uint64_t timer_failures;

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
		/* A filter's EPERM, a limit: that thread goes unsampled,
		 * said when the profile ends. */
		atomic_fetch_add(&timer_failures, 1);
		return -errno;
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
}

/* A thread registered: sampled if a profile runs (never kiln's own). */
static void thread_started(struct kiln_rt_thread *t)
{
	if (t->internal)
		disarm(t);
	else if (atomic_load(&kcpu_active))
		arm(t);
}

static void thread_ended(struct kiln_rt_thread *t)
{
	disarm(t);
}

static const struct kiln_rt_thread_hooks thread_hooks = {
	.claimed = thread_claimed,
	.started = thread_started,
	.ended = thread_ended,
};

/* ---- the collector ---- */

static bool tid_eq(const void *ctx, uint32_t id)
{
	const uint32_t *k = ctx;

	return tids[id - 1].tid == k[0] && tids[id - 1].state == k[1];
}

/* The state label's values (wall mode), as kiln record --wall's. */
static const char *const state_names[] = {
	[KILN_WALL_RUNNING] = "running",
	[KILN_WALL_SLEEPING] = "sleeping",
	[KILN_WALL_BLOCKED_IO] = "blocked-io",
	[KILN_WALL_OTHER] = "other",
};

/* The labels of thread tid's samples in state (0: none) in p: pid,
 * thread, thread_name, state.  Returns how many (at most 4). */
static uint32_t thread_labels(struct kiln_prof *p, uint32_t tid, uint8_t state,
			      struct kiln_label *l)
{
	char path[64], comm[64] = "";
	FILE *f;
	uint32_t n = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	l[n++] = (struct kiln_label){ kiln_prof_interns(p, "pid"), 0,
				      getpid(), 0 };
	l[n++] = (struct kiln_label){ kiln_prof_interns(p, "thread"), 0, tid, 0 };
	if (comm[0])
		l[n++] = (struct kiln_label){ kiln_prof_interns(p, "thread_name"),
					      kiln_prof_interns(p, comm), 0, 0 };
	if (state && state < sizeof(state_names) / sizeof(*state_names))
		l[n++] = (struct kiln_label){ kiln_prof_interns(p, "state"),
					      kiln_prof_interns(p, state_names[state]),
					      0, 0 };
	return n;
}

/* The label set of thread tid's samples in state (0: none). */
static uint32_t labels_for(uint32_t tid, uint8_t state)
{
	uint32_t key[2] = { tid, state };
	uint32_t hash = (uint32_t)kiln_hash(key, sizeof(key));
	uint32_t id = kiln_htab_find(&tid_index, hash, tid_eq, key);
	struct kiln_label l[4];
	uint32_t n;

	if (id)
		return tids[id - 1].lset;
	n = thread_labels(agg, tid, state, l);
	if (ntids == tids_alloc) {
		size_t na = tids_alloc ? tids_alloc * 2 : 64;
		struct tid_ent *t = realloc(tids, na * sizeof(*t));

		if (!t)
			return 0;
		tids = t;
		tids_alloc = na;
	}
	tids[ntids].tid = tid;
	tids[ntids].state = state;
	tids[ntids].lset = kiln_prof_labelset(agg, l, n);
	if (kiln_htab_insert(&tid_index, hash, (uint32_t)ntids + 1))
		return 0;
	return tids[ntids++].lset;
}

static void drain(void)
{
	for (;;) {
		uint64_t idx = deq_pos & (RING_SLOTS - 1);
		struct rec *r = &kcpu_ring[idx];
		uint64_t seq = atomic_load_explicit(&r->seq, memory_order_acquire) + idx;
		uint32_t locs[MAX_DEPTH];
		int64_t values[2];
		uint32_t i, n;

		if (seq != deq_pos + 1)
			break;
		n = r->n > MAX_DEPTH ? MAX_DEPTH : r->n;
		for (i = 0; i < n; i++)
			locs[i] = kiln_prof_location(agg, 0, r->pcs[i], NULL, 0);
		if (kcpu_wall) {
			values[0] = 1;
			values[1] = (int64_t)r->weight;
		} else {
			values[0] = (int64_t)r->weight;
			values[1] = (int64_t)r->weight * period_ns_cfg;
		}
		kiln_prof_add_sample(agg, locs, n, values,
				     labels_for(r->tid, r->state));
		atomic_store_explicit(&r->seq, deq_pos + RING_SLOTS - idx,
				      memory_order_release);
		deq_pos++;
	}
}

static int dl_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uint64_t *)arg = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1;
}

/* Stack tops the handler could not know: the mapping holding a seen sp. */
static void resolve_stacks(void)
{
	size_t i;

	for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++) {
		struct kiln_rt_thread *t = &kiln_rt_threads[i];
		uint64_t sp = atomic_load(&t->sp_seen), lo, hi;

		if (!atomic_load(&t->tid) || atomic_load(&t->stack_hi) || !sp)
			continue;
		if (!kiln_maps_find(sp, &lo, &hi))
			atomic_store(&t->stack_hi, hi);
	}
}

/*
 * The collector's period: it is woken sooner when the queue fills by a
 * quarter, when a sample needs a library's unwinding tables, and when
 * the profile stops (the program's exit waits for it: no sleep may add
 * to that).  Waking rarely is what it costs the program.
 */
#define COLLECT_NS 100000000

/*
 * Makes the queue's pages present and writable ahead of the handlers,
 * from the collector, off the program's start.  A handler reads a slot's
 * sequence before it writes the slot, and a page first read is the
 * shared zero page, replaced at the write by a copy-on-write fault that
 * flushes the TLB of every CPU running the program: an interrupt to
 * each, which in a VM doubled the cost of a signal while the queue's
 * pages were new.  The collector keeps RING_AHEAD slots past the last
 * one taken ready (it runs at least every RING_SLOTS / 4 samples), so a
 * short profile never pays for the whole 4 MiB.
 */
#define RING_AHEAD (RING_SLOTS / 2)
static size_t ring_ready;	/* slots made ready so far (collector's) */

static void populate_ring(void)
{
	uint64_t taken = atomic_load_explicit(&kcpu_enq_pos, memory_order_relaxed);
	size_t want = taken + RING_AHEAD > RING_SLOTS ? RING_SLOTS :
						       (size_t)taken + RING_AHEAD;
	uintptr_t lo, hi;

	if (want <= ring_ready)
		return;
	lo = (uintptr_t)&kcpu_ring[ring_ready] & ~(uintptr_t)4095;
	hi = ((uintptr_t)&kcpu_ring[want] + 4095) & ~(uintptr_t)4095;
#ifdef MADV_POPULATE_WRITE
	if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE))
#endif
	{
		/* Older kernels: a write to every page (each holds the start
		 * of a slot; adding 0 leaves a slot a handler may be filling
		 * as it is). */
		for (size_t i = ring_ready; i < want; i++)
			atomic_fetch_add(&kcpu_ring[i].seq, 0);
	}
	ring_ready = want;
}

/*
 * The symbolizer session of the profile being taken, warmed by the
 * collector while the program runs: the modules its samples touch are
 * reported to libdwfl and their symbol tables read in the background, so
 * that writing the profile at the program's exit only looks up what is
 * new (the exit cost was several milliseconds of opening libraries and
 * symbol tables).  Dropped when libraries are loaded or unloaded (an
 * address may then name another file).  The collector's, and the stop's
 * once the collector is joined.
 */
static struct kiln_sym *warm;
static uint32_t warmed;		/* agg's locations [1, warmed] looked up */
static struct kiln_buf warm_maps;	/* the maps text warm_up() read last */
/*
 * Lines from the debug file cache (libc's, from libc6-dbg as kiln record
 * decompressed it) are read apart, by kiln_sym_fill_lines(), whose libdw
 * session ends there: the exit then frees none of libdw's tables for the
 * copy nor its mapped pages (0.2-0.3 ms of a program's exit when warm kept
 * them).  Reading libc's copy again costs the collector about 10 ms, so
 * the fills come at the warm-ups numbered 1, 2, 4, 8, 16 and then every
 * 16th (about 16 s): addresses first seen since the last fill keep their
 * names without lines.
 */
static unsigned warm_ups, fill_at = 1, fill_gap = 1;
#define FILL_GAP_MAX 16

static void warm_up(void)
{
	struct kiln_agent_maps c = { 0 };
	struct kiln_prof *p;
	uint32_t i, n = (uint32_t)agg->nlocations;

	if (n <= warmed)
		return;
	if (!warm && !(warm = kiln_agent_sym_new(true)))
		return;
	p = kiln_prof_new();
	if (!p)
		return;
	kiln_buf_release(&warm_maps);
	if (!kiln_agent_maps_load_from(&c, p, &warm_maps)) {
		for (i = warmed + 1; i <= n; i++) {
			uint64_t a = agg->locations[i].address;

			kiln_prof_location(p, kiln_agent_maps_find(&c, a), a, NULL, 0);
		}
		/* Each address as a leaf and as a caller (address - 1), the
		 * two ways the profile's end may look it up: the session's
		 * per-module indexes are built here, not at the exit. */
		if (!kiln_prof_error(p) && !kiln_sym_prof(warm, p, 0)) {
			for (i = warmed + 1; i <= n; i++) {
				struct kiln_sym_info info;

				kiln_sym_lookup(warm, agg->locations[i].address - 1, &info);
			}
			warmed = n;
		}
	}
	kiln_agent_maps_release(&c);
	kiln_prof_free(p);
}

static void *read_lines(void *arg)
{
	kiln_sym_lines_read(warm, arg);
	return NULL;
}

/*
 * Once per warm-up: the lines of the debug file cache when they are due,
 * read on a thread of its own (libdw's memory in its malloc arena, given
 * back when it ends; see kiln_sym_lines_read()) while the collector waits.
 */
static void fill_lines(void)
{
	struct kiln_sym_lines l = { 0 };
	struct timespec t0, t1;
	pthread_t t;
	int n;

	if (++warm_ups < fill_at || !warm)
		return;
	fill_at = warm_ups + fill_gap;
	if (fill_gap < FILL_GAP_MAX)
		fill_gap *= 2;
	if (!kiln_sym_lines_pending(warm)) {
		kiln_rt_log(KILN_LOG_DEBUG, "no address waits for lines from "
			       "the debug file cache");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (kiln_rt_thread_start(&t, "kiln-lines", read_lines, &l, false))
		return;
	kiln_rt_thread_join(t);
	n = kiln_sym_lines_take(warm, &l);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	kiln_rt_log(KILN_LOG_DEBUG, "lines from the debug file cache: %d "
		       "addresses given lines in %.1f ms%s", n < 0 ? 0 : n,
		       (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
		       n < 0 ? " (out of memory)" : "");
}

static void *collect(void *arg)
{
	struct timespec ts = { 0, COLLECT_NS };
	unsigned tick = 0;

	kiln_rt_busy_begin();
	populate_ring();
	kiln_rt_busy_end();

	while (!atomic_load(&kcpu_collector_stop)) {
		syscall(SYS_futex, &kcpu_collector_stop, FUTEX_WAIT_PRIVATE, 0, &ts,
			NULL, 0);
		if (atomic_load(&kcpu_collector_stop))
			break;
		/* Its work allocates: never while the program forks. */
		kiln_rt_busy_begin();
		drain();
		populate_ring();
		/* Unwinding tables a sample needed (lazy: see the begin). */
		if (kiln_cfi_wanted(kcpu_cfi))
			kiln_cfi_refresh(kcpu_cfi);
		{
			uint64_t gen = 0;

			resolve_stacks();
			/* New or unloaded libraries: new unwinding tables. */
			dl_iterate_phdr(dl_counts, &gen);
			if (gen != dl_generation) {
				dl_generation = gen;
				kiln_cfi_refresh(kcpu_cfi);
				kiln_sym_free(warm);
				warm = NULL;
				warmed = 0;
				kiln_buf_release(&warm_maps);
				/* Named even if unloaded before the end. */
				kiln_agent_modules_note();
			}
			if (engine == KILN_ENGINE_THREAD_TIMERS && tick % 5 == 4)
				kiln_rt_threads_scan();
			if (tick % 10 == 2) {
				warm_up();
				fill_lines();
			}
			tick++;
		}
		kiln_rt_busy_end();
	}
	kiln_rt_busy_begin();
	drain();
	kiln_rt_busy_end();
	return NULL;
}

/* ---- start and stop ---- */

/* Stops the collector thread at once (it drains a last time) and joins it. */
static void stop_collector(void)
{
	atomic_store(&kcpu_collector_stop, 1);
	kcpu_wake_collector(NULL);
	kiln_rt_thread_join(collector);
}

bool kiln_agent_cpu_running(void)
{
	return atomic_load(&kcpu_active);
}

enum kiln_agent_engine kiln_agent_engine(void)
{
	return engine;
}

bool kiln_agent_is_own_handler(const struct sigaction *act)
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

/* ---- for the wall-clock ticker (wall.c) ---- */

bool kiln_agent_cpu_internal(pid_t tid)
{
	struct kiln_rt_thread *t = kiln_rt_thread_find(tid);

	return t && (t->internal || atomic_load(&t->small_alt));
}

static _Atomic uint64_t small_alts;

bool kiln_agent_cpu_small_altstack(bool small)
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
	if (small && !was)
		kiln_rt_log(KILN_LOG_INFO, "thread %d set its own alternate signal "
			       "stack, too small for a sample: not sampled while it "
			       "has it", (int)gettid_());
	return was;
}

uint64_t kiln_agent_cpu_small_altstacks(void)
{
	return atomic_load(&small_alts);
}

void kiln_agent_cpu_freeze(const char *why)
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
			kiln_agent_wall_stop();
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
static struct kiln_rt_thread *slot_for(pid_t tid)
{
	struct kiln_rt_thread *t = kiln_rt_thread_find(tid);

	if (!t) {
		kiln_rt_registry_lock();
		t = kiln_rt_thread_register(tid, 0, false);
		kiln_rt_registry_unlock();
	}
	return t;
}

bool kiln_agent_cpu_owe(pid_t tid, uint64_t weight)
{
	struct kiln_rt_thread *t = slot_for(tid);

	if (!t || t->internal)
		return false;
	atomic_fetch_add_explicit(&kcpu_slots[kiln_rt_thread_index(t)].owed, weight,
				  memory_order_relaxed);
	return true;
}

void kiln_agent_cpu_push(pid_t tid, enum kiln_agent_wall_state state,
			 uint64_t weight, const uint64_t *pcs, int n)
{
	if (!atomic_load_explicit(&kcpu_active, memory_order_acquire))
		return;
	if (!kcpu_ring_push((uint32_t)tid, (uint8_t)state, weight, pcs,
		       n > MAX_DEPTH ? MAX_DEPTH : n))
		atomic_fetch_add_explicit(&kcpu_dropped, 1, memory_order_relaxed);
}

int kiln_agent_cpu_unwind_copy(uint64_t pc, uint64_t sp, const void *copy,
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

int kiln_agent_cpu_begin(int hz, bool wall_mode)
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
	if (atomic_load(&kcpu_active) || agg) {
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
	dl_iterate_phdr(dl_counts, &dl_generation);
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
	ring_ready = 0;
	warmed = 0;	/* a new profile's locations (the session stays) */
	deq_pos = 0;
	atomic_store(&kcpu_dropped, 0);
	atomic_store(&kcpu_short_stack, 0);
	atomic_store(&timer_failures, 0);
	agg = kiln_prof_new();
	kcpu_wall = wall_mode;
	kcpu_own_pid = getpid();
	if (!agg || kiln_prof_set_types_str(agg, (const char *const[]){
			"samples/count", kcpu_wall ? "wall/nanoseconds" : "cpu/nanoseconds" },
			2)) {
		err = -ENOMEM;
		goto out_free;
	}
	agg->period_type = agg->types[1];
	agg->period = period_ns_cfg;
	agg->time_nanos = 0;
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		agg->time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	}
	err = install_handler();
	if (err)
		goto out_free;
	/* Our own thread first: the collector is never sampled. */
	atomic_store(&kcpu_collector_stop, 0);
	if (kiln_rt_thread_start(&collector, "kiln-collect", collect, NULL, false)) {
		err = -EAGAIN;
		goto out_free;
	}
	if (!kiln_rt_self)
		kiln_rt_register_self(false);
	kiln_rt_altstack_ensure();
	if (kcpu_wall) {
		engine = KILN_ENGINE_WALL;
		atomic_store(&kcpu_active, true);
		err = kiln_agent_wall_start(period_ns_cfg);
		if (err) {
			atomic_store(&kcpu_active, false);
			stop_collector();
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
			stop_collector();
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
	kiln_prof_free(agg);
	agg = NULL;
	engine = KILN_ENGINE_NONE;
out_unlock:
	pthread_mutex_unlock(&state_lock);
	return err;
}

/* The aggregated stacks as a profile with mappings and symbols. */
/*
 * finish() with the maps text in *maps (read into it when empty):
 * -EAGAIN when a location lies in none of its executable mappings (the
 * text is older than the code: read it again).
 */
static int finish_maps(struct kiln_prof *raw, struct kiln_prof **out,
		       struct kiln_sym *with, struct kiln_buf *maps)
{
	struct kiln_agent_maps c = { 0 };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_value_type vt[2];
	uint32_t *locmap = NULL, locs[MAX_DEPTH];
	size_t i, j;
	int err;

	if (!p)
		return -ENOMEM;
	for (i = 0; i < raw->ntypes && i < 2; i++) {
		vt[i].type = kiln_prof_interns(p, kiln_prof_str(raw, raw->types[i].type));
		vt[i].unit = kiln_prof_interns(p, kiln_prof_str(raw, raw->types[i].unit));
	}
	err = kiln_prof_set_types(p, vt, i);
	if (err)
		goto out;
	p->period_type = p->types[p->ntypes - 1];
	p->period = raw->period;
	p->time_nanos = raw->time_nanos;
	p->default_type = p->types[p->ntypes - 1].type;
	err = kiln_agent_maps_load_from(&c, p, maps);
	if (err)
		goto out;
	locmap = calloc(raw->nlocations + 1, sizeof(*locmap));
	if (!locmap) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 1; i <= raw->nlocations; i++) {
		uint64_t a = raw->locations[i].address;
		uint32_t m = kiln_agent_maps_find(&c, a);

		if (!m && maps == &warm_maps) {
			err = -EAGAIN;
			goto out;
		}
		locmap[i] = kiln_prof_location(p, m, a, NULL, 0);
	}
	for (i = 0; i < raw->nsamples; i++) {
		const struct kiln_sample *s = &raw->samples[i];
		const uint32_t *sl = kiln_prof_sample_locs(raw, s);
		const struct kiln_labelset *ls = &raw->labelsets[s->labels];
		struct kiln_label l[4];

		for (j = 0; j < s->depth && j < MAX_DEPTH; j++)
			locs[j] = locmap[sl[j]];
		for (j = 0; s->labels && j < ls->n && j < 4; j++) {
			const struct kiln_label *a = &raw->labels[ls->first + j];

			l[j].key = kiln_prof_interns(p, kiln_prof_str(raw, a->key));
			l[j].str = a->str ? kiln_prof_interns(p, kiln_prof_str(raw, a->str)) : 0;
			l[j].num = a->num;
			l[j].unit = 0;
		}
		kiln_prof_add_sample(p, locs, (uint32_t)(s->depth < MAX_DEPTH ?
						     s->depth : MAX_DEPTH),
				     raw->values + i * raw->ntypes,
				     kiln_prof_labelset(p, l, (uint32_t)j));
	}
	err = kiln_prof_error(p);
	if (!err)
		err = kiln_agent_prof_finish_with(p, KILN_SYM_RETURN_ADDRS, with);
out:
	free(locmap);
	kiln_agent_maps_release(&c);
	if (err) {
		kiln_prof_free(p);
		return err;
	}
	*out = p;
	return 0;
}

/*
 * The aggregated stacks as a profile with mappings and symbols, with
 * symbolizer session with (NULL: one of its own).  With the warmed
 * session, the maps the collector read last are used when they still
 * cover every address (no library was loaded or unloaded since: the
 * session is dropped then): /proc/self/maps is not read again at exit.
 */
static int finish(struct kiln_prof *raw, struct kiln_prof **out,
		  struct kiln_sym *with)
{
	struct kiln_buf fresh = KILN_BUF_INIT;
	int err = -EAGAIN;

	if (with && warm_maps.len)
		err = finish_maps(raw, out, with, &warm_maps);
	if (err == -EAGAIN)
		err = finish_maps(raw, out, with, &fresh);
	/* (Only the stop passes the session: the collector is gone then.) */
	if (with)
		kiln_buf_release(&warm_maps);
	kiln_buf_release(&fresh);
	return err;
}

/* ---- a snapshot of every thread (goroutine endpoint) ---- */

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
	nl = thread_labels(raw, (uint32_t)tid, state, l);
	kiln_prof_add_sample(raw, locs, i, &one, kiln_prof_labelset(raw, l, nl));
}

/* A thread of the snapshot: unwound from here if it waits, signalled
 * (its handler unwinds it) if it runs. */
static int snap_one(pid_t tid, char c, void *arg)
{
	struct snap_ctx *x = arg;
	uint64_t pcs[MAX_DEPTH];
	int n = c == 'R' ? -1 : kiln_agent_unwind_waiting(x->dir, x->pid, tid,
							   x->buf, pcs);

	if (n < 0 && x->can_signal) {
		slot_for(tid);
		if (!kiln_agent_sigprof_to(x->pid, tid, (int)(SNAP_MAGIC | x->gen)))
			x->sent++;
		return 0;
	}
	/* (A running thread that cannot be signalled: an empty stack.) */
	snap_add(x->raw, tid, kiln_agent_wall_state_of(c), pcs, n < 0 ? 0 : (uint32_t)n);
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
	err = kiln_agent_each_thread(dir, gettid_(), snap_one, &x);
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

int kiln_agent_threads_snapshot(struct kiln_prof **out)
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
	pthread_mutex_lock(&state_lock);
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
	if (kcpu_cfi && !foreign_sigprof() && !install_handler())
		can_signal = true;
	pthread_mutex_unlock(&state_lock);
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
		err = kiln_agent_proc_openat(&dir, "task", O_RDONLY | O_DIRECTORY);
	buf = err ? NULL : malloc(KILN_AGENT_COPY_BYTES);
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
		resolve_stacks();
	}
	kiln_kfd_close(&dir);
	free(buf);
	if (!err)
		err = finish(raw, out, NULL);
	kiln_prof_free(raw);
	pthread_mutex_unlock(&snap_lock);
	return err;
}

/* The program's threads that block SIGPROF now (their status's SigBlk):
 * signalled, they take no sample. */
static uint64_t sigprof_blockers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		struct kiln_buf b = KILN_BUF_INIT;
		char path[64];
		const char *p;

		if (tid <= 0 || kiln_agent_cpu_internal(tid))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
		if (!kiln_read_proc(AT_FDCWD, path, &b) && b.data &&
		    (p = strstr(b.data, "\nSigBlk:")) &&
		    (strtoull(p + 9, NULL, 16) >> (SIGPROF - 1)) & 1)
			n++;
		kiln_buf_release(&b);
	}
	closedir(d);
	return n;
}

int kiln_agent_cpu_end(struct kiln_prof **out)
{
	struct kiln_prof *raw;
	struct timespec now, pause = { 0, 1000000 };
	char note[512];
	uint64_t v, blocked;
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
		kiln_agent_wall_stop();
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
	stop_collector();
	raw = agg;
	agg = NULL;
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
	if (atomic_load(&timer_failures))
		snprintf(note + strlen(note), sizeof(note) - strlen(note),
			 "%skiln: not sampled: %" PRIu64 " thread(s) whose CPU timer "
			 "could not be made (a seccomp filter's EPERM, a limit)",
			 note[0] ? "; " : "", atomic_load(&timer_failures));
	blocked = sigprof_blockers();
	if (blocked)
		snprintf(note + strlen(note), sizeof(note) - strlen(note),
			 "%skiln: %" PRIu64 " thread(s) blocked SIGPROF when the "
			 "profile ended: their samples may be missing",
			 note[0] ? "; " : "", blocked);
	if (note[0])
		kiln_rt_log(KILN_LOG_INFO, "%s", note + 6);
	madvise(kcpu_ring, RING_BYTES, MADV_DONTNEED);
	kiln_htab_release(&tid_index);
	free(tids);
	tids = NULL;
	ntids = tids_alloc = 0;
	engine = KILN_ENGINE_NONE;
	err = kiln_prof_error(raw);
	if (!err)
		err = finish(raw, out, warm);
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
void kiln_agent_cpu_fork_child(void)
{
	size_t i;

	atomic_store(&kcpu_active, false);
	atomic_store(&kcpu_in_handler, 0);
	kcpu_wall = false;
	/* No timer exists here (the registry's part: kiln_rt_threads_fork_child()). */
	for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++)
		atomic_store(&kcpu_slots[i].armed, false);
	pthread_mutex_init(&state_lock, NULL);
	pthread_mutex_init(&snap_lock, NULL);
	atomic_store(&kcpu_snap_gen, 0);
	agg = NULL;	/* the parent's; leaked in the child, never written */
	warm = NULL;	/* the parent's session: leaked too */
	warmed = 0;
	warm_maps = (struct kiln_buf)KILN_BUF_INIT;
	/* The CFI tables' lock may have been held by a parent thread that
	 * does not exist here: start afresh (the old set is leaked). */
	kcpu_cfi = NULL;
	/* The queue's mapping was copied: kept for a profile of its own. */
	engine = KILN_ENGINE_NONE;
	kiln_htab_init(&tid_index);
	tids = NULL;
	ntids = tids_alloc = 0;
}

void kiln_agent_cpu_init(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	kiln_rt_gate_init();
	kiln_rt_thread_hooks_set(&thread_hooks);
	kiln_rt_register_self(false);
}
