/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: burns CPU in before_exec_burn, then calls execv() on a path
 * that does not exist (the exec fails with ENOENT and returns), then
 * burns CPU in after_exec_burn and exits 0: the program goes on after a
 * failed exec, and so must its profile.  Prints the exec's error (errno
 * must reach the program as the C library set it).
 * Usage: execfail [SECONDS]   (CPU seconds per phase, default 0.3)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long ef_sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double seconds)
{
	double end = cpu_now() + seconds;

	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			ef_sink += (unsigned long)i;
}

__attribute__((noinline)) void before_exec_burn(double s)
{
	spin(s);
}

__attribute__((noinline)) void after_exec_burn(double s)
{
	spin(s);
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 0.3;
	char *args[] = { "kiln-no-such-program", NULL };

	before_exec_burn(s);
	execv("/nonexistent/kiln-no-such-program", args);
	printf("execv failed: %s\n", strerror(errno));
	fflush(stdout);
	after_exec_burn(s);
	return 0;
}
