/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's own threads and the registry of the process's threads (runtime
 * stage): see threads.h.
 *
 * Every thread the program starts through pthread_create (interposed in
 * libkiln/interpose.c) begins in this file's trampoline, which takes it a
 * slot in the registry and gives it kiln's alternate signal stack before
 * the program's function runs; threads that existed before kiln (or were
 * made otherwise) are found in /proc/self/task (kiln_rt_threads_scan()).
 * The part that acts on threads (the CPU sampler: a timer per thread) is
 * told through the hooks it set (kiln_rt_thread_hooks_set()).  kiln's own
 * threads start through kiln_rt_thread_start(), marked kiln's: never
 * sampled, their allocations never recorded (the allocation guard, for
 * good), kept out of the program's forks while they set up or tear down.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/altstack.h"
#include "runtime/forkgate.h"
#include "runtime/guard.h"
#include "runtime/threads.h"

__thread int kiln_rt_guard __attribute__((tls_model("initial-exec")));

struct kiln_rt_thread kiln_rt_threads[KILN_RT_MAX_THREADS];
_Atomic size_t kiln_rt_threads_hw;
__thread struct kiln_rt_thread *kiln_rt_self __attribute__((tls_model("initial-exec")));

/* Taken to register a thread from outside the trampoline and around the
 * hooks' loops over the slots (kiln_rt_registry_lock()). */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic(const struct kiln_rt_thread_hooks *) hooks;

#define call_hook(name, t)						\
	do {								\
		const struct kiln_rt_thread_hooks *h_ = atomic_load(&hooks); \
		if (h_ && h_->name)					\
			h_->name(t);					\
	} while (0)

/* kiln_rt_freeze(): why, NULL while kiln may make system calls. */
static _Atomic(const char *) frozen;

static inline pid_t sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void kiln_rt_thread_hooks_set(const struct kiln_rt_thread_hooks *h)
{
	atomic_store(&hooks, h);
}

void kiln_rt_registry_lock(void)
{
	pthread_mutex_lock(&reg_lock);
}

void kiln_rt_registry_unlock(void)
{
	pthread_mutex_unlock(&reg_lock);
}

bool kiln_rt_freeze(const char *why)
{
	const char *none = NULL;

	return atomic_compare_exchange_strong(&frozen, &none, why);
}

const char *kiln_rt_frozen(void)
{
	return atomic_load(&frozen);
}

struct kiln_rt_thread *kiln_rt_thread_find(pid_t tid)
{
	size_t i, hw = atomic_load_explicit(&kiln_rt_threads_hw, memory_order_acquire);

	for (i = 0; i < hw; i++)
		if (atomic_load_explicit(&kiln_rt_threads[i].tid, memory_order_relaxed) == tid)
			return &kiln_rt_threads[i];
	return NULL;
}

__attribute__((noinline))
struct kiln_rt_thread *kiln_rt_thread_register(pid_t tid, uint64_t stack_hi, bool internal)
{
	struct kiln_rt_thread *t = kiln_rt_thread_find(tid), *free_slot = NULL;
	size_t i;

	if (t)
		return t;
	for (i = 0; i < KILN_RT_MAX_THREADS && !free_slot; i++) {
		int zero = 0;
		size_t hw = atomic_load(&kiln_rt_threads_hw);

		if (atomic_load_explicit(&kiln_rt_threads[i].tid, memory_order_relaxed))
			continue;
		/* Raised before the slot is taken: a loop that sees the
		 * tid also covers the slot. */
		while (hw < i + 1 &&
		       !atomic_compare_exchange_weak(&kiln_rt_threads_hw, &hw, i + 1))
			;
		if (atomic_compare_exchange_strong(&kiln_rt_threads[i].tid, &zero, tid))
			free_slot = &kiln_rt_threads[i];
	}
	if (!free_slot)
		return NULL;
	atomic_store(&free_slot->stack_hi, stack_hi);
	atomic_store(&free_slot->sp_seen, 0);
	atomic_store(&free_slot->small_alt, false);
	free_slot->internal = internal;
	call_hook(claimed, free_slot);
	return free_slot;
}

