/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: toggles its own CPU profile with signal SIG (CPUPROFILESIGNAL)
 * around 0.3 s of CPU in burn_toggle, then exits at once: the stop's
 * profile is written while the program is already on its way out.
 * Usage: toggleexit SIG
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) static void burn_toggle(void)
{
	struct timespec a, b;
	unsigned long x = sink;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < 0.3);
	sink = x;
}

int main(int argc, char **argv)
{
	int sig = argc > 1 ? atoi(argv[1]) : SIGUSR2;

	raise(sig);		/* start */
	burn_toggle();
	raise(sig);		/* stop: PATH.0 */
	printf("toggleexit: done\n");
	return 0;
}
