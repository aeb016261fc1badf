/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload that runs until killed (tests of the heap tracer: a
 * SIGKILLed program leaves a readable trace).  hold() keeps 1000 blocks
 * of 1000 bytes; then churn() allocates and frees 100-byte blocks until
 * the process is killed (or 30 s pass).  Prints "ready" once hold() is
 * done and 200 ms have passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *keep[1000];
static volatile unsigned long sink;

__attribute__((noinline)) void hold(void)
{
	int i;

	for (i = 0; i < 1000; i++) {
		keep[i] = malloc(1000);
		sink += (unsigned long)keep[i] & 1;
	}
}

__attribute__((noinline)) void churn(void)
{
	void *p = malloc(100);

	sink += (unsigned long)p & 1;
	free(p);
}

int main(void)
{
	struct timespec nap = { 0, 1000000 }, t0, now;
	int i;

	hold();
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 100; i++)
			churn();
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 30);
	return 0;
}
