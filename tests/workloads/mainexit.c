/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: the main thread ends with pthread_exit() while a worker burns
 * CPU in burn_worker; the process ends when the worker does (glibc's last
 * thread calls exit(0)), printing "mainexit: worker done".
 * Usage: mainexit [return|exit] [SECONDS]   how the worker ends (default
 * return from its start routine; exit: pthread_exit()), its CPU time
 * (default 0.2).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds = 0.2;
static int by_exit;
volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_worker(void)
{
	double t0 = cpu_now();
	unsigned long x = sink;

	while (cpu_now() - t0 < seconds)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

static void *worker(void *arg)
{
	(void)arg;
	burn_worker();
	printf("mainexit: worker done\n");
	fflush(stdout);
	if (by_exit)
		pthread_exit(NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	by_exit = argc > 1 && !strcmp(argv[1], "exit");
	if (argc > 2)
		seconds = atof(argv[2]);
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}
