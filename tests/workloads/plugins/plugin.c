/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library for the dlopen workload: plugin_burn burns CPU. */
#include <time.h>

volatile unsigned long plugin_sink;

__attribute__((noinline)) static void plugin_inner(void)
{
	for (int i = 0; i < 10000; i++)
		plugin_sink += (unsigned long)i * 7;
}

void plugin_burn(double s)
{
	struct timespec ts;
	double t0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	t0 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	for (;;) {
		plugin_inner();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - t0 >= s)
			break;
	}
}
