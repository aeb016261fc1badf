/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the malloc interposer, libkiln-malloc.so (heap stage),
 * share, and nothing else includes: the next definitions of the malloc
 * family (`kheap_real`, found by hooks-boot.c's bootstrap), the hooks'
 * fast-path tests (inline: the countdown of sampling mode, whether tracing
 * is on) and the recording functions (hooks-record.c) the slow paths call.
 *
 *   hooks.c           the malloc family and C++'s operators new and delete
 *   hooks-jemalloc.c  jemalloc's extra entry points (mallocx, rallocx...)
 *   hooks-boot.c      the bootstrap: dlsym(RTLD_NEXT) and its calloc arena
 *   hooks-record.c    an allocation or a free recorded; the table that
 *                     libkiln.so finds by name (heapint.h)
 *
 * Hook rules (STYLE.md, hooks.c's header) hold in every one of them.
 */
#ifndef KILN_HEAP_HOOKINT_H
#define KILN_HEAP_HOOKINT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/heapint.h"

#define KHEAP_HOOK __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define KHEAP_TLS __attribute__((tls_model("initial-exec")))
/*
 * This library's own, said so on the declarations too: the compiler then
 * reaches them directly (the fast path's jump through kheap_real.malloc
 * is one instruction, not a load of its address and a jump).
 */
#pragma GCC visibility push(hidden)

/* The next definitions of what the interposer exports. */
struct kheap_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	/* jemalloc's, NULL when the program does not use it. */
	void *(*mallocx)(size_t, int);
	void *(*rallocx)(void *, size_t, int);
	size_t (*xallocx)(void *, size_t, size_t, int);
	void (*sdallocx)(void *, size_t, int);
	void (*dallocx)(void *, int);
};

/*
 * free, malloc and calloc point at functions that find the allocator (or,
 * while dlsym runs, serve the bootstrap arena) until the bootstrap found
 * it; the others are called only once kheap_ready() said so.
 */
extern struct kheap_real kheap_real;

/* ---- hooks-boot.c ---- */

/* Set on the thread running the dlsym bootstrap. */
extern __thread int kheap_booting KHEAP_TLS;

/* real.malloc, real.calloc and real.free before the bootstrap ran. */
void *kheap_malloc_unresolved(size_t n);
void *kheap_calloc_unresolved(size_t n, size_t m);
void kheap_free_unresolved(void *p);

/* Looks the allocator up (dlsym), once; other threads wait for it. */
void kheap_resolve(void);

/* Whether the allocator is known (looked up now if not). */
static inline bool kheap_ready(void)
{
	if (likely(kheap_real.malloc != kheap_malloc_unresolved))
		return true;
	kheap_resolve();
	return kheap_real.malloc != kheap_malloc_unresolved;
}

/*
 * A zeroed block of the bootstrap arena (dlsym's calloc before the
 * allocator is known), or NULL; its free-filter bit is pinned, so that
 * its free reaches kheap_do_free(), which never hands it on.
 */
void *kheap_boot_alloc(size_t n, size_t align);
/* Whether p is a block of the bootstrap arena. */
bool kheap_is_boot(const void *p);
/* realloc of an arena block: moved to the real allocator. */
void *kheap_boot_realloc(void *p, size_t n);

/* ---- hooks.c ---- */

/* A free that free() could not pass straight to the allocator. */
void kheap_do_free(void *p);

/* ---- hooks-jemalloc.c ---- */

/* Looks up jemalloc's entry points, if any (the heap agent's start). */
void kheap_jemalloc_init(void);

/* ---- hooks-record.c: recording ---- */

/*
 * Bytes this thread may still allocate before its next sampled
 * allocation: the hooks' fast path (see counted()).  0 until the
 * thread's countdown is armed (by kheap_on_alloc(), once tracing is on)
 * and always 0 when every allocation is traced.
 */
extern __thread uint64_t kheap_sample_left KHEAP_TLS;

/*
 * Records an allocation (tag 'A') of n bytes at p made by the hook whose
 * frame (__builtin_frame_address(0)) is given.  Caller holds the guard.
 */
void kheap_on_alloc(void *p, size_t n, void *frame);

/* Records a free of p at time now (tag 'F').  Caller holds the guard. */
void kheap_put_free(void *p, uint64_t now);

/*
 * Counts an allocation of n bytes down if it does not reach the thread's
 * next sample (true: nothing to record).  The hooks' fast path: one
 * thread-local load, a compare and a store.
 */
static inline bool kheap_counted(size_t n)
{
	uint64_t left = kheap_sample_left;

	if (likely(n < left)) {
		kheap_sample_left = left - n;
		return true;
	}
	return false;
}

/*
 * Whether an allocation of n bytes goes to kheap_on_alloc(): always when
 * every allocation is traced; when sampling, when it reaches the
 * countdown (or the thread's countdown is not armed yet).
 */
static inline bool kheap_want_alloc(size_t n)
{
	return !kheap_sample || !kheap_counted(n);
}

/*
 * Whether a free of p is to be recorded (sampling mode: p was sampled; it
 * leaves the set now, before the real free can hand p out again).
 */
static inline bool kheap_free_wanted(void *p)
{
	/* The set's filters come first inside kheap_sset_del(). */
	return !kheap_sample || kheap_sset_del((uint64_t)(uintptr_t)p);
}

/* Whether this call records: tracing on, not re-entrant, not kiln's. */
static inline bool kheap_tracing(void)
{
	return !kiln_rt_guard && atomic_load_explicit(&kheap_on, memory_order_relaxed);
}

/*
 * Defines a hook's NAME_slow(PARAMS..., frame) (hooks.c says when it
 * runs): call is the allocator's call, size what it allocates, boot the
 * answer before the bootstrap found the allocator.  Hook context.
 */
#define KHEAP_SLOW(name, call, size, boot, ...)				\
	static __attribute__((noinline)) void *				\
	name##_slow(__VA_ARGS__, void *frame)				\
	{								\
		void *p_;						\
		if (unlikely(!kheap_ready()))				\
			return boot;					\
		if (!kheap_tracing())					\
			return call;					\
		kiln_rt_guard = 1;					\
		p_ = call;						\
		if (p_ && kheap_want_alloc(size))			\
			kheap_on_alloc(p_, size, frame);		\
		kiln_rt_guard = 0;					\
		return p_;						\
	}

#pragma GCC visibility pop

#endif
