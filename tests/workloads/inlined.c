/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: CPU time spent in code inlined twice, to test inline frames.
 * outer_loop() (a real function) inlines mix_middle(), which inlines
 * mix_inner(); always_inline holds even under the -fno-inline that the
 * workloads are built with.  The markers in comments let tests find the
 * call lines in this file.
 * Usage: inlined [SECONDS]   (default 1)
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long
mix_inner(unsigned long x)
{
	return x * 6364136223846793005ul + 1442695040888963407ul; /* INNER-LINE */
}

static inline __attribute__((always_inline)) unsigned long
mix_middle(unsigned long x, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		x = mix_inner(x) ^ (x >> 7); /* CALL-INNER */
	return x;
}

__attribute__((noinline)) void outer_loop(unsigned long n)
{
	sink = mix_middle(sink, n); /* CALL-MIDDLE */
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double start = cpu_seconds();

	while (cpu_seconds() - start < seconds)
		outer_loop(1000000);
	return 0;
}
