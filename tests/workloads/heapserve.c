/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a "server" that allocates while it runs, for the tests of the
 * heap profile endpoints and dumps (tests/e2e/t86*-heap-*.sh).  Start it
 * with libkiln.so preloaded and KILN_HTTP (or KILN_HEAP) set.
 *
 *   hold_cache   64 blocks of 65536 bytes, allocated at start and kept
 *                (4 MiB live all along)
 *   churn        blocks of 16384 bytes allocated and freed at once, about
 *                100 MB per second
 *   grow_leak    one block of 4096 bytes every 10 ms, never freed
 *
 * Prints "ready" once the cache is held, "leaked N" after the Nth
 * grow_leak (so that a test can wait for the leak to grow instead of
 * sleeping), then runs until SIGTERM or SIGINT, prints "done" and exits 0.
 *
 *   heapserve SECONDS      stops after SECONDS of wall time too
 *   heapserve --churn MB   stops once churn has allocated MB x 10^6 bytes
 *                          (an amount of work, whatever the load)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;
/* Volatile: the compiler may not drop a malloc/free pair it sees through. */
static void *volatile cache[64];
void *volatile serve_sink;

static void on_stop(int sig)
{
	stop = 1;
}

__attribute__((noinline)) void hold_cache(void)
{
	int i;

	for (i = 0; i < 64; i++) {
		cache[i] = malloc(65536);
		memset(cache[i], i, 65536);	/* really live */
	}
}

__attribute__((noinline)) void churn(void)
{
	serve_sink = malloc(16384);
	free(serve_sink);
}

__attribute__((noinline)) void grow_leak(void)
{
	serve_sink = malloc(4096);
}

int main(int argc, char **argv)
{
	struct timespec nap = { 0, 1000000 }, t0, now;
	double limit = 0, churn_limit = 0, churned = 0;
	int tick = 0, leaks = 0, i;

	if (argc > 2 && !strcmp(argv[1], "--churn"))
		churn_limit = atof(argv[2]) * 1e6;
	else if (argc > 1)
		limit = atof(argv[1]);

	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	hold_cache();
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		/* ~100 KB per ms: 100 MB/s */
		for (i = 0; i < 6; i++)
			churn();
		churned += 6 * 16384;
		if (churn_limit > 0 && churned >= churn_limit)
			break;
		nanosleep(&nap, NULL);
		if (++tick % 10 == 0) {
			grow_leak();
			/* stdout's buffer was allocated by "ready": no malloc here */
			printf("leaked %d\n", ++leaks);
			fflush(stdout);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (limit > 0 && (double)(now.tv_sec - t0.tv_sec) +
		    (double)(now.tv_nsec - t0.tv_nsec) * 1e-9 >= limit)
			break;
	}
	printf("done\n");
	return 0;
}
