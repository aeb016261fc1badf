/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a multi-threaded "server" for the in-process agent.  NTHREADS
 * workers (default 4) spend CPU in burn_a, burn_b and burn_c in the ratio
 * 60:30:10, each at the end of worker -> serve_X -> burn_X; burn_c's work
 * is a libc qsort, so libc frames appear too.  Runs until SIGTERM or
 * SIGINT, or for SECONDS if given.
 * Usage: cpuserver [NTHREADS [SECONDS]]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
volatile unsigned long srv_sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins for about `s` seconds of this thread's CPU time. */
__attribute__((noinline)) void burn_a(double s)
{
	double t0 = thread_cpu();
	unsigned long x = srv_sink;

	while (thread_cpu() - t0 < s)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	srv_sink = x;
}

__attribute__((noinline)) void burn_b(double s)
{
	double t0 = thread_cpu();
	unsigned long x = srv_sink;

	while (thread_cpu() - t0 < s)
		for (int i = 0; i < 2000; i++)
			x = x * 2862933555777941757ul + 3037000493ul;
	srv_sink = x;
}

static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

__attribute__((noinline)) void burn_c(double s)
{
	double t0 = thread_cpu();
	unsigned v[512];

	while (thread_cpu() - t0 < s) {
		for (int i = 0; i < 512; i++)
			v[i] = (unsigned)(i * 2654435761u) ^ (unsigned)srv_sink;
		qsort(v, 512, sizeof(v[0]), cmp);
		srv_sink += v[7];
	}
}

/*
 * Each request's length varies (0.5x to 1.5x, same mean), so that the
 * work has no period for a tick-driven sampler to lock onto.
 */
static double jitter(unsigned long *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return 0.5 + (double)(*state % 1000) / 1000.0;
}

__attribute__((noinline)) void serve_a(double j) { burn_a(0.006 * j); srv_sink++; }
__attribute__((noinline)) void serve_b(double j) { burn_b(0.003 * j); srv_sink++; }
__attribute__((noinline)) void serve_c(double j) { burn_c(0.001 * j); srv_sink++; }

static void *worker(void *arg)
{
	unsigned long state = 0x9e3779b97f4a7c15ul ^ (unsigned long)arg;

	while (!stop) {
		serve_a(jitter(&state));
		serve_b(jitter(&state));
		serve_c(jitter(&state));
	}
	return NULL;
}

static void on_stop(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	double secs = argc > 2 ? atof(argv[2]) : 0;
	pthread_t *t = calloc((size_t)n, sizeof(*t));

	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(unsigned long)(i + 1));
	printf("cpuserver: %d workers\n", n);
	fflush(stdout);
	if (secs > 0) {
		struct timespec ts = { (time_t)secs,
				       (long)((secs - (double)(time_t)secs) * 1e9) };

		nanosleep(&ts, NULL);
		stop = 1;
	} else {
		while (!stop)
			pause();
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("cpuserver: done\n");
	free(t);
	return 0;
}
