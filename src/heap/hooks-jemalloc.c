/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jemalloc's extra entry points in the malloc interposer (heap stage,
 * libkiln-malloc.so): mallocx, rallocx, xallocx, sdallocx and dallocx,
 * recorded as the malloc family is (hooks.c), and stood in for on top of
 * the real malloc when the process has no jemalloc.  Hook rules: hooks.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "heap/hookint.h"


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
		if (kheap_real.posix_memalign(&p, a, n ? n : 1))
			p = NULL;
	} else {
		p = kheap_real.malloc(n ? n : 1);
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
			kheap_real.free(p);
		}
		return q;
	}
	q = kheap_real.realloc(p, n ? n : 1);
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
	if (!kheap_ready())
		return false;
	if (!atomic_compare_exchange_strong(&state, &none, 1)) {
		while (atomic_load(&state) != 2)
			sched_yield();
		return true;
	}
	guard = kiln_rt_guard;
	kiln_rt_guard = 1;
	kheap_real.mallocx = dlsym(RTLD_NEXT, "mallocx");
	kheap_real.rallocx = dlsym(RTLD_NEXT, "rallocx");
	kheap_real.xallocx = dlsym(RTLD_NEXT, "xallocx");
	kheap_real.sdallocx = dlsym(RTLD_NEXT, "sdallocx");
	kheap_real.dallocx = dlsym(RTLD_NEXT, "dallocx");
	kiln_rt_guard = guard;
	atomic_store_explicit(&state, 2, memory_order_release);
	return true;
}

void kheap_jemalloc_init(void)
{
	jemalloc_ready();
}

/* jemalloc's mallocx, or ours on top of the real malloc. */
static void *any_mallocx(size_t n, int flags)
{
	return kheap_real.mallocx ? kheap_real.mallocx(n, flags) : emul_mallocx(n, flags);
}

KHEAP_SLOW(mallocx, any_mallocx(n, flags), n, NULL, size_t n, int flags)

KHEAP_HOOK void *mallocx(size_t n, int flags)
{
	if (unlikely(!jemalloc_ready()))
		return NULL;
	if (likely(kheap_counted(n)))
		return any_mallocx(n, flags);
	return mallocx_slow(n, flags, __builtin_frame_address(0));
}

KHEAP_HOOK void *rallocx(void *p, size_t n, int flags)
{
	bool had;
	uint64_t t0 = 0;
	void *q;

	if (unlikely(!jemalloc_ready()))
		return NULL;
	if (!kheap_tracing())
		return kheap_real.rallocx ? kheap_real.rallocx(p, n, flags) :
				      emul_rallocx(p, n, flags);
	kiln_rt_guard = 1;
	had = kheap_free_wanted(p);
	if (had)
		t0 = kheap_stamp();
	q = kheap_real.rallocx ? kheap_real.rallocx(p, n, flags) : emul_rallocx(p, n, flags);
	if (!q) {
		if (had && kheap_sample)
			kheap_sset_add((uint64_t)(uintptr_t)p);
	} else {
		if (had)
			kheap_put_free(p, t0);
		if (kheap_want_alloc(n))
			kheap_on_alloc(q, n, __builtin_frame_address(0));
	}
	kiln_rt_guard = 0;
	return q;
}

KHEAP_HOOK size_t xallocx(void *p, size_t n, size_t extra, int flags)
{
	size_t got;
	bool had;
	uint64_t t0 = 0;

	if (unlikely(!jemalloc_ready()))
		return 0;
	if (!kheap_real.xallocx)
		return malloc_usable_size(p);	/* never resizes in place */
	if (!kheap_tracing())
		return kheap_real.xallocx(p, n, extra, flags);
	kiln_rt_guard = 1;
	had = kheap_free_wanted(p);
	if (had)
		t0 = kheap_stamp();
	got = kheap_real.xallocx(p, n, extra, flags);
	if (got >= n) {
		/* Resized in place: the block now holds what was asked. */
		size_t want = n + extra < n ? n : n + extra;

		if (had)
			kheap_put_free(p, t0);
		if (kheap_want_alloc(got < want ? got : want))
			kheap_on_alloc(p, got < want ? got : want,
				 __builtin_frame_address(0));
	} else if (had && kheap_sample) {
		kheap_sset_add((uint64_t)(uintptr_t)p);
	}
	kiln_rt_guard = 0;
	return got;
}

KHEAP_HOOK void dallocx(void *p, int flags)
{
	if (unlikely(!jemalloc_ready()) || !p || kheap_is_boot(p))
		return;
	if (!kheap_real.dallocx) {
		kheap_do_free(p);
		return;
	}
	if (!kheap_tracing()) {
		kheap_real.dallocx(p, flags);
		return;
	}
	kiln_rt_guard = 1;
	if (kheap_free_wanted(p))
		kheap_put_free(p, kheap_stamp());
	kheap_real.dallocx(p, flags);
	kiln_rt_guard = 0;
}

KHEAP_HOOK void sdallocx(void *p, size_t n, int flags)
{
	if (unlikely(!jemalloc_ready()) || !p || kheap_is_boot(p))
		return;
	if (!kheap_real.sdallocx) {
		kheap_do_free(p);
		return;
	}
	if (!kheap_tracing()) {
		kheap_real.sdallocx(p, n, flags);
		return;
	}
	kiln_rt_guard = 1;
	if (kheap_free_wanted(p))
		kheap_put_free(p, kheap_stamp());
	kheap_real.sdallocx(p, n, flags);
	kiln_rt_guard = 0;
}
