/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: two named threads, "worker-a" in spin_a and "worker-b" in
 * spin_b, each burning CPU for SECONDS (default 1.5).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 1.5;
volatile unsigned long thread_sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin_a(void)
{
	double t0 = thread_cpu();

	while (thread_cpu() - t0 < seconds)
		for (int i = 0; i < 100000; i++)
			thread_sink += (unsigned long)i * 3;
}

__attribute__((noinline)) void spin_b(void)
{
	double t0 = thread_cpu();

	while (thread_cpu() - t0 < seconds)
		for (int i = 0; i < 100000; i++)
			thread_sink += (unsigned long)i * 5;
}

static void *run_a(void *arg)
{
	pthread_setname_np(pthread_self(), "worker-a");
	spin_a();
	return NULL;
}

static void *run_b(void *arg)
{
	pthread_setname_np(pthread_self(), "worker-b");
	spin_b();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_create(&a, NULL, run_a, NULL);
	pthread_create(&b, NULL, run_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
