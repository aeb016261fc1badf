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
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "heap/heapint.h"

#define HOOK __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Set on the thread running the dlsym bootstrap. */
static __thread int booting __attribute__((tls_model("initial-exec")));
/*
 * The hooks' fast path: bytes this thread may still allocate before its
 * next sampled allocation.  An allocation smaller than it is counted
 * down and goes straight to the allocator; any other takes the slow path
 * (the guard, whether tracing is on, the bootstrap, recording).  It is 0
 * until the thread's countdown is armed (by on_alloc(), once tracing is
 * on), and stays 0 when every allocation is traced, so that the fast
 * path needs to look at nothing else: before tracing starts, or without
 * a heap profile at all, every call takes the slow path's first test.
 */
static __thread uint64_t sample_left __attribute__((tls_model("initial-exec")));
static __thread bool sample_armed __attribute__((tls_model("initial-exec")));

static void free_unresolved(void *p);
static void *malloc_unresolved(size_t n);
static void *calloc_unresolved(size_t n, size_t m);

/* The next definitions of what we interpose. */
static struct {
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
} real __attribute__((aligned(64))) = {
	/* free(), malloc() and calloc() call these without looking: until
	 * the next definitions are known, functions that find them (or,
	 * while dlsym runs, serve the bootstrap arena).  The others are
	 * called only once ready() said so. */
	.free = free_unresolved,
	.malloc = malloc_unresolved,
	.calloc = calloc_unresolved,
};

/* ---- bootstrap: dlsym may call calloc before real.calloc is known ---- */

#define BOOT_SIZE (64 * 1024)
static unsigned char boot_arena[BOOT_SIZE] __attribute__((aligned(64)));
static _Atomic size_t boot_used;

static bool is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_arena &&
	       (const unsigned char *)p < boot_arena + BOOT_SIZE;
}

/*
 * 16 bytes of header (the size) before each block; zeroed memory.  The
 * block's bit in the free filter is pinned (kheap_ss_pin0()), so that
 * free() sends it to do_free(), which knows it, and never to the real
 * free.
 */
