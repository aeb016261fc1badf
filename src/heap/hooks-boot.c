/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The malloc interposer's bootstrap (heap stage, libkiln-malloc.so): the
 * next definitions of the malloc family looked up with dlsym(RTLD_NEXT)
 * on the first call, and the static arena that serves dlsym's own calloc
 * (and any allocation) while they are not known yet.  Arena blocks never
 * reach the real free: their first-filter bit is pinned (kheap_ss_pin0()),
 * so that free() sends them to kheap_do_free(), which keeps them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heap/hookint.h"

__thread int kheap_booting KHEAP_TLS;

struct kheap_real kheap_real __attribute__((aligned(64))) = {
	/* free(), malloc() and calloc() call these without looking: until
	 * the next definitions are known, functions that find them (or,
	 * while dlsym runs, serve the bootstrap arena). */
	.free = kheap_free_unresolved,
	.malloc = kheap_malloc_unresolved,
	.calloc = kheap_calloc_unresolved,
};

#define BOOT_SIZE (64 * 1024)
static unsigned char boot_arena[BOOT_SIZE] __attribute__((aligned(64)));
static _Atomic size_t boot_used;

bool kheap_is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_arena &&
	       (const unsigned char *)p < boot_arena + BOOT_SIZE;
}

/* 16 bytes of header (the size) before each block; zeroed memory. */
void *kheap_boot_alloc(size_t n, size_t align)
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

void *kheap_boot_realloc(void *p, size_t n)
{
	size_t old = *(size_t *)((unsigned char *)p - 16);
	void *q = malloc(n);

	if (q)
		memcpy(q, p, old < n ? old : n);
	return q;
}

static void free_nowhere(void *p)
{
}

void kheap_resolve(void)
{
	static _Atomic int state;	/* 0 none, 1 resolving, 2 done */
	int none = 0;

	if (!atomic_compare_exchange_strong(&state, &none, 1)) {
		/* Another thread resolves; the resolving one itself comes
		 * back here through dlsym's calloc and is served the arena. */
		while (!kheap_booting && atomic_load(&state) != 2)
			sched_yield();
		return;
	}
	kheap_booting = 1;
	{
		/* Looked up first, published after: while dlsym runs, this
		 * thread's calloc and malloc must still reach the arena.
		 * Only names every allocator has (a failed lookup allocates
		 * its error message; jemalloc's are looked up on first use). */
		void (*f)(void *) = dlsym(RTLD_NEXT, "free");
		void *(*c)(size_t, size_t) = dlsym(RTLD_NEXT, "calloc");
		void *m;

		kheap_real.realloc = dlsym(RTLD_NEXT, "realloc");
		kheap_real.memalign = dlsym(RTLD_NEXT, "memalign");
		kheap_real.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
		kheap_real.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
		kheap_real.valloc = dlsym(RTLD_NEXT, "valloc");
		kheap_real.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
		m = dlsym(RTLD_NEXT, "malloc");
		/* No next free: blocks are never given back (never here). */
		kheap_real.free = f ? f : free_nowhere;
		if (c)
			kheap_real.calloc = c;
		/* Last: real.malloc set means everything is known (none
		 * found: it stays the resolver, which serves the arena). */
		if (m)
			atomic_store((_Atomic(void *) *)(void *)&kheap_real.malloc, m);
	}
	kheap_booting = 0;
	atomic_store(&state, 2);
}

void *kheap_malloc_unresolved(size_t n)
{
	if (!kheap_ready())
		return kheap_boot_alloc(n, 16);
	return kheap_real.malloc(n);
}

/*
 * The arena (zeroed already) while dlsym runs, which may call calloc;
 * then the next calloc, or malloc and memset for an allocator without one.
 */
void *kheap_calloc_unresolved(size_t n, size_t m)
{
	size_t s;
	void *p;

	if (__builtin_mul_overflow(n, m, &s)) {
		errno = ENOMEM;
		return NULL;
	}
	if (kheap_booting || !kheap_ready())
		return kheap_boot_alloc(s, 16);
	if (kheap_real.calloc != kheap_calloc_unresolved)
		return kheap_real.calloc(n, m);
	p = kheap_real.malloc(s);
	if (p)
		memset(p, 0, s);
	return p;
}

void kheap_free_unresolved(void *p)
{
	kheap_do_free(p);
}
