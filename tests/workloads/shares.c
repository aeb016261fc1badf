/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: spends about 60% / 30% / 10% of its CPU time in burn_a,
 * burn_b and burn_c, each at the end of a chain
 * main -> run -> stage_X -> burn_X.
 * Usage: shares [SECONDS]   (default 2)
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void burn_a(unsigned long n)
{
	unsigned long i, x = sink;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void burn_b(unsigned long n)
{
	unsigned long i, x = sink;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void burn_c(unsigned long n)
{
	unsigned long i, x = sink;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void stage_a(unsigned long n) { burn_a(n * 6); sink++; }
__attribute__((noinline)) void stage_b(unsigned long n) { burn_b(n * 3); sink++; }
__attribute__((noinline)) void stage_c(unsigned long n) { burn_c(n); sink++; }

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run(double seconds)
{
	double start = cpu_seconds();

	while (cpu_seconds() - start < seconds) {
		stage_a(200000);
		stage_b(200000);
		stage_c(200000);
	}
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 2.0);
	return 0;
}
