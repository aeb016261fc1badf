/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Multi-threaded heap workload (tests of the heap tracer): 4 producer
 * threads each allocate 5000 blocks of 48 bytes in produce(); one consumer
 * thread frees them all in consume() (cross-thread frees); the main thread
 * leaks 3 blocks of 777 bytes in main_leak().  Threads are named
 * "producer-N" and "consumer".
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRODUCERS 4
#define PER 5000
#define QSIZE 1024

static void *queue[QSIZE];
static int qhead, qtail, produced_all;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static volatile unsigned long sink;

static void push(void *p)
{
	pthread_mutex_lock(&qlock);
	while ((qhead + 1) % QSIZE == qtail)
		pthread_cond_wait(&qcond, &qlock);
	queue[qhead] = p;
	qhead = (qhead + 1) % QSIZE;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
}

__attribute__((noinline)) void *produce(void *arg)
{
	char name[16];
	int i;

	snprintf(name, sizeof(name), "producer-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	for (i = 0; i < PER; i++) {
		char *p = malloc(48);

		memset(p, i, 48);
		push(p);
	}
	return NULL;
}

__attribute__((noinline)) void *consume(void *arg)
{
	long freed = 0;

	pthread_setname_np(pthread_self(), "consumer");
	pthread_mutex_lock(&qlock);
	for (;;) {
		while (qhead == qtail && !produced_all)
			pthread_cond_wait(&qcond, &qlock);
		if (qhead == qtail && produced_all)
			break;
		free(queue[qtail]);
		qtail = (qtail + 1) % QSIZE;
		freed++;
		pthread_cond_broadcast(&qcond);
	}
	pthread_mutex_unlock(&qlock);
	return (void *)freed;
}

__attribute__((noinline)) void main_leak(void)
{
	int i;

	for (i = 0; i < 3; i++)
		sink += (unsigned long)malloc(777) & 1;
}

int main(void)
{
	pthread_t prod[PRODUCERS], cons;
	void *freed;
	int i;

	pthread_create(&cons, NULL, consume, NULL);
	for (i = 0; i < PRODUCERS; i++)
		pthread_create(&prod[i], NULL, produce, (void *)(long)i);
	for (i = 0; i < PRODUCERS; i++)
		pthread_join(prod[i], NULL);
	pthread_mutex_lock(&qlock);
	produced_all = 1;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
	pthread_join(cons, &freed);
	main_leak();
	printf("heapthreads: freed %ld blocks\n", (long)freed);
	return 0;
}
