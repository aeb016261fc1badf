/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload for counting tests, one behaviour per mode:
 *   statload cpu SECONDS      burn SECONDS of CPU time in burn (one thread)
 *   statload touch MIB        touch MIB of fresh pages, one write per 4 KiB
 *                             page (no transparent huge pages: one fault
 *                             per page)
 *   statload wake N           sleep 50 us and wake, N times
 *   statload threads N SECS   N threads, each burning SECS of CPU time
 *   statload exit CODE        exit with CODE
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

volatile unsigned long statload_sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn(double secs)
{
	double t0 = thread_cpu();

	while (thread_cpu() - t0 < secs)
		for (int i = 0; i < 100000; i++)
			statload_sink += (unsigned long)i * 7;
}

__attribute__((noinline)) void touch(size_t mib)
{
	size_t len = mib << 20, off;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, len, MADV_NOHUGEPAGE);
	for (off = 0; off < len; off += 4096)
		p[off] = 1;
	munmap(p, len);
}

__attribute__((noinline)) void wake(long n)
{
	struct timespec ts = { 0, 50000 };

	for (long i = 0; i < n; i++)
		nanosleep(&ts, NULL);
}

static double thread_secs;

static void *worker(void *arg)
{
	burn(thread_secs);
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "cpu";

	if (!strcmp(mode, "cpu")) {
		burn(argc > 2 ? atof(argv[2]) : 0.5);
	} else if (!strcmp(mode, "touch")) {
		touch(argc > 2 ? (size_t)atol(argv[2]) : 1024);
	} else if (!strcmp(mode, "wake")) {
		wake(argc > 2 ? atol(argv[2]) : 10000);
	} else if (!strcmp(mode, "threads")) {
		int n = argc > 2 ? atoi(argv[2]) : 8;
		pthread_t t[64];

		thread_secs = argc > 3 ? atof(argv[3]) : 0.2;
		if (n < 1 || n > 64)
			return 2;
		for (int i = 0; i < n; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	} else if (!strcmp(mode, "exit")) {
		return argc > 2 ? atoi(argv[2]) : 0;
	} else {
		fprintf(stderr, "statload: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
