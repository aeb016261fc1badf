/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload for off-CPU and wall profiles: the main thread burns 0.5 s of
 * CPU in burn, sleeps 1 s in nap and waits 0.5 s on a pipe in wait_pipe
 * (a feeder thread writes to it after 0.5 s).  It prints what it measured
 * itself, so that a test can compare a profile with the times that really
 * passed on a loaded machine:
 *     burn_cpu S burn_wall S nap S wait S total S pid PID
 * (seconds: burn's CPU time and wall time, nap's and wait_pipe's wall
 * time, and the main thread's wall time from main's start to its end).
 * Usage: offcpu [SCALE]   (every duration times SCALE, default 1)
 *
 * offcpu pair: two threads at once for 1 s of wall time each, "napper"
 * sleeping in nap (ten nanosleep calls of 100 ms, not retried: a signal
 * that ended one early is counted) and "burner" on the CPU in burn; it
 * prints  pair nap S burn S eintr N pid PID
 */
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static int fds[2];
static double scale = 1.0;

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts))
		;
}

/* Runs on the CPU for `seconds` of this thread's CPU time (of wall
 * time in pair mode). */
static clockid_t burn_clock = CLOCK_THREAD_CPUTIME_ID;

__attribute__((noinline)) void burn(double seconds)
{
	double start = now(burn_clock);
	unsigned long x = sink;

	while (now(burn_clock) - start < seconds) {
		int i;

		for (i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	}
	sink = x;
}

__attribute__((noinline)) void nap(double seconds)
{
	sleep_s(seconds);
	sink++;
}

__attribute__((noinline)) void *feeder(void *arg)
{
	char c = 'x';

	sleep_s(*(double *)arg);
	if (write(fds[1], &c, 1) != 1)
		abort();
	return NULL;
}

/* Blocks in read() until the feeder thread writes, `seconds` from now. */
__attribute__((noinline)) void wait_pipe(double seconds)
{
	pthread_t t;
	char c;

	if (pthread_create(&t, NULL, feeder, &seconds))
		abort();
	if (read(fds[0], &c, 1) != 1)
		abort();
	pthread_join(t, NULL);
	sink++;
}

static int eintr;
static double pair_nap, pair_burn;

/* Ten 100 ms sleeps, each not retried. */
__attribute__((noinline)) void nap_once(void)
{
	struct timespec ts = { 0, 100000000 };
	int i;

	for (i = 0; i < 10; i++)
		if (nanosleep(&ts, NULL) && errno == EINTR)
			eintr++;
	sink++;
}

static void *napper(void *arg)
{
	double t = now(CLOCK_MONOTONIC);

	(void)arg;
	pthread_setname_np(pthread_self(), "napper");
	nap_once();
	pair_nap = now(CLOCK_MONOTONIC) - t;
	return NULL;
}

static void *burner(void *arg)
{
	double t = now(CLOCK_MONOTONIC);

	(void)arg;
	pthread_setname_np(pthread_self(), "burner");
	burn(1.0);
	pair_burn = now(CLOCK_MONOTONIC) - t;
	return NULL;
}

static int pair(void)
{
	pthread_t a, b;

	burn_clock = CLOCK_MONOTONIC;
	if (pthread_create(&a, NULL, napper, NULL) || pthread_create(&b, NULL, burner, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("pair nap %.6f burn %.6f eintr %d pid %d\n", pair_nap, pair_burn,
	       eintr, (int)getpid());
	return 0;
}

int main(int argc, char **argv)
{
	double t0 = now(CLOCK_MONOTONIC), c0, b, n, w;

	if (argc > 1 && !strcmp(argv[1], "pair"))
		return pair();
	if (argc > 1)
		scale = atof(argv[1]);
	if (pipe(fds))
		return 1;
	c0 = now(CLOCK_THREAD_CPUTIME_ID);
	b = now(CLOCK_MONOTONIC);
	burn(0.5 * scale);
	c0 = now(CLOCK_THREAD_CPUTIME_ID) - c0;
	b = now(CLOCK_MONOTONIC) - b;
	n = now(CLOCK_MONOTONIC);
	nap(1.0 * scale);
	n = now(CLOCK_MONOTONIC) - n;
	w = now(CLOCK_MONOTONIC);
	wait_pipe(0.5 * scale);
	w = now(CLOCK_MONOTONIC) - w;
	printf("burn_cpu %.6f burn_wall %.6f nap %.6f wait %.6f total %.6f "
	       "pid %d\n", c0, b, n, w, now(CLOCK_MONOTONIC) - t0, (int)getpid());
	return 0;
}
