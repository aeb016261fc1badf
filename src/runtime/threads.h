/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's own threads in the host process (runtime stage): the one thread
 * starter and the registry of every thread the process has, kiln's marked
 * (threads.c), and the watch for the program's last thread (lastthread.c).
 */
#ifndef KILN_RUNTIME_THREADS_H
#define KILN_RUNTIME_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- the registry: every thread of the process kiln has seen ---- */

#define KILN_RT_MAX_THREADS 8192

/*
 * A thread's slot.  Slots are reused; tid 0 means free.  The fields are
 * read by signal handlers (lock-free); a part that keeps per-thread state
 * of its own keeps it in an array indexed as this one
 * (kiln_rt_thread_index()).
 */
struct kiln_rt_thread {
	_Atomic int tid;
	_Atomic uint64_t stack_hi;	/* top of its stack, 0: not known yet */
	_Atomic uint64_t sp_seen;	/* a sp a handler saw, to find it */
	bool internal;			/* kiln's own thread: never sampled */
	/* its own alternate stack is smaller than KILN_ALTSTACK_MIN: not
	 * signalled (runtime/altstack.h) */
	_Atomic bool small_alt;
};

extern struct kiln_rt_thread kiln_rt_threads[KILN_RT_MAX_THREADS];
/* One past the highest slot ever taken: loops over slots stop there. */
extern _Atomic size_t kiln_rt_threads_hw;
/* The calling thread's slot, found once (NULL: not yet). */
extern __thread struct kiln_rt_thread *kiln_rt_self
	__attribute__((tls_model("initial-exec")));

static inline size_t kiln_rt_thread_index(const struct kiln_rt_thread *t)
{
	return (size_t)(t - kiln_rt_threads);
}

/* The slot of tid, NULL if none.  Async-signal-safe. */
struct kiln_rt_thread *kiln_rt_thread_find(pid_t tid);

/*
 * Takes a slot for tid (or returns the one it has) with the stack top
 * given (0: found later); NULL when every slot is taken.  Lock-free (a
 * new thread's first step calls it), but callers outside a new thread
 * hold the registry lock.
 */
struct kiln_rt_thread *kiln_rt_thread_register(pid_t tid, uint64_t stack_hi,
					       bool internal);

/* The calling thread registered (kiln's own when internal), its stack
 * top read, its exit noted.  Allocates (pthread_getattr_np()). */
void kiln_rt_register_self(bool internal);

/* Registers the threads of /proc/self/task not seen start. */
void kiln_rt_threads_scan(void);

/* The registry lock, around a part's loops over the slots. */
void kiln_rt_registry_lock(void);
void kiln_rt_registry_unlock(void);

/*
 * What the part that acts on threads (the CPU sampler) is told: claimed,
 * a slot newly taken (lock-free: a new thread's first step, before
 * anything of it is set up); started, a thread of the program registered
 * and ready (its timer armed if a profile runs) -- also called for
 * kiln's own threads by kiln_rt_register_self(); ended, a thread gone
 * (registry lock held, or the thread's own last step).  Set once, at
 * load.
 */
struct kiln_rt_thread_hooks {
	void (*claimed)(struct kiln_rt_thread *t);
	void (*started)(struct kiln_rt_thread *t);
	void (*ended)(struct kiln_rt_thread *t);
};
void kiln_rt_thread_hooks_set(const struct kiln_rt_thread_hooks *h);

/* In a child after fork(): the parent's threads are gone; the calling
 * thread keeps its slot under its new tid. */
void kiln_rt_threads_fork_child(void);

/*
 * From now on kiln makes no system call in the program's threads (the
 * program installs a seccomp filter: libkiln/interpose.c): a new thread
 * starts without registering or getting a stack.  True for the first
 * call; why is kept.  kiln_rt_frozen(): why, NULL before.
 */
bool kiln_rt_freeze(const char *why);
const char *kiln_rt_frozen(void);

/* ---- kiln's own threads ---- */

/*
 * kiln's one thread starter: every thread of kiln's own (the collector,
 * the wall ticker, the relay, the HTTP heir thread, the heap writer, the
 * HTTP profile jobs and guard) starts here, running fn(arg)
 * named name (up to 15 characters; NULL: unnamed): all signals blocked,
 * its allocations never recorded (the heap guard, for good) and it never
 * sampled nor in a goroutine dump, whatever the symbol order (started
 * through pthread_create by name, so that a sanitizer's interceptor sees
 * it); kept out of
 * the program's forks (see
 * kiln_rt_busy_begin()) from its creation until fn runs (a sanitizer's
 * runtime allocates while it sets a thread up) and, unless detached, from
 * fn's return until kiln_rt_thread_join() (it tears the thread down),
 * which such a thread needs.  0 or -errno.
 */

/*
 * pthread_create() of the program (and of kiln, which starts its own by
 * that name: see kiln_rt_thread_start()), passed on to real: the new
 * thread starts in kiln's trampoline, registered (kiln's when the
 * creating thread is), with kiln's alternate signal stack.
 */
typedef int (*kiln_rt_pthread_create_fn)(pthread_t *, const pthread_attr_t *,
					 void *(*)(void *), void *);
int kiln_rt_thread_create(kiln_rt_pthread_create_fn real, pthread_t *thread,
			  const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);

int kiln_rt_thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
			    void *arg, bool detached);

/*
 * Called by a thread of the program as it ends (pthread_exit(), the end
 * of a thread kiln's pthread_create started): when it is the program's
 * last, the process exits as it would without kiln's threads
 * (lastthread.c).  Never from kiln's own threads (they return at once).
 */
void kiln_rt_thread_ending(void);

/*
 * For threads of kiln's started by a library kiln calls (libmicrohttpd's):
 * while on, the calling thread's pthread_create makes kiln threads (never
 * sampled, never in a snapshot; threads they start are kiln's too).
 */
void kiln_rt_creating_internal(bool on);

/* Whether the calling thread is kiln's, or is starting kiln's threads
 * (kiln_rt_creating_internal()): what a library does on it is kiln's. */
bool kiln_rt_on_own_thread(void);

/* The code range of kiln's frames that sit between the program's own
 * (the thread-start trampoline): unwinders skip them. */
void kiln_rt_own_frames(uint64_t *lo, uint64_t *hi);

/* Joins a thread started by kiln_rt_thread_start(); its return value
 * is lost.  0 or -errno. */
int kiln_rt_thread_join(pthread_t t);

#endif
