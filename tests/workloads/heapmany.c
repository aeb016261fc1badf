/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: 2 GiB allocated in all, with known numbers, for the sampling
 * accuracy of heap profiles (tests/e2e/t865-heap-sample-accuracy.sh).
 *
 *   alloc_many   524288 blocks whose sizes cycle through 1024, 2048,
 *                4096, 6144, 8192, 3072, 2048, 6144 bytes (mean 4096),
 *                each freed at once: 2147483648 bytes, 524288 blocks
 *   keep_few     1000 blocks of 1000 bytes, kept to the end
 */
#include <stdio.h>
#include <stdlib.h>

static const size_t sizes[8] = { 1024, 2048, 4096, 6144, 8192, 3072, 2048, 6144 };
/* Volatile: the compiler may not drop a malloc/free pair it sees through. */
static void *volatile kept[1000];
void *volatile many_sink;

__attribute__((noinline)) void alloc_many(void)
{
	size_t i;

	for (i = 0; i < 524288; i++) {
		many_sink = malloc(sizes[i & 7]);
		free(many_sink);
	}
}

__attribute__((noinline)) void keep_few(void)
{
	int i;

	for (i = 0; i < 1000; i++)
		kept[i] = malloc(1000);
}

int main(void)
{
	keep_few();
	alloc_many();
	printf("heapmany: done\n");
	return 0;
}
