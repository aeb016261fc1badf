/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload with many blocks live at once (tests of the sampled-block
 * set, which starts small and grows): 30 000 blocks of 64 bytes allocated
 * by hold_many() and kept, then all freed but the last 100 (a leak of
 * 6400 bytes); then 30 000 more by churn(), each freed at once.  Every
 * number is exact when every allocation is sampled (KILN_HEAP_SAMPLE=1).
 *
 *   hold_many   30000 x malloc(64), 29900 freed, 100 leaked
 *   churn       30000 x malloc(64), all freed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 30000

static void *keep[N];
static volatile unsigned long sink;

__attribute__((noinline)) void hold_many(void)
{
	int i;

	for (i = 0; i < N; i++) {
		keep[i] = malloc(64);
		memset(keep[i], i, 64);
	}
	for (i = 0; i < N - 100; i++)
		free(keep[i]);
}

__attribute__((noinline)) void churn(void)
{
	int i;

	for (i = 0; i < N; i++) {
		char *p = malloc(64);

		p[63] = (char)i;
		sink += (unsigned char)p[63];
		free(p);
	}
}

int main(void)
{
	hold_many();
	churn();
	printf("heaplive: %d blocks held, 100 kept\n", N);
	return 0;
}
