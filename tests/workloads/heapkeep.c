/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload for heap profilers' in-use figures (t107): known bytes
 * allocated in named noinline functions and kept until exit, where
 * gperftools' HEAPPROFILE writes its last profile, and some allocated and
 * freed on the way.
 *
 *   keep_small    1000 x malloc(1000)     kept: 1,000,000 bytes
 *   keep_medium     50 x malloc(40000)    kept: 2,000,000 bytes
 *   keep_large       3 x malloc(1000000)  kept: 3,000,000 bytes
 *   churn          100 x malloc(100000)   all freed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[1100];
static size_t nkept;
static volatile unsigned long sink;

/* Inlined: the malloc call is in each keep_* function. */
static inline __attribute__((always_inline)) void keep(size_t size)
{
	void *p = malloc(size);

	if (!p)
		abort();
	memset(p, 1, size);
	kept[nkept++] = p;
}

__attribute__((noinline)) void keep_small(void)
{
	int i;

	for (i = 0; i < 1000; i++)
		keep(1000);
}

__attribute__((noinline)) void keep_medium(void)
{
	int i;

	for (i = 0; i < 50; i++)
		keep(40000);
}

__attribute__((noinline)) void keep_large(void)
{
	int i;

	for (i = 0; i < 3; i++)
		keep(1000000);
}

__attribute__((noinline)) void churn(void)
{
	int i;

	for (i = 0; i < 100; i++) {
		char *p = malloc(100000);

		p[99999] = (char)i;
		sink += (unsigned long)p[99999];
		free(p);
	}
}

int main(void)
{
	keep_small();
	keep_medium();
	churn();
	keep_large();
	printf("heapkeep: %zu blocks kept\n", nkept);
	return 0;
}
