/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: threads on small stacks.
 * Usage: smallstacks alt BYTES    4 threads each set an alternate signal
 *                                 stack of BYTES (guarded by canaries in
 *                                 the memory around it) and burn CPU in
 *                                 burn_small_alt
 *        smallstacks churn BYTES  400 short threads, 4 at a time, each
 *                                 on an alternate stack of BYTES for
 *                                 its 2 ms of CPU and its end
 *        smallstacks pending BYTES a thread blocks SIGPROF, burns until one
 *                                 is pending (wall mode's tick), sets an
 *                                 alternate stack of BYTES, unblocks it
 *                                 (exit 4: none came in 10 s of CPU)
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
static double burn_seconds = 0.5;
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
	burn(burn_seconds);
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

static void *pending_worker(void *arg)
{
	static unsigned char mem[65536];
	stack_t ss = { .ss_sp = mem, .ss_size = bytes, .ss_flags = 0 };
	sigset_t prof, pend;
	double t0 = cpu_now();

	(void)arg;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	do {
		burn(0.001);
		sigpending(&pend);
	} while (!sigismember(&pend, SIGPROF) && cpu_now() - t0 < 10);
	if (!sigismember(&pend, SIGPROF))
		exit(4);
	if (sigaltstack(&ss, NULL)) {
		perror("smallstacks: sigaltstack");
		exit(2);
	}
	pthread_sigmask(SIG_UNBLOCK, &prof, NULL);
	burn_small_alt();
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
	if (!strcmp(argv[1], "pending")) {
		burn_seconds = 0.05;
		if (pthread_create(&t[0], NULL, pending_worker, NULL))
			return 2;
		pthread_join(t[0], NULL);
		printf("smallstacks: done\n");
		return 0;
	}
	if (!strcmp(argv[1], "churn")) {
		/* The stack stays set to the thread's end (its memory is
		 * not freed: the kernel may still point at it). */
		burn_seconds = 0.002;
		for (n = 0; n < 100; n++) {
			for (i = 0; i < 4; i++)
				if (pthread_create(&t[i], NULL, alt_worker, NULL))
					return 2;
			for (i = 0; i < 4; i++)
				pthread_join(t[i], NULL);
		}
		printf("smallstacks: done\n");
		return 0;
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