static uint64_t own_stack_hi(void)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	uint64_t hi = 0;

	if (pthread_getattr_np(pthread_self(), &a))
		return 0;
	if (!pthread_attr_getstack(&a, &addr, &size))
		hi = (uint64_t)(uintptr_t)addr + size;
	pthread_attr_destroy(&a);
	return hi;
}

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *arg)
{
	struct kiln_rt_thread *t = arg;

	pthread_mutex_lock(&reg_lock);
	call_hook(ended, t);
	atomic_store(&t->tid, 0);
	pthread_mutex_unlock(&reg_lock);
	kiln_rt_self = NULL;
	kiln_rt_altstack_release();
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* The calling thread: known from now on, sampled when a profile runs. */
void kiln_rt_register_self(bool internal)
{
	uint64_t hi = own_stack_hi();
	struct kiln_rt_thread *t;

	pthread_once(&exit_key_once, make_exit_key);
	pthread_mutex_lock(&reg_lock);
	t = kiln_rt_thread_register(sys_gettid(), hi, internal);
	if (t) {
		if (!atomic_load(&t->stack_hi))
			atomic_store(&t->stack_hi, hi);
		t->internal = internal;
		kiln_rt_self = t;
		call_hook(started, t);
	}
	pthread_mutex_unlock(&reg_lock);
	if (t)
		pthread_setspecific(exit_key, t);
}

/* ---- pthread_create interposition ---- */

/*
 * A new thread's first steps run before the thread is known to anything
 * else in the process (a sanitizer's runtime, say, whose allocator and
 * mutexes are not ready for it yet): they take no lock and call no
 * allocator.  Start records come from a static pool, the slot is claimed
 * with a compare-and-swap, and the stack top is the thread pointer (glibc
 * puts the thread's control block and TLS at the top of its stack, so all
 * of [sp, tp) is mapped).
 */
#define START_POOL 1024

struct start {
	void *(*fn)(void *);
	void *arg;
	bool internal;
};

static struct start start_pool[START_POOL];
static _Atomic bool start_used[START_POOL];

static struct start *start_get(void)
{
	size_t i;

	for (i = 0; i < START_POOL; i++)
		if (!atomic_load_explicit(&start_used[i], memory_order_relaxed) &&
		    !atomic_exchange(&start_used[i], true))
			return &start_pool[i];
	return NULL;
}

static void start_put(struct start *s)
{
	atomic_store(&start_used[s - start_pool], false);
}

static __thread bool creating_internal __attribute__((tls_model("initial-exec")));

/*
 * The thread's timer goes first (the ended hook): a sample taken in what
 * follows (the last-thread check reads /proc, the alternate stack's
 * release is a system call) would show kiln's code in the program's
 * profile.
 */
static void unregister_self(void *arg)
{
	struct kiln_rt_thread *t = arg;

	if (t) {
		call_hook(ended, t);
		kiln_rt_self = NULL;
		if (!t->internal)
			kiln_rt_thread_ending();
		atomic_store(&t->tid, 0);
	}
	kiln_rt_altstack_release();
}

/*
 * In a section of its own: its frame, under every thread the program
 * starts, is left out of every stack (kiln_rt_own_frames()).
 */
__attribute__((section("kiln_thread_start"), noinline))
static void *trampoline(void *p)
{
	struct start *s = p;
	void *(*fn)(void *) = s->fn;
	void *arg = s->arg, *ret;
	bool internal = s->internal;
	struct kiln_rt_thread *t;
	uint64_t tp = 0;

	start_put(s);
	/* Under the program's seccomp filter: nothing of kiln's here, not
	 * even gettid (seccomp.c). */
	if (kiln_rt_frozen() && !internal)
		return fn(arg);
	/* kiln's own thread: its allocations are never the program's
	 * (for good; the threads it creates are kiln's too). */
	if (internal)
		kiln_rt_quiet_begin();
#if defined(__x86_64__) || defined(__aarch64__)
	tp = (uint64_t)(uintptr_t)__builtin_thread_pointer();
#endif
	t = kiln_rt_thread_register(sys_gettid(), 0, internal);
	if (t) {
		uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);

#if defined(__x86_64__)
		/* TLS variant II: the control block sits above the stack. */
		if (tp > here)
			atomic_store(&t->stack_hi, tp);
#endif
		(void)here;
		t->internal = internal;
		kiln_rt_self = t;
	}
	/* Before any sample can reach it, a stack of kiln's for the
	 * handler (a thread of 16 KiB, say, has no room for one on its
	 * own), whether a profile runs now or starts later. */
	if (!internal)
		kiln_rt_altstack_ensure();
	if (t && !internal)
		call_hook(started, t);
	pthread_cleanup_push(unregister_self, t);
	ret = fn(arg);
	pthread_cleanup_pop(1);
	return ret;
}

extern const char __start_kiln_thread_start[] __attribute__((visibility("hidden")));
extern const char __stop_kiln_thread_start[] __attribute__((visibility("hidden")));

void kiln_rt_own_frames(uint64_t *lo, uint64_t *hi)
{
	*lo = (uint64_t)(uintptr_t)__start_kiln_thread_start;
	*hi = (uint64_t)(uintptr_t)__stop_kiln_thread_start;
}

