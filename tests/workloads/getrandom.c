/* Workload: calls getrandom(2) in a loop from rand_loop for SECONDS (1). */
#include <stdlib.h>
#include <sys/random.h>
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

int main(int argc, char **argv)
{
	rand_loop(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
