/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload with known numbers (tests of the heap tracer): every
 * allocation function called a known number of times with known sizes
 * from its own noinline function, and one known leak.
 *
 *   alloc_small     1000 x malloc(100), all freed
 *   alloc_calloc     100 x calloc(10, 32), all freed
 *   alloc_grow        10 x realloc chains 64 -> 128 -> 256, freed
 *   alloc_aligned      1 each of posix_memalign(64, 1000),
 *                      aligned_alloc(256, 2048), memalign(128, 3000),
 *                      valloc(5000), pvalloc(6000), reallocarray(7, 100)
 *   leak_here          5 x malloc(4096), never freed (20480 bytes)
 *   peak_big          one 8 MiB block, freed
 */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[1000];
static volatile unsigned long sink;

__attribute__((noinline)) void alloc_small(void)
{
	int i;

	for (i = 0; i < 1000; i++) {
		keep[i] = malloc(100);
		memset(keep[i], i, 100);
	}
	for (i = 0; i < 1000; i++)
		free(keep[i]);
}

__attribute__((noinline)) void alloc_calloc(void)
{
	int i;

	for (i = 0; i < 100; i++)
		keep[i] = calloc(10, 32);
	for (i = 0; i < 100; i++)
		free(keep[i]);
}

__attribute__((noinline)) void alloc_grow(void)
{
	int i;

	for (i = 0; i < 10; i++) {
		char *p = malloc(64);

		p = realloc(p, 128);
		p = realloc(p, 256);
		p[255] = 1;
		sink += (unsigned long)p[255];
		free(p);
	}
}

__attribute__((noinline)) void alloc_aligned(void)
{
	void *p[6] = { 0 };
	int i;

	if (posix_memalign(&p[0], 64, 1000))
		p[0] = NULL;
	p[1] = aligned_alloc(256, 2048);
	p[2] = memalign(128, 3000);
	p[3] = valloc(5000);
	p[4] = pvalloc(6000);
	p[5] = reallocarray(NULL, 7, 100);
	for (i = 0; i < 6; i++) {
		sink += p[i] != NULL;
		free(p[i]);
	}
}

__attribute__((noinline)) void leak_here(void)
{
	int i;

	for (i = 0; i < 5; i++) {
		void *p = malloc(4096);

		memset(p, 1, 4096);
		sink += (unsigned long)p & 1;
	}
}

__attribute__((noinline)) void peak_big(void)
{
	char *p = malloc(8 << 20);

	memset(p, 2, 8 << 20);
	sink += (unsigned long)p[12345];
	free(p);
}

__attribute__((noinline)) int run(void)
{
	alloc_small();
	alloc_calloc();
	alloc_grow();
	alloc_aligned();
	leak_here();
	peak_big();
	return (int)(sink & 0);
}

int main(void)
{
	int rc = run();

	printf("heapbasic: %d aligned blocks, done\n", (int)(sink > 0) * 6);
	return rc;
}
