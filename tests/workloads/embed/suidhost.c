/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host of the secure-execution test (t732): linked with -lkiln (libkiln.so
 * loaded as a dependency, its constructor run) and made set-user-ID root
 * by the test, then run by an unprivileged user.
 * Usage: suidhost [OUT]
 * Burns about 0.3 s of CPU time in burn(); with OUT, profiles itself
 * through the embedding API and writes OUT (the program's own call, which
 * secure execution keeps).  Prints "suidhost: uid=U euid=E done".
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <kiln/kiln.h>

volatile unsigned long sink;

__attribute__((noinline)) static void burn(double seconds)
{
	struct timespec a, b;
	unsigned long x = sink;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	sink = x;
}

int main(int argc, char **argv)
{
	int err;

	if (argc > 1 && (err = kiln_cpu_start(NULL))) {
		fprintf(stderr, "suidhost: kiln_cpu_start: %d\n", err);
		return 1;
	}
	burn(0.3);
	if (argc > 1 && (err = kiln_cpu_stop_write(argv[1]))) {
		fprintf(stderr, "suidhost: kiln_cpu_stop_write: %d\n", err);
		return 1;
	}
	printf("suidhost: uid=%d euid=%d done\n", (int)getuid(), (int)geteuid());
	return 0;
}