static void *boot_alloc(size_t n, size_t align)
{
	size_t off, need;

	if (align < 16)
		align = 16;
	if (n > BOOT_SIZE || align > 4096)
		return NULL;
	off = atomic_load(&boot_used);
	do {
		size_t start = (off + 16 + align - 1) & ~(align - 1);

		need = start + n;
		if (need > BOOT_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!atomic_compare_exchange_weak(&boot_used, &off, need));
	{
		size_t start = (off + 16 + align - 1) & ~(align - 1);

		*(size_t *)(boot_arena + start - 16) = n;
		kheap_ss_pin0((uint64_t)(uintptr_t)(boot_arena + start));
		return boot_arena + start;
	}
}

static void free_nowhere(void *p)
{
}

static void resolve(void)
{
	static _Atomic int state;	/* 0 none, 1 resolving, 2 done */
	int none = 0;

	if (!atomic_compare_exchange_strong(&state, &none, 1)) {
		/* Another thread resolves; the resolving one itself comes
		 * back here through dlsym's calloc and is served the arena. */
		while (!booting && atomic_load(&state) != 2)
			sched_yield();
		return;
	}
	booting = 1;
	{
		/* Looked up first, published after: while dlsym runs, this
		 * thread's calloc and malloc must still reach the arena.
		 * Only names every allocator has (a failed lookup allocates
		 * its error message; jemalloc's are looked up on first use). */
		void (*f)(void *) = dlsym(RTLD_NEXT, "free");
		void *(*c)(size_t, size_t) = dlsym(RTLD_NEXT, "calloc");
		void *m;

		real.realloc = dlsym(RTLD_NEXT, "realloc");
		real.memalign = dlsym(RTLD_NEXT, "memalign");
		real.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
		real.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
		real.valloc = dlsym(RTLD_NEXT, "valloc");
		real.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
		m = dlsym(RTLD_NEXT, "malloc");
		/* No next free: blocks are never given back (never here). */
		real.free = f ? f : free_nowhere;
		if (c)
			real.calloc = c;
		/* Last: real.malloc set means everything is known (none
		 * found: it stays the resolver, which serves the arena). */
		if (m)
			atomic_store((_Atomic(void *) *)(void *)&real.malloc, m);
	}
	booting = 0;
	atomic_store(&state, 2);
}

static inline bool ready(void)
{
	if (likely(real.malloc != malloc_unresolved))
		return true;
	resolve();
	return real.malloc != malloc_unresolved;
}

static void *real_malloc(void)
{
	ready();
	return (void *)real.malloc;
}

/* ---- recording ---- */

static uint64_t draw(struct kheap_thread *t)
{
	uint64_t x = t->rng;
	double u;

	/* xorshift64*: a uniform in (0, 1], then an exponential variate. */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	u = (double)((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
	if (u <= 0)
		u = 0x1.0p-53;
	return (uint64_t)(-log(u) * (double)kheap_sample) + 1;
}

static void sample_start(struct kheap_thread *t, uint64_t seed)
{
	t->rng = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	if (!t->rng)
		t->rng = 1;
}

/*
 * Counts an allocation of n bytes down if it does not reach the thread's
 * next sample (true: nothing to record).  The hooks' fast path: one
 * thread-local load, a compare and a store.
 */
static inline bool counted(size_t n)
{
	uint64_t left = sample_left;

	if (likely(n < left)) {
		sample_left = left - n;
		return true;
	}
	return false;
}

/*
 * Whether an allocation of n bytes goes to on_alloc(): always when every
 * allocation is traced; when sampling, when it reaches the countdown (or
 * the thread's countdown is not armed yet).  Hook context.
 */
static inline bool want_alloc(size_t n)
{
	return !kheap_sample || !counted(n);
}

/* Records an allocation (tag 'A') made by the hook whose frame is given. */
static __attribute__((noinline)) void on_alloc(void *p, size_t n, void *frame)
{
	int saved = errno;
	struct kheap_thread *t = kheap_self();
	unsigned char rec[KHEAP_MAX_REC], *e = rec;
	uint64_t pcs[KHEAP_MAX_DEPTH], now;
	uint32_t id;
	int depth;

	if (!t)
		goto out;
	if (kheap_sample) {
		/* Poisson over the bytes allocated: sampled when the
		 * countdown (counted()) reaches zero inside this
		 * allocation.  A thread's first allocation arms it. */
		if (!sample_armed) {
			uint64_t d = draw(t);

			sample_armed = true;
			if (n < d) {
				sample_left = d - n;
				goto out;
			}
		}
		sample_left = draw(t);
		if (!kheap_sset_add((uint64_t)(uintptr_t)p)) {
			atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
			goto out;
		}
	}
	depth = kheap_unwind(t, frame, pcs, KHEAP_MAX_DEPTH);
	id = kheap_stack_id(pcs, depth);
	now = kheap_now();
	*e++ = 'A';
	e = kheap_uv(e, now - t->last_ns);
	e = kheap_uv(e, (uint64_t)(uintptr_t)p);
	e = kheap_uv(e, n);
	e = kheap_uv(e, id);
	if (kheap_put(t, rec, (size_t)(e - rec)))
		t->last_ns = now;
out:
	errno = saved;
}

/*
 * Whether a free of p is to be recorded (sampling mode: p was sampled; it
 * leaves the set now, before the real free can hand p out again).
 */
static inline bool free_wanted(void *p)
{
	/* The set's filters come first inside kheap_sset_del(). */
	return !kheap_sample || kheap_sset_del((uint64_t)(uintptr_t)p);
}

/* Records a free of p at time now (tag 'F'). */
static void put_free(void *p, uint64_t now)
{
	int saved = errno;
	struct kheap_thread *t = kheap_self();
	unsigned char rec[KHEAP_MAX_REC], *e = rec;

	if (t) {
		if (now < t->last_ns)
			now = t->last_ns;
		*e++ = 'F';
		e = kheap_uv(e, now - t->last_ns);
		e = kheap_uv(e, (uint64_t)(uintptr_t)p);
		if (kheap_put(t, rec, (size_t)(e - rec)))
			t->last_ns = now;
	}
	errno = saved;
}

static inline bool tracing(void)
{
	return !kiln_rt_guard && atomic_load_explicit(&kheap_on, memory_order_relaxed);
}

/* ---- the interposed functions ---- */

/*
 * Every allocation hook starts with counted(n): the fast path, a tail
 * call to the allocator with no register saved.  What counted() does not
 * let through goes to the hook's *_slow function (noinline, so that the
 * fast path stays a leaf), which sends the call on to the allocator when
 * the bootstrap has not found it yet, for a re-entrant call (or one of
 * kiln's own threads), and when tracing is off; otherwise it makes the
 * call under the guard and records what it returned, unwound from the
 * hook's frame.  (The hook may tail-call it: its frame then lies where
 * the hook's did, with the same saved frame pointer and return address.)
 */
/* Defines NAME_slow(PARAMS..., frame); boot: the answer before the
 * bootstrap found the allocator. */
#define SLOW(name, call, size, boot, ...)				\
	static __attribute__((noinline)) void *				\
	name##_slow(__VA_ARGS__, void *frame)				\
	{								\
		void *p_;						\
		if (unlikely(!ready()))					\
			return boot;					\
		if (!tracing())						\
			return call;					\
		kiln_rt_guard = 1;					\
		p_ = call;						\
		if (p_ && want_alloc(size))				\
			on_alloc(p_, size, frame);			\
		kiln_rt_guard = 0;					\
		return p_;						\
	}

SLOW(malloc, real.malloc(n), n, boot_alloc(n, 16), size_t n)
SLOW(calloc, real.calloc(n, m), n * m, calloc_unresolved(n, m), size_t n, size_t m)
SLOW(aligned_alloc, real.aligned_alloc(a, n), n, boot_alloc(n, a), size_t a, size_t n)
SLOW(memalign, real.memalign(a, n), n, boot_alloc(n, a), size_t a, size_t n)
SLOW(valloc, real.valloc(n), n, NULL, size_t n)
SLOW(pvalloc, real.pvalloc(n), n, NULL, size_t n)

/* malloc's body, also operator new's: frame is the hook's. */
static inline void *malloc_from(size_t n, void *frame)
{
	/* Tracing off: straight on (real.malloc is malloc_unresolved()
	 * until the bootstrap ran). */
	if (likely(counted(n)) ||
	    likely(!atomic_load_explicit(&kheap_on, memory_order_relaxed)))
		return real.malloc(n);
	return malloc_slow(n, frame);
}

HOOK void *malloc(size_t n)
{
	return malloc_from(n, __builtin_frame_address(0));
}

/* real.malloc until the bootstrap found the next malloc. */
static void *malloc_unresolved(size_t n)
{
	if (!ready())
		return boot_alloc(n, 16);
	return real.malloc(n);
}

HOOK void *calloc(size_t n, size_t m)
{
	size_t s;

	/* An overflowing n * m goes to the real calloc, which fails it. */
	if ((likely(!__builtin_mul_overflow(n, m, &s)) && likely(counted(s))) ||
	    likely(!atomic_load_explicit(&kheap_on, memory_order_relaxed)))
		return real.calloc(n, m);
	return calloc_slow(n, m, __builtin_frame_address(0));
}

/*
 * real.calloc until the bootstrap found the next calloc: the arena
 * (zeroed already) while dlsym runs, which may call calloc.
 */
static void *calloc_unresolved(size_t n, size_t m)
{
	size_t s;
	void *p;

	if (__builtin_mul_overflow(n, m, &s)) {
		errno = ENOMEM;
		return NULL;
	}
	if (booting || !ready())
		return boot_alloc(s, 16);
	if (real.calloc != calloc_unresolved)
		return real.calloc(n, m);
	/* An allocator with malloc and no calloc. */
	p = real.malloc(s);
	if (p)
		memset(p, 0, s);
	return p;
}

/* A free that free() could not pass straight to the allocator. */
static __attribute__((noinline)) void do_free(void *p)
{
	uint64_t now;

	if (!p || unlikely(is_boot(p)))
		return;		/* arena blocks are never freed */
	if (unlikely(!ready()))
		return;
	if (likely(!kheap_ss_maybe0((uint64_t)(uintptr_t)p)) || !tracing()) {
		real.free(p);
		return;
	}
	kiln_rt_guard = 1;
	if (free_wanted(p)) {
		now = kheap_now();
		put_free(p, now);
	}
	real.free(p);
	kiln_rt_guard = 0;
}

HOOK void free(void *p)
{
	/* Not tracing, or a block never sampled: straight to the allocator,
	 * reading one filter bit (all ones when every free is traced; before
	 * tracing starts, set only for blocks of the bootstrap arena, which
	 * do_free() keeps from the real free), no guard.  free(NULL) may go
	 * too. */
	if (likely(!kheap_ss_maybe0((uint64_t)(uintptr_t)p))) {
		real.free(p);
		return;
	}
	do_free(p);
}

/* real.free until the bootstrap found the next free. */
static void free_unresolved(void *p)
{
	do_free(p);
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

	if (!tracing())
		return real.realloc(p, n);
	kiln_rt_guard = 1;
	had = p && free_wanted(p);
	if (had)
		t0 = kheap_now();
	q = real.realloc(p, n);
	if (!q && n && p) {
		/* Failed: p is still the caller's. */
		if (had && kheap_sample)
			kheap_sset_add((uint64_t)(uintptr_t)p);
	} else {
		if (had)
			put_free(p, t0);
		if (q && want_alloc(n))
			on_alloc(q, n, frame);
	}
	kiln_rt_guard = 0;
	return q;
}

/* A block from the bootstrap arena moves to the real allocator. */
static void *boot_realloc(void *p, size_t n)
{
	size_t old = *(size_t *)((unsigned char *)p - 16);
	void *q = malloc(n);

	if (q)
		memcpy(q, p, old < n ? old : n);
	return q;
}

static __attribute__((noinline)) void *realloc_slow(void *p, size_t n,
						     void *frame)
{
	if (unlikely(!ready()))
		return NULL;
	if (unlikely(p && is_boot(p)))
		return boot_realloc(p, n);
	return do_realloc(p, n, frame);
}

HOOK void *realloc(void *p, size_t n)
{
	/* The old block never sampled, the new one not to be: nothing to
	 * record (the filter first: counted() counts n down).  The arena's
	 * blocks have their filter bit set. */
	if (likely(!kheap_ss_maybe0((uint64_t)(uintptr_t)p)) &&
	    likely(counted(n)))
		return real.realloc(p, n);
	return realloc_slow(p, n, __builtin_frame_address(0));
}

HOOK void *reallocarray(void *p, size_t n, size_t m)
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

	if (unlikely(!ready()))
		return ENOMEM;
	if (!tracing())
		return real.posix_memalign(out, align, n);
	kiln_rt_guard = 1;
	rc = real.posix_memalign(out, align, n);
	if (!rc && *out && want_alloc(n))
		on_alloc(*out, n, frame);
	kiln_rt_guard = 0;
	return rc;
}

HOOK int posix_memalign(void **out, size_t align, size_t n)
{
	if (likely(counted(n)))
		return real.posix_memalign(out, align, n);
	return posix_memalign_slow(out, align, n, __builtin_frame_address(0));
}

HOOK void *aligned_alloc(size_t align, size_t n)
{
	if (likely(counted(n)))
		return real.aligned_alloc(align, n);
	return aligned_alloc_slow(align, n, __builtin_frame_address(0));
}

HOOK void *memalign(size_t align, size_t n)
{
	if (likely(counted(n)))
		return real.memalign(align, n);
	return memalign_slow(align, n, __builtin_frame_address(0));
}

HOOK void *valloc(size_t n)
{
	if (likely(counted(n)))
		return real.valloc(n);
	return valloc_slow(n, __builtin_frame_address(0));
}

HOOK void *pvalloc(size_t n)
{
	if (likely(counted(n)))
		return real.pvalloc(n);
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
	if (likely(counted(n)))
		return real.posix_memalign(&p, align, n) ? NULL : p;
	return posix_memalign_slow(&p, align, n, frame) ? NULL : p;
}

#define NEW(name)							\
	HOOK void *name(size_t n)					\
	{								\
		void *p = malloc_from(n, __builtin_frame_address(0));	\
		void *(*f)(size_t);					\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t))dlsym(RTLD_NEXT, #name);			\
		return f ? f(n) : NULL;					\
	}
#define NEW_NOTHROW(name)						\
	HOOK void *name(size_t n, const void *tag)			\
	{								\
		void *p = malloc_from(n, __builtin_frame_address(0));	\
		void *(*f)(size_t, const void *);			\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t, const void *))dlsym(RTLD_NEXT, #name);	\
		return f ? f(n, tag) : NULL;				\
	}
