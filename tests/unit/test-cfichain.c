/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the unwinder's chain cache (src/unwind/cfi-chain.c): a
 * chain found in the cache gives the stack a fresh walk gives, the same
 * call site reached another way misses, and after a library is unloaded
 * and another one loaded at its address (the table set refreshed, as the
 * heap tracer's writer does), the old chains miss and the new walk is
 * right.  The stack a cached value stands for is kept by the test (the
 * heap tracer's stack table) and compared with kiln_cfi_unwind_regs()
 * without the cache, every time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "unwind/cfi.h"

#define MAXF 64
#define MAXV 64

static struct kiln_cfi *cfi;
/* Eager tables, the fresh walks' (lazy ones without build_now fall back
 * to frame pointers where a row is not built yet). */
static struct kiln_cfi *ref_cfi;
static struct kiln_cfi_cache cache;
static struct kiln_cfi_chains chains;
static uint64_t stack_lo, stack_hi;
/* Stacks by value (1..nvals), as the heap tracer's stack table. */
static uint64_t vals[MAXV + 1][MAXF];
static int vlen[MAXV + 1], nvals;
static int hits, walks;

/*
 * Finds the chain starting at r, or walks it and stores it; either way
 * the stack must be a fresh walk's.  Returns its value.
 */
static uint32_t stack_of(const struct kiln_cfi_regs *r)
{
	uint64_t ref[MAXF], got[MAXF];
	int nref, n;
	uint32_t v;

	nref = kiln_cfi_unwind_regs(ref_cfi, r, stack_lo, stack_hi, 0, ref, MAXF);
	assert_true(nref >= 3);
	v = kiln_cfi_chain_find(cfi, &chains, r, stack_lo, stack_hi);
	if (v) {
		hits++;
		assert_true(v <= (uint32_t)nvals);
		assert_int_equal(vlen[v], nref);
		assert_memory_equal(vals[v], ref, (size_t)nref * sizeof(*ref));
		return v;
	}
	walks++;
	n = kiln_cfi_unwind_chain(cfi, &cache, &chains, r, stack_lo, stack_hi,
				  got, MAXF);
	assert_int_equal(n, nref);
	assert_memory_equal(got, ref, (size_t)n * sizeof(*ref));
	for (v = 1; v <= (uint32_t)nvals; v++)
		if (vlen[v] == n && !memcmp(vals[v], got, (size_t)n * sizeof(*got)))
			break;
	if (v > (uint32_t)nvals) {
		assert_true(nvals < MAXV);
		v = (uint32_t)++nvals;
		memcpy(vals[v], got, (size_t)n * sizeof(*got));
		vlen[v] = n;
	}
	kiln_cfi_chain_put(&chains, v);
	return v;
}

/* The library's function, and the last value probe() found. */
static int (*lib_call)(int (*fn)(void *), void *arg);
static uint32_t last;

static __attribute__((noinline)) int probe(void *arg)
{
	ucontext_t uc;
	struct kiln_cfi_regs r;

	(void)arg;
	getcontext(&uc);
	r.pc = (uint64_t)uc.uc_mcontext.gregs[REG_RIP];
	r.sp = (uint64_t)uc.uc_mcontext.gregs[REG_RSP];
	r.fp = (uint64_t)uc.uc_mcontext.gregs[REG_RBP];
	last = stack_of(&r);
	__asm__ volatile("" ::: "memory");
	return 0;
}

/* Two callers of one frame size: the library's frame and probe's lie at
 * the same addresses from both, with another return address above. */
static volatile int via_count[2];

static __attribute__((noinline)) uint32_t via_one(void)
{
	lib_call(probe, NULL);
	via_count[0]++;
	return last;
}

static __attribute__((noinline)) uint32_t via_two(void)
{
	lib_call(probe, NULL);
	via_count[1] += 2;
	return last;
}

/* via_one() (which 1) or via_two() (2), from the same frame each time. */
static __attribute__((noinline)) uint32_t via(int which)
{
	uint32_t v = which == 1 ? via_one() : via_two();

	__asm__ volatile("" ::: "memory");
	return v;
}

static void *load(const char *name)
{
	char path[PATH_MAX + 64], exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *h;

	assert_true(k > 0);
	exe[k] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(path, sizeof(path), "%s/%s", exe, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("cannot load '%s': %s", path, dlerror());
	lib_call = (int (*)(int (*)(void *), void *))dlsym(h, "chain_lib_call");
	assert_non_null(lib_call);
	return h;
}

/* Both table sets learn of the libraries loaded and unloaded. */
static void refresh(void)
{
	assert_int_equal(kiln_cfi_refresh(cfi), 0);
	assert_int_equal(kiln_cfi_refresh(ref_cfi), 0);
}

static int setup(void **state)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	(void)state;
	assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
	assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
	pthread_attr_destroy(&a);
	stack_lo = (uint64_t)(uintptr_t)addr;
	stack_hi = stack_lo + size;
	cfi = kiln_cfi_new();
	assert_non_null(cfi);
	/* As the heap tracer has it: lazy tables built by the walk. */
	kiln_cfi_set_lazy(cfi, true, NULL, NULL);
	kiln_cfi_set_build_now(cfi, true);
	ref_cfi = kiln_cfi_new();
	assert_non_null(ref_cfi);
	refresh();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kiln_cfi_free(cfi);
	kiln_cfi_free(ref_cfi);
	return 0;
}

/*
 * Calls via(which[i]) for each i, from this one call site: the chains of
 * a run differ only by via_one() and via_two().  got[i]: the values,
 * walked[i]: whether a walk was needed.
 */
static __attribute__((noinline)) void run(const int *which, int n,
					   uint32_t *got, int *walked)
{
	for (int i = 0; i < n; i++) {
		int w = walks;

		got[i] = via(which[i]);
		walked[i] = walks - w;
	}
}

/*
 * The same chain again: from the cache.  The same frames reached through
 * another caller (the return address into via_two() instead of
 * via_one()): a miss, then a chain of its own beside the first.
 */
static void test_hit_and_miss(void **state)
{
	static const int which[] = { 1, 1, 1, 2, 2, 1, 2, 1, 2, 1 };
	enum { N = sizeof(which) / sizeof(which[0]) };
	void *h = load("libchainlib-a.so");
	uint32_t got[N];
	int walked[N], i;

	(void)state;
	refresh();
	run(which, N, got, walked);
	for (i = 0; i < N; i++) {
		/* The first of each is walked, the others found. */
		assert_int_equal(walked[i], i == 0 || i == 3);
		assert_int_equal(got[i], got[which[i] == 1 ? 0 : 3]);
	}
	assert_int_not_equal(got[0], got[3]);
	dlclose(h);
	refresh();
}

/*
 * A library unloaded, another loaded at its address with other frames,
 * the table sets refreshed (as the heap tracer's writer does when
 * libraries come and go): the old chain misses and the new walk is a
 * fresh one's (stack_of() checks every stack against one); and back.
 */
static void test_reload_same_address(void **state)
{
	static const int one = 1;
	uint64_t at[5] = { 0 };
	uint32_t v[5];
	int walked[5], phase;
	void *h = NULL;

	(void)state;
	for (phase = 0; phase < 5; phase++) {
		switch (phase) {
		case 0:		/* a: walked */
		case 4:		/* a again, after b: walked anew */
			if (h)
				dlclose(h);
			h = load("libchainlib-a.so");
			refresh();
			break;
		case 2:		/* b where a was: walked */
			dlclose(h);
			h = load("libchainlib-b.so");
			refresh();
			break;
		default:	/* the same again: found */
			break;
		}
		at[phase] = (uint64_t)(uintptr_t)lib_call;
		run(&one, 1, &v[phase], &walked[phase]);
	}
	dlclose(h);
	refresh();
	if (at[2] != at[0])
		print_message("note: chainlib-b loaded at %#llx, not at chainlib-a's "
			      "%#llx\n", (unsigned long long)at[2],
			      (unsigned long long)at[0]);
	assert_int_equal(walked[0], 1);
	assert_int_equal(walked[1], 0);
	assert_int_equal(walked[2], 1);
	assert_int_equal(walked[3], 0);
	assert_int_equal(walked[4], 1);
	assert_int_equal(v[1], v[0]);
	assert_int_equal(v[3], v[2]);
	if (at[4] == at[0])
		assert_int_equal(v[4], v[0]);
}

/* A chain deeper than the cache holds is walked every time. */
static __attribute__((noinline)) int deep(int d)
{
	if (d > 0) {
		int r = deep(d - 1);

		__asm__ volatile("" ::: "memory");
		return r + 1;
	}
	return lib_call(probe, NULL);
}

static void test_too_deep(void **state)
{
	void *h = load("libchainlib-a.so");
	int w;

	(void)state;
	refresh();
	deep(KILN_CFI_CHAIN_WORDS + 4);
	w = walks;
	deep(KILN_CFI_CHAIN_WORDS + 4);
	assert_int_equal(walks, w + 1);
	dlclose(h);
	refresh();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_and_miss),
		cmocka_unit_test(test_reload_same_address),
		cmocka_unit_test(test_too_deep),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
