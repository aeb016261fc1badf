/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: calls getrandom(2) in a loop from rand_loop for SECONDS (1);
 * or, with "-n", exactly 2000 times from rand_many and 500 times from
 * rand_few (and nothing else of its own), for counting tests; "-n FILE"
 * first waits (sleeping, no getrandom) until FILE exists, so that a test
 * can start the burst while the recorder is stopped.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <time.h>

__attribute__((noinline)) void rand_loop(double s)
{
	struct timespec a, b;
	char buf[16];

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000; i++)
			if (getrandom(buf, sizeof(buf), 0) < 0)
				abort();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < s);
}

__attribute__((noinline)) void rand_calls(int n)
{
	char buf[16];

	for (int i = 0; i < n; i++)
		if (getrandom(buf, sizeof(buf), 0) < 0)
			abort();
}

__attribute__((noinline)) void rand_many(void)
{
	rand_calls(2000);
}

__attribute__((noinline)) void rand_few(void)
{
	rand_calls(500);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "-n")) {
		struct timespec ms = { 0, 1000000 };

		while (argc > 2 && access(argv[2], F_OK))
			nanosleep(&ms, NULL);
		rand_many();
		rand_few();
		return 0;
	}
	rand_loop(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
