/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: threads on small stacks.
 * Usage: smallstacks alt BYTES    4 threads each set an alternate signal
 *                                 stack of BYTES (guarded by canaries in
 *                                 the memory around it) and burn CPU in
 *                                 burn_small_alt
 *        smallstacks stack BYTES  a CPU hog (burn_hog) beside 16 threads
 *                                 with thread stacks of BYTES, sleeping
 *                                 and waking in nap_small_stack
 *        smallstacks blocked 0    a thread that blocks SIGPROF naps while
 *                                 the main thread burns, and is still
 *                                 there at exit
 * Prints "smallstacks: done" (exit 0), or what broke (exit 3).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CANARY 4096

static size_t bytes;
static volatile int stop;
volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(double seconds)
{
	double t0 = cpu_now();
	unsigned long x = sink;

	while (cpu_now() - t0 < seconds)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) static void burn_small_alt(void)
{
	burn(0.5);
}

static void *alt_worker(void *arg)
{
	unsigned char *mem = malloc(bytes + 2 * CANARY);
	stack_t ss = { .ss_sp = NULL, .ss_size = bytes, .ss_flags = 0 };
	size_t i;

	(void)arg;
	if (!mem)
		exit(2);
	memset(mem, 0xab, bytes + 2 * CANARY);
	ss.ss_sp = mem + CANARY;
	if (sigaltstack(&ss, NULL)) {
		perror("smallstacks: sigaltstack");
		exit(2);
	}
	burn_small_alt();
	for (i = 0; i < CANARY; i++)
		if (mem[i] != 0xab || mem[CANARY + bytes + i] != 0xab) {
			printf("smallstacks: memory around the alternate stack "
			       "written at %zu\n", i);
			exit(3);
		}
	return NULL;
}

__attribute__((noinline)) static void nap_small_stack(void)
{
	struct timespec ts = { 0, 1000000 };
	volatile char frame[512];

	frame[0] = 1;
	while (!stop) {
		nanosleep(&ts, NULL);
		sink += frame[0];
	}
}

static void *napper(void *arg)
{
	(void)arg;
	nap_small_stack();
	return NULL;
}

static void *blocker(void *arg)
{
	sigset_t s;

	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	nap_small_stack();
	return NULL;
}

__attribute__((noinline)) static void burn_hog(void)
{
	burn(1.0);
}

int main(int argc, char **argv)
{
	pthread_t t[16];
	pthread_attr_t a;
	int i, n;

	if (argc < 3)
		return 2;
	bytes = (size_t)atol(argv[2]);
	if (!strcmp(argv[1], "blocked")) {
		if (pthread_create(&t[0], NULL, blocker, NULL))
			return 2;
		burn_hog();
		printf("smallstacks: done\n");
		return 0;	/* the blocker still naps */
	}
	if (!strcmp(argv[1], "alt")) {
		for (i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, alt_worker, NULL))
				return 2;
		n = 4;
	} else {
		pthread_attr_init(&a);
		if (pthread_attr_setstacksize(&a, bytes))
			return 2;
		for (i = 0; i < 16; i++)
			if (pthread_create(&t[i], &a, napper, NULL))
				return 2;
		n = 16;
		burn_hog();
		stop = 1;
	}
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("smallstacks: done\n");
	return 0;
}