#define NEW_ALIGNED(name)						\
	HOOK void *name(size_t n, size_t al)				\
	{								\
		void *p = new_aligned(n, al, __builtin_frame_address(0)); \
		void *(*f)(size_t, size_t);				\
		if (likely(p))						\
			return p;					\
		f = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, #name);		\
		return f ? f(n, al) : NULL;				\
	}
#define NEW_ALIGNED_NOTHROW(name)					\
	HOOK void *name(size_t n, size_t al, const void *tag)		\
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
	HOOK void name(void *p) __attribute__((alias("free"), copy(free)));
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

/*
 * jemalloc's non-standard API.  Without jemalloc in the process these
 * stand in for it on top of the real malloc (a program that probes for
 * mallocx through a weak reference finds ours and must not crash).
 */
#define MALLOCX_ALIGN_OF(f) ((f) & 0x3f ? (size_t)1 << ((f) & 0x3f) : 0)
#define MALLOCX_ZERO 0x40

static void *emul_mallocx(size_t n, int flags)
{
	size_t a = MALLOCX_ALIGN_OF(flags);
	void *p = NULL;

	if (a > 16) {
		if (real.posix_memalign(&p, a, n ? n : 1))
			p = NULL;
	} else {
		p = real.malloc(n ? n : 1);
	}
	if (p && (flags & MALLOCX_ZERO))
		memset(p, 0, n);
	return p;
}

