/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload that runs out of memory (run it under `ulimit -v`): grab()
 * allocates 1 MiB blocks until malloc fails, then every block is freed
 * and the program exits normally, saying so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOCKS 100000

static void *blocks[MAX_BLOCKS];

__attribute__((noinline)) void *grab(void)
{
	void *p = malloc(1 << 20);

	if (p)
		memset(p, 1, 4096);
	return p;
}

int main(void)
{
	int n = 0, i;

	while (n < MAX_BLOCKS && (blocks[n] = grab()))
		n++;
	for (i = 0; i < n; i++)
		free(blocks[i]);
	printf("heapoom: %s, freed all\n", n < MAX_BLOCKS ? "ran out" : "never ran out");
	return 0;
}
