/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: two phases one after the other on the main thread: first
 * phase_a (which calls burn_a) for half the time, then phase_b (which
 * calls burn_b) for the other half, so that a stack chart shows every
 * phase_a sample before every phase_b sample.  CPU time is measured with
 * the thread's CPU clock, so a loaded machine stretches the phases but
 * keeps their order and shares.
 * Usage: twophase [SECONDS]   (default 1; each phase half of it)
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
}

__attribute__((noinline)) void phase_a(double secs)
{
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		burn_a(20000);
}

__attribute__((noinline)) void phase_b(double secs)
{
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		burn_b(20000);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;

	phase_a(secs / 2);
	phase_b(secs / 2);
	return 0;
}
