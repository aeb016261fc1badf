/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: many short processes, as a build or a shell loop runs them.
 * Usage: shortprocs N MS
 * Forks N children one after the other; each burns MS milliseconds of
 * its own CPU in short_burn and exits; the parent only waits.  At kiln's
 * default 99 Hz a child of 4 ms runs less than one sampling period.
 * Prints "shortprocs: N children, X ms of their CPU" (their measure:
 * the children's utime + stime from getrusage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void short_burn(double s)
{
	double t0 = cpu_now();
	unsigned long x = sink;

	while (cpu_now() - t0 < s)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	double ms = argc > 2 ? atof(argv[2]) : 4;
	struct rusage ru;

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			short_burn(ms / 1000);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("shortprocs: %d children, %.0f ms of their CPU\n", n,
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
	return 0;
}
