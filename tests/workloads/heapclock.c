/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload for the trace's times (t814): two threads each make 400
 * allocations of sizes no other allocation has (100000 + 1000 * thread +
 * i), reading CLOCK_MONOTONIC just before and just after each, and sleep
 * 2 ms every 20 allocations so that the run spans many writer rounds.
 * Each thread's blocks are freed by the other thread at the end
 * (cross-thread frees).  Prints "A SIZE BEFORE_NS AFTER_NS" per
 * allocation, to a file given as argv[1] (stdout stays the same with
 * and without the agent).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 2
#define PER 400

struct rec {
	size_t size;
	uint64_t t0, t1;
	void *p;
};

static struct rec recs[THREADS][PER];

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void *timed(void *arg)
{
	int th = (int)(intptr_t)arg;
	struct timespec nap = { 0, 2000000 };

	for (int i = 0; i < PER; i++) {
		struct rec *r = &recs[th][i];

		r->size = 100000 + 1000 * (size_t)th + (size_t)i;
		r->t0 = mono();
		r->p = malloc(r->size);
		r->t1 = mono();
		if (!r->p)
			abort();
		((volatile char *)r->p)[0] = 1;
		if (i % 20 == 19)
			nanosleep(&nap, NULL);
	}
	return NULL;
}

__attribute__((noinline)) static void *free_other(void *arg)
{
	int th = (int)(intptr_t)arg;

	for (int i = 0; i < PER; i++)
		free(recs[th][i].p);
	return NULL;
}

static void run(void *(*fn)(void *), int swap)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)(intptr_t)(swap ? THREADS - 1 - i : i)))
			abort();
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: heapclock OUT\n");
		return 2;
	}
	run(timed, 0);
	run(free_other, 1);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	for (int th = 0; th < THREADS; th++)
		for (int i = 0; i < PER; i++)
			fprintf(f, "A %zu %llu %llu\n", recs[th][i].size,
				(unsigned long long)recs[th][i].t0,
				(unsigned long long)recs[th][i].t1);
	fclose(f);
	printf("heapclock done\n");
	return 0;
}
