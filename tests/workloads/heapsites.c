/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload with three allocation sites of known growth and known
 * leaks (kiln serve's heap views), every number exact when every
 * allocation is traced:
 *
 *   60 rounds, 5 ms apart, each:
 *     grow_a   malloc(40000), kept     (grows to 2,400,000 bytes)
 *     grow_b   malloc(24000), kept     (grows to 1,440,000)
 *     grow_c   malloc(8000), kept      (grows to   480,000)
 *     churn    10 x malloc(100) freed at once (600 temporary allocations)
 *   then it waits until CLOCK_MONOTONIC (the trace's clock) is 1.2 s past
 *   the last allocation, so every block kept has lived more than 1 s by
 *   construction, whatever the machine's load;
 *   then it frees every block but the leaks: grow_a's first 3 (120,000
 *   bytes), grow_b's first 2 (48,000), grow_c's first one (8,000).
 *
 * "Live at the end, lifetime over 1 s" is then exactly those 6 blocks.
 * No stdio: its buffer would be one more block live at the end.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 60

static void *a[ROUNDS], *b[ROUNDS], *c[ROUNDS];
static void *volatile sink;

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void *grow_a(void)
{
	void *p = malloc(40000);

	memset(p, 1, 40000);
	return p;
}

__attribute__((noinline)) void *grow_b(void)
{
	void *p = malloc(24000);

	memset(p, 2, 24000);
	return p;
}

__attribute__((noinline)) void *grow_c(void)
{
	void *p = malloc(8000);

	memset(p, 3, 8000);
	return p;
}

__attribute__((noinline)) void churn(void)
{
	for (int i = 0; i < 10; i++) {
		void *p = malloc(100);

		sink = p;
		free(p);
	}
}

int main(void)
{
	long long last;

	for (int r = 0; r < ROUNDS; r++) {
		a[r] = grow_a();
		b[r] = grow_b();
		c[r] = grow_c();
		churn();
		pause_ms(5);
	}
	/* The blocks kept were all allocated before `last`. */
	last = now_ns();
	while (now_ns() - last < 1200000000LL)
		pause_ms(50);
	for (int r = 0; r < ROUNDS; r++) {
		if (r >= 3)
			free(a[r]);
		if (r >= 2)
			free(b[r]);
		if (r >= 1)
			free(c[r]);
	}
	return 0;
}