static void *emul_rallocx(void *p, size_t n, int flags)
{
	size_t a = MALLOCX_ALIGN_OF(flags), old = malloc_usable_size(p);
	void *q;

	if (a > 16) {
		q = emul_mallocx(n, flags);
		if (q) {
			memcpy(q, p, old < n ? old : n);
			real.free(p);
		}
		return q;
	}
	q = real.realloc(p, n ? n : 1);
	if (q && (flags & MALLOCX_ZERO) && n > old)
		memset((char *)q + old, 0, n - old);
	return q;
}

/*
 * Looks up jemalloc's names (a failed dlsym allocates its error message:
 * the bootstrap looks up only names every allocator has), under the
 * guard: that message is not the program's.  The heap agent's
 * constructor calls it (through the table kiln_malloc_interposer) while the process has one
 * thread; a hook that runs before, from another library's constructor,
 * on first use.  false: the bootstrap has not found the allocator.
 */
static bool jemalloc_ready(void)
{
	static _Atomic int state;	/* 0 not looked up, 1 looking, 2 done */
	int none = 0, guard;

	if (likely(atomic_load_explicit(&state, memory_order_acquire) == 2))
		return true;
	if (!ready())
		return false;
	if (!atomic_compare_exchange_strong(&state, &none, 1)) {
		while (atomic_load(&state) != 2)
			sched_yield();
		return true;
	}
	guard = kiln_rt_guard;
	kiln_rt_guard = 1;
	real.mallocx = dlsym(RTLD_NEXT, "mallocx");
	real.rallocx = dlsym(RTLD_NEXT, "rallocx");
	real.xallocx = dlsym(RTLD_NEXT, "xallocx");
	real.sdallocx = dlsym(RTLD_NEXT, "sdallocx");
	real.dallocx = dlsym(RTLD_NEXT, "dallocx");
	kiln_rt_guard = guard;
	atomic_store_explicit(&state, 2, memory_order_release);
	return true;
}

