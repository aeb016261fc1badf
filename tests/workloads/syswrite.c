/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: spends its CPU time partly in user code (burn) and partly in
 * the kernel, writing small blocks to /dev/null from write_loop, until
 * SECONDS of CPU time (default 2) are used.  At exit it prints the CPU
 * time each part took, measured around it with the thread's CPU clock:
 * "burn B write W", the reality a profile's shares must match.
 * Usage: syswrite [SECONDS]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) void burn(unsigned long n)
{
	unsigned long i, x = sink;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void write_loop(int fd, int n)
{
	static char block[64];
	int i;

	for (i = 0; i < n; i++)
		if (write(fd, block, sizeof(block)) < 0)
			exit(1);
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int fd = open("/dev/null", O_WRONLY);
	double b = 0, w = 0, t0, t1, t2;

	if (fd < 0)
		return 1;
	do {
		t0 = cpu_now();
		burn(2000000);
		t1 = cpu_now();
		write_loop(fd, 5000);
		t2 = cpu_now();
		b += t1 - t0;
		w += t2 - t1;
	} while (b + w < seconds);
	printf("burn %.3f write %.3f\n", b, w);
	return 0;
}