int kiln_rt_thread_create(kiln_rt_pthread_create_fn real, pthread_t *thread,
			  const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	struct start *s;
	int rc;

	if (!real)
		return EAGAIN;
	/* No record free (1024 threads starting at once): the thread is
	 * found later in /proc/self/task instead. */
	s = start_get();
	if (!s)
		return real(thread, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	/* A thread kiln's own threads start is kiln's too (libmicrohttpd's
	 * workers, the HTTP profile jobs). */
	s->internal = creating_internal || (kiln_rt_self && kiln_rt_self->internal);
	rc = real(thread, attr, trampoline, s);
	if (rc)
		start_put(s);
	return rc;
}

void kiln_rt_creating_internal(bool on)
{
	creating_internal = on;
}

bool kiln_rt_on_own_thread(void)
{
	return creating_internal || (kiln_rt_self && kiln_rt_self->internal);
}

/*
 * Makes the calling thread kiln's (never sampled, never in a snapshot),
 * when the trampoline did not: libkiln.so loaded behind the C library
 * (its pthread_create never reached).
 */
static void internal_self(void)
{
	if (kiln_rt_self && kiln_rt_self->internal)
		return;
	kiln_rt_quiet_begin();	/* for good */
	kiln_rt_register_self(true);
}

struct internal_start {
	void *(*fn)(void *);
	void *arg;
	bool detached;
	char name[16];
};

/*
 * A kiln thread's own first and last steps.  It was counted busy by its
 * creator: a sanitizer's runtime allocates while it sets the thread up,
 * before fn runs (under ASan, kiln's trampoline calls the runtime's, which
 * calls this).  It counts itself busy again when fn returns: the runtime
 * frees the thread's allocator cache as it exits, until the join (a
 * detached thread's exit cannot be waited for: not covered).
 */
static void *internal_main(void *p)
{
	struct internal_start s = *(struct internal_start *)p;
	void *ret;

	internal_self();
	free(p);
	if (s.name[0])
		pthread_setname_np(pthread_self(), s.name);
	kiln_rt_busy_end();
	ret = s.fn(s.arg);
	if (!s.detached)
		kiln_rt_busy_begin();
	return ret;
}

int kiln_rt_thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
			    void *arg, bool detached)
{
	struct internal_start *s;
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	/* Freed by the new thread, under its quiet: neither is the
	 * program's allocation, whoever starts the thread. */
	kiln_rt_quiet_begin();
	s = calloc(1, sizeof(*s));
	kiln_rt_quiet_end();
	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->arg = arg;
	s->detached = detached;
	if (name)
		snprintf(s->name, sizeof(s->name), "%s", name);
	rc = pthread_attr_init(&attr);
	if (!rc && detached)
		rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (rc) {
		kiln_rt_quiet_begin();
		free(s);
		kiln_rt_quiet_end();
		return -rc;
	}
	kiln_rt_busy_begin();
	/* It must not take the host's signals (SIGPROF, SIGTERM, ...). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	creating_internal = true;
	/* By name: a sanitizer's runtime preloaded first must see the
	 * thread start (its interceptor then calls ours). */
	rc = pthread_create(t, &attr, internal_main, s);
	creating_internal = false;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		kiln_rt_quiet_begin();
		free(s);
		kiln_rt_quiet_end();
		kiln_rt_busy_end();
	}
	return -rc;
}

int kiln_rt_thread_join(pthread_t t)
{
	int rc = pthread_join(t, NULL);

	/* Gone, with its runtime's teardown: the count internal_main()
	 * took at its end. */
	if (!rc)
		kiln_rt_busy_end();
	return -rc;
}

/* Finds threads not created through pthread_create (or before kiln). */
void kiln_rt_threads_scan(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	if (!d)
		return;
	pthread_mutex_lock(&reg_lock);
	while ((de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);
		struct kiln_rt_thread *t;

		if (tid <= 0)
			continue;
		t = kiln_rt_thread_register((pid_t)tid, 0, false);
		if (t)
			call_hook(started, t);
	}
	pthread_mutex_unlock(&reg_lock);
	closedir(d);
}

void kiln_rt_threads_fork_child(void)
{
	struct kiln_rt_thread *me = kiln_rt_self;
	uint64_t hi = me ? atomic_load(&me->stack_hi) : 0;
	size_t i;

	for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++)
		atomic_store(&kiln_rt_threads[i].tid, 0);
	kiln_rt_self = NULL;
	pthread_mutex_init(&reg_lock, NULL);
	/*
	 * The forking thread lives on, on the same stack: it keeps its slot
	 * (and the exit key's value, which points at it) under its new tid.
	 * No kiln_rt_register_self(): pthread_getattr_np() allocates, and
	 * here an allocator lock may still be held by a parent thread that
	 * is gone (a program that only execs would never have allocated).  A
	 * thread kiln did not know gets a slot whose stack top is found
	 * later.
	 */
	if (me) {
		atomic_store(&me->tid, sys_gettid());
		atomic_store(&me->stack_hi, hi);
		atomic_store(&me->sp_seen, 0);
		me->internal = false;
		kiln_rt_self = me;
	} else {
		kiln_rt_self = kiln_rt_thread_register(sys_gettid(), 0, false);
	}
}
