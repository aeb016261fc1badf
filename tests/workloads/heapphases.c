/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload in three phases 300 ms apart (kiln serve's time range on
 * heap traces), every number exact when every allocation is traced:
 *
 *   phase_one    100 x malloc(10000), kept to the end (a leak of 1,000,000)
 *   (300 ms)
 *   phase_two    200 x malloc(10000), kept until phase_three (2,000,000)
 *   (300 ms)
 *   phase_three  frees phase_two's blocks; 50 x malloc(10000), kept to the
 *                end (a leak of 500,000)
 *   (300 ms)
 *
 * The heap peaks at 3,000,000 bytes between phase_two and phase_three.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIZE 10000

static void *two[200];
static void *volatile keep[150];

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) void phase_one(void)
{
	for (int i = 0; i < 100; i++) {
		keep[i] = malloc(SIZE);
		memset(keep[i], 1, SIZE);
	}
}

__attribute__((noinline)) void phase_two(void)
{
	for (int i = 0; i < 200; i++) {
		two[i] = malloc(SIZE);
		memset(two[i], 2, SIZE);
	}
}

__attribute__((noinline)) void phase_three(void)
{
	for (int i = 0; i < 200; i++)
		free(two[i]);
	for (int i = 0; i < 50; i++) {
		keep[100 + i] = malloc(SIZE);
		memset(keep[100 + i], 3, SIZE);
	}
}

int main(void)
{
	phase_one();
	pause_ms(300);
	phase_two();
	pause_ms(300);
	phase_three();
	pause_ms(300);
	return 0;
}
