/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload for off-CPU recording at many context switches: two threads
 * hand a turn to each other ROUNDS times through a mutex and a condition
 * variable (pthread_cond_wait: several libc frames without frame pointers
 * above the futex system call), each waiting in its own function, ping_wait
 * and pong_wait, reached through DEPTH frames of deep (about 256 bytes of
 * stack each: the waits sit deeper than a short stack copy reaches).  Every
 * round is two context switches at least.  Then the main thread sleeps
 * four times 20 ms in snooze at the same depth (nanosleep and
 * clock_nanosleep: two libc frames that keep the caller's frame pointer).
 * It prints
 *     rounds N pid PID
 * Usage: switches ROUNDS [DEPTH]   (DEPTH default 24)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;		/* 0: ping's, 1: pong's */
static long rounds;

__attribute__((noinline)) static void ping_wait(void)
{
	while (turn != 0)
		pthread_cond_wait(&cv, &mu);
}

__attribute__((noinline)) static void pong_wait(void)
{
	while (turn != 1)
		pthread_cond_wait(&cv, &mu);
}

/* The loop of one side, me 0 (ping) or 1 (pong). */
__attribute__((noinline)) static void play(int me)
{
	long i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < rounds; i++) {
		if (me)
			pong_wait();
		else
			ping_wait();
		turn = !me;
		pthread_cond_signal(&cv);
	}
	pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void snooze(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int i;

	for (i = 0; i < 4; i++)
		nanosleep(&ts, NULL);
}

/* DEPTH frames of about 256 bytes, then the loop (me 2: snooze). */
__attribute__((noinline)) static int deep(int depth, int me)
{
	volatile char pad[240];

	pad[0] = (char)depth;
	if (depth > 0)
		return deep(depth - 1, me) + pad[0];
	if (me == 2)
		snooze();
	else
		play(me);
	return pad[0];
}

static int depth = 24;

static void *pong(void *arg)
{
	(void)arg;
	deep(depth, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2 || (rounds = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: switches ROUNDS [DEPTH]\n");
		return 2;
	}
	if (argc > 2)
		depth = atoi(argv[2]);
	if (pthread_create(&t, NULL, pong, NULL))
		return 1;
	deep(depth, 0);		/* ping's last turn hands pong its last */
	pthread_join(t, NULL);
	deep(depth, 2);
	printf("rounds %ld pid %d\n", rounds, (int)getpid());
	return 0;
}
