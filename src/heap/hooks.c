/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The malloc interposer, libkiln-malloc.so (heap stage): a library of
 * its own, preloaded only when heap profiling is asked for (it loads
 * libkiln.so, which never loads it: see heapint.h).  It exports the
 * malloc family (malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc) and
 * jemalloc's extra entry points (mallocx, rallocx, xallocx, sdallocx,
 * dallocx); each calls the next definition (dlsym(RTLD_NEXT): glibc's or
 * jemalloc's) and, while a trace is being written, records the event:
 * an allocation with its call stack, a free before the real free.
 *
 * Hook rules (STYLE.md): a __thread guard with the initial-exec TLS model
 * sends re-entrant calls (and kiln's own threads) straight to the real
 * allocator; dlsym's own calloc during the bootstrap is served from a
 * static arena whose blocks never reach the real free; no malloc, stdio or
 * mutex on the recording path (rings, tables and sets are mmap'ed); errno
 * is preserved.  C++ new/delete and Rust's system allocator arrive here
 * through malloc, free, aligned_alloc and posix_memalign.
 *
 * This file holds the malloc family and C++'s operators; jemalloc's entry
 * points are hooks-jemalloc.c's, the bootstrap hooks-boot.c's, recording
 * hooks-record.c's (hookint.h: what they share).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "heap/hookint.h"

/* ---- the interposed functions ---- */

/*
 * Every allocation hook starts with kheap_counted(n): the fast path, a tail
 * call to the allocator with no register saved.  What kheap_counted() does not
 * let through goes to the hook's *_slow function (noinline, so that the
 * fast path stays a leaf), which sends the call on to the allocator when
 * the bootstrap has not found it yet, for a re-entrant call (or one of
 * kiln's own threads), and when tracing is off; otherwise it makes the
 * call under the guard and records what it returned, unwound from the
 * hook's frame.  (The hook may tail-call it: its frame then lies where
 * the hook's did, with the same saved frame pointer and return address.)
 */
KHEAP_SLOW(malloc, kheap_real.malloc(n), n, kheap_boot_alloc(n, 16), size_t n)
KHEAP_SLOW(calloc, kheap_real.calloc(n, m), n * m, kheap_calloc_unresolved(n, m), size_t n, size_t m)
KHEAP_SLOW(aligned_alloc, kheap_real.aligned_alloc(a, n), n, kheap_boot_alloc(n, a), size_t a, size_t n)
KHEAP_SLOW(memalign, kheap_real.memalign(a, n), n, kheap_boot_alloc(n, a), size_t a, size_t n)
KHEAP_SLOW(valloc, kheap_real.valloc(n), n, NULL, size_t n)
KHEAP_SLOW(pvalloc, kheap_real.pvalloc(n), n, NULL, size_t n)

/* malloc's body, also operator new's: frame is the hook's. */
static inline void *malloc_from(size_t n, void *frame)
{
	/* Tracing off: straight on (kheap_real.malloc is kheap_malloc_unresolved()
	 * until the bootstrap ran). */
	if (likely(kheap_counted(n)) ||
	    likely(!atomic_load_explicit(&kheap_on, memory_order_relaxed)))
		return kheap_real.malloc(n);
	return malloc_slow(n, frame);
}

KHEAP_HOOK void *malloc(size_t n)
{
	return malloc_from(n, __builtin_frame_address(0));
}

KHEAP_HOOK void *calloc(size_t n, size_t m)
{
	size_t s;

	/* An overflowing n * m goes to the real calloc, which fails it. */
	if ((likely(!__builtin_mul_overflow(n, m, &s)) && likely(kheap_counted(s))) ||
	    likely(!atomic_load_explicit(&kheap_on, memory_order_relaxed)))
		return kheap_real.calloc(n, m);
	return calloc_slow(n, m, __builtin_frame_address(0));
}

/* A free that free() could not pass straight to the allocator. */
__attribute__((noinline)) void kheap_do_free(void *p)
{
	uint64_t now;

	if (!p || unlikely(kheap_is_boot(p)))
		return;		/* arena blocks are never freed */
	if (unlikely(!kheap_ready()))
		return;
	if (likely(!kheap_ss_maybe0((uint64_t)(uintptr_t)p)) || !kheap_tracing()) {
		kheap_real.free(p);
		return;
	}
	kiln_rt_guard = 1;
	if (kheap_free_wanted(p)) {
		now = kheap_stamp();
		kheap_put_free(p, now);
	}
	kheap_real.free(p);
	kiln_rt_guard = 0;
}

KHEAP_HOOK void free(void *p)
{
	/* Not tracing, or a block never sampled: straight to the allocator,
	 * reading one filter bit (all ones when every free is traced; before
	 * tracing starts, set only for blocks of the bootstrap arena, which
	 * kheap_do_free() keeps from the real free), no guard.  free(NULL) may go
	 * too. */
	if (likely(!kheap_ss_maybe0((uint64_t)(uintptr_t)p))) {
		kheap_real.free(p);
		return;
	}
	kheap_do_free(p);
}

/*
 * realloc and friends: the free of the old block is timed before the real
 * call (another thread may get the address back the moment it returns)
 * and written only if the call succeeded.
 */
static __attribute__((always_inline)) inline void *
do_realloc(void *p, size_t n, void *frame)
{
	bool had;
	uint64_t t0 = 0;
	void *q;

	if (!kheap_tracing())
		return kheap_real.realloc(p, n);
	kiln_rt_guard = 1;
	had = p && kheap_free_wanted(p);
	if (had)
		t0 = kheap_stamp();
	q = kheap_real.realloc(p, n);
	if (!q && n && p) {
		/* Failed: p is still the caller's. */
		if (had && kheap_sample)
			kheap_sset_add((uint64_t)(uintptr_t)p);
	} else {
		if (had)
			kheap_put_free(p, t0);
		if (q && kheap_want_alloc(n))
			kheap_on_alloc(q, n, frame);
	}
	kiln_rt_guard = 0;
	return q;
}

static __attribute__((noinline)) void *realloc_slow(void *p, size_t n,
						     void *frame)
{
	if (unlikely(!kheap_ready()))
		return NULL;
	if (unlikely(p && kheap_is_boot(p)))
		return kheap_boot_realloc(p, n);
	return do_realloc(p, n, frame);
}

KHEAP_HOOK void *realloc(void *p, size_t n)
{
	/* The old block never sampled, the new one not to be: nothing to
	 * record (the filter first: kheap_counted() counts n down).  The arena's
	 * blocks have their filter bit set. */
	if (likely(!kheap_ss_maybe0((uint64_t)(uintptr_t)p)) &&
	    likely(kheap_counted(n)))
		return kheap_real.realloc(p, n);
	return realloc_slow(p, n, __builtin_frame_address(0));
}

KHEAP_HOOK void *reallocarray(void *p, size_t n, size_t m)
{
	size_t s;

	if (__builtin_mul_overflow(n, m, &s)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_slow(p, s, __builtin_frame_address(0));
}

static __attribute__((noinline)) int
posix_memalign_slow(void **out, size_t align, size_t n, void *frame)
{
	int rc;

	if (unlikely(!kheap_ready()))
		return ENOMEM;
	if (!kheap_tracing())
		return kheap_real.posix_memalign(out, align, n);
	kiln_rt_guard = 1;
	rc = kheap_real.posix_memalign(out, align, n);
	if (!rc && *out && kheap_want_alloc(n))
		kheap_on_alloc(*out, n, frame);
	kiln_rt_guard = 0;
	return rc;
}

KHEAP_HOOK int posix_memalign(void **out, size_t align, size_t n)
{
	if (likely(kheap_counted(n)))
		return kheap_real.posix_memalign(out, align, n);
	return posix_memalign_slow(out, align, n, __builtin_frame_address(0));
}

KHEAP_HOOK void *aligned_alloc(size_t align, size_t n)
{
	if (likely(kheap_counted(n)))
		return kheap_real.aligned_alloc(align, n);
	return aligned_alloc_slow(align, n, __builtin_frame_address(0));
}

KHEAP_HOOK void *memalign(size_t align, size_t n)
{
	if (likely(kheap_counted(n)))
		return kheap_real.memalign(align, n);
	return memalign_slow(align, n, __builtin_frame_address(0));
}

KHEAP_HOOK void *valloc(size_t n)
{
	if (likely(kheap_counted(n)))
		return kheap_real.valloc(n);
	return valloc_slow(n, __builtin_frame_address(0));
}

KHEAP_HOOK void *pvalloc(size_t n)
{
	if (likely(kheap_counted(n)))
		return kheap_real.pvalloc(n);
	return pvalloc_slow(n, __builtin_frame_address(0));
}

/*
 * C++'s operators new and delete.  libstdc++'s call malloc and free, but
 * an allocator linked into the program may bring its own (jemalloc's and
 * tcmalloc's do) that never reach malloc: a C++ program linked with
 * -ljemalloc would show none of its new and delete.  So libkiln.so
 * defines them all, on top of the hooks above: new is malloc (aligned
 * new: posix_memalign) recorded from the operator's frame, the program's
 * function being the caller, and delete is free.  When the allocation
 * fails, new hands over to the next definition (libstdc++'s or the
 * allocator's), which calls the new-handler and throws or returns NULL
 * as the standard says; kiln's frame is gone by then (a tail call).
 */
static inline void *new_aligned(size_t n, size_t align, void *frame)
{
	void *p;

	if (align < sizeof(void *))
		align = sizeof(void *);
	if (likely(kheap_counted(n)))
		return kheap_real.posix_memalign(&p, align, n) ? NULL : p;
	return posix_memalign_slow(&p, align, n, frame) ? NULL : p;
}

#define NEW(name)							\
	KHEAP_HOOK void *name(size_t n)					\
	{								\
		void *p = malloc_from(n, __builtin_frame_address(0));	\
		void *(*f)(size_t);					\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t))dlsym(RTLD_NEXT, #name);		\
		return f ? f(n) : NULL;					\
	}
#define NEW_NOTHROW(name)						\
	KHEAP_HOOK void *name(size_t n, const void *tag)		\
	{								\
		void *p = malloc_from(n, __builtin_frame_address(0));	\
		void *(*f)(size_t, const void *);			\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t, const void *))dlsym(RTLD_NEXT, #name); \
		return f ? f(n, tag) : NULL;				\
	}
#define NEW_ALIGNED(name)						\
	KHEAP_HOOK void *name(size_t n, size_t al)			\
	{								\
		void *p = new_aligned(n, al, __builtin_frame_address(0)); \
		void *(*f)(size_t, size_t);				\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, #name);	\
		return f ? f(n, al) : NULL;				\
	}
#define NEW_ALIGNED_NOTHROW(name)					\
	KHEAP_HOOK void *name(size_t n, size_t al, const void *tag)	\
	{								\
		void *p = new_aligned(n, al, __builtin_frame_address(0)); \
		void *(*f)(size_t, size_t, const void *);		\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t, size_t, const void *))dlsym(RTLD_NEXT, #name); \
		return f ? f(n, al, tag) : NULL;			\
	}

NEW(_Znwm)				/* new(size_t) */
NEW(_Znam)				/* new[](size_t) */
NEW_NOTHROW(_ZnwmRKSt9nothrow_t)	/* new(size_t, nothrow_t) */
NEW_NOTHROW(_ZnamRKSt9nothrow_t)
NEW_ALIGNED(_ZnwmSt11align_val_t)	/* new(size_t, align_val_t) */
NEW_ALIGNED(_ZnamSt11align_val_t)
NEW_ALIGNED_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t)
NEW_ALIGNED_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t)

/* Every delete is free (the extra size, alignment or tag unused). */
#define DELETE(name) \
	KHEAP_HOOK void name(void *p) __attribute__((alias("free"), copy(free)));
DELETE(_ZdlPv)				/* delete(void *) */
DELETE(_ZdaPv)
DELETE(_ZdlPvm)				/* delete(void *, size_t) */
DELETE(_ZdaPvm)
DELETE(_ZdlPvRKSt9nothrow_t)		/* delete(void *, nothrow_t) */
DELETE(_ZdaPvRKSt9nothrow_t)
DELETE(_ZdlPvSt11align_val_t)		/* delete(void *, align_val_t) */
DELETE(_ZdaPvSt11align_val_t)
DELETE(_ZdlPvmSt11align_val_t)		/* delete(void *, size_t, align_val_t) */
DELETE(_ZdaPvmSt11align_val_t)
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t)
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t)