static void jemalloc_init(void)
{
	jemalloc_ready();
}

/* jemalloc's mallocx, or ours on top of the real malloc. */
static void *any_mallocx(size_t n, int flags)
{
	return real.mallocx ? real.mallocx(n, flags) : emul_mallocx(n, flags);
}

SLOW(mallocx, any_mallocx(n, flags), n, NULL, size_t n, int flags)

HOOK void *mallocx(size_t n, int flags)
{
	if (unlikely(!jemalloc_ready()))
		return NULL;
	if (likely(counted(n)))
		return any_mallocx(n, flags);
	return mallocx_slow(n, flags, __builtin_frame_address(0));
}

HOOK void *rallocx(void *p, size_t n, int flags)
{
	bool had;
	uint64_t t0 = 0;
	void *q;

	if (unlikely(!jemalloc_ready()))
		return NULL;
	if (!tracing())
		return real.rallocx ? real.rallocx(p, n, flags) :
				      emul_rallocx(p, n, flags);
	kiln_rt_guard = 1;
	had = free_wanted(p);
	if (had)
		t0 = kheap_now();
	q = real.rallocx ? real.rallocx(p, n, flags) : emul_rallocx(p, n, flags);
	if (!q) {
		if (had && kheap_sample)
			kheap_sset_add((uint64_t)(uintptr_t)p);
	} else {
		if (had)
			put_free(p, t0);
		if (want_alloc(n))
			on_alloc(q, n, __builtin_frame_address(0));
	}
	kiln_rt_guard = 0;
	return q;
}

