/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: calls memcmp through the PLT in a tight loop for SECONDS
 * (default 1) of CPU time, so that samples land in the PLT stub too,
 * which a profiler should name "memcmp@plt" as perf does.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile int sink;
char a[2] = "x", b[2] = "y";
volatile size_t len = 1;

__attribute__((noinline)) void compare_loop(void)
{
	int i, s = 0;

	for (i = 0; i < 100000; i++)
		s += memcmp(a, b, len);
	sink = s;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec ts;

	do {
		compare_loop();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < seconds);
	return 0;
}
