/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload linked with jemalloc (tests of the heap tracer): the
 * standard entry points and jemalloc's own, each from a known function.
 *
 *   std_calls      200 x malloc(64), all freed
 *   x_calls        100 x mallocx(256, MALLOCX_ZERO): 50 dallocx'ed,
 *                  50 rallocx'ed to 1024 and sdallocx'ed
 *   leak_x          4 x mallocx(333, 0), never freed (1332 bytes)
 *
 * Built twice: against libjemalloc.so (heapje) and with jemalloc linked
 * statically into the executable (heapje-static), which the agent cannot
 * see into and says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jemalloc/jemalloc.h>

static void *keep[200];
static volatile unsigned long sink;

__attribute__((noinline)) void std_calls(void)
{
	int i;

	for (i = 0; i < 200; i++)
		keep[i] = malloc(64);
	for (i = 0; i < 200; i++)
		free(keep[i]);
}

__attribute__((noinline)) void x_calls(void)
{
	int i;

	for (i = 0; i < 100; i++)
		keep[i] = mallocx(256, MALLOCX_ZERO);
	for (i = 0; i < 50; i++)
		dallocx(keep[i], 0);
	for (i = 50; i < 100; i++) {
		keep[i] = rallocx(keep[i], 1024, 0);
		sdallocx(keep[i], 1024, 0);
	}
}

__attribute__((noinline)) void leak_x(void)
{
	int i;

	for (i = 0; i < 4; i++)
		sink += (unsigned long)mallocx(333, 0) & 1;
}

int main(void)
{
	std_calls();
	x_calls();
	leak_x();
	printf("heapje: done\n");
	return 0;
}