HOOK size_t xallocx(void *p, size_t n, size_t extra, int flags)
{
	size_t got;
	bool had;
	uint64_t t0 = 0;

	if (unlikely(!jemalloc_ready()))
		return 0;
	if (!real.xallocx)
		return malloc_usable_size(p);	/* never resizes in place */
	if (!tracing())
		return real.xallocx(p, n, extra, flags);
	kiln_rt_guard = 1;
	had = free_wanted(p);
	if (had)
		t0 = kheap_now();
	got = real.xallocx(p, n, extra, flags);
	if (got >= n) {
		/* Resized in place: the block now holds what was asked. */
		size_t want = n + extra < n ? n : n + extra;

		if (had)
			put_free(p, t0);
		if (want_alloc(got < want ? got : want))
			on_alloc(p, got < want ? got : want,
				 __builtin_frame_address(0));
	} else if (had && kheap_sample) {
		kheap_sset_add((uint64_t)(uintptr_t)p);
	}
	kiln_rt_guard = 0;
	return got;
}

HOOK void dallocx(void *p, int flags)
{
	if (unlikely(!jemalloc_ready()) || !p || is_boot(p))
		return;
	if (!real.dallocx) {
		do_free(p);
		return;
	}
	if (!tracing()) {
		real.dallocx(p, flags);
		return;
	}
	kiln_rt_guard = 1;
	if (free_wanted(p))
		put_free(p, kheap_now());
	real.dallocx(p, flags);
	kiln_rt_guard = 0;
}

HOOK void sdallocx(void *p, size_t n, int flags)
{
	if (unlikely(!jemalloc_ready()) || !p || is_boot(p))
		return;
	if (!real.sdallocx) {
		do_free(p);
		return;
	}
	if (!tracing()) {
		real.sdallocx(p, n, flags);
		return;
	}
	kiln_rt_guard = 1;
	if (free_wanted(p))
		put_free(p, kheap_now());
	real.sdallocx(p, n, flags);
	kiln_rt_guard = 0;
}

/* What libkiln.so finds by name (heapint.h). */
__attribute__((visibility("default")))
const struct kheap_interposer kiln_malloc_interposer = {
	.abi = KHEAP_ABI,
	.real_malloc = real_malloc,
	.jemalloc_init = jemalloc_init,
	.sample_start = sample_start,
};
