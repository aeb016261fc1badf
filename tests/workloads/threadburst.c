/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: threads that keep starting while a profiler attaches (-p),
 * then burn a known amount of CPU each, measured by the program itself.
 *
 *   threadburst [CHAINS [LIVE [BURN_MS]]]     (defaults 4, 24, 100)
 *
 * CHAINS chains of threads named "burst": the newest thread of a chain
 * waits 1 ms and starts the next one, which does the same, so threads
 * start all the time, each started by a thread (not the main one).  Of
 * the threads started, the newest LIVE wait; older ones end.  On SIGUSR1
 * no more start, and each of the LIVE newest runs burst_work() for BURN_MS
 * of its own CPU time (CLOCK_THREAD_CPUTIME_ID); the program then prints
 * "cpu_ms X threads N process_ms P": X the CPU time the N threads
 * measured inside burst_work, the figure a profile attached before
 * SIGUSR1 must show, and P the whole process's CPU time so far.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static uint64_t started;	/* threads started so far (seq numbers) */
static uint64_t go_seq;		/* started at SIGUSR1; 0: not yet */
static unsigned live = 24;
static int burn_ms = 100;
static uint64_t done, cpu_ns;	/* burners finished, their CPU */
volatile unsigned long burst_sink;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Burns ms of this thread's CPU; returns the CPU time it measured. */
__attribute__((noinline)) uint64_t burst_work(int ms)
{
	uint64_t t0 = thread_ns(), t;

	do {
		for (int i = 0; i < 20000; i++)
			burst_sink += (unsigned long)i * 7;
		t = thread_ns();
	} while (t - t0 < (uint64_t)ms * 1000000ull);
	return t - t0;
}

static void *link_run(void *arg);

/* Starts the next thread of a chain; false once SIGUSR1 came (or no more
 * threads can start). */
static bool start_next(void)
{
	pthread_attr_t a;
	pthread_t t;
	uint64_t seq;
	bool ok = false;

	pthread_mutex_lock(&lock);
	if (!go_seq) {
		seq = ++started;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 256 * 1024);
		ok = !pthread_create(&t, &a, link_run, (void *)(uintptr_t)seq);
		pthread_attr_destroy(&a);
		if (!ok)
			started--;
		pthread_cond_broadcast(&cond);
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

static void *link_run(void *arg)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg, ns;
	struct timespec ms = { 0, 1000000 };
	bool burn;

	pthread_setname_np(pthread_self(), "burst");
	nanosleep(&ms, NULL);
	start_next();
	pthread_mutex_lock(&lock);
	/* Wait for SIGUSR1, or end once LIVE newer threads started. */
	while (!go_seq && started - seq < live)
		pthread_cond_wait(&cond, &lock);
	burn = go_seq && go_seq - seq < live;
	pthread_mutex_unlock(&lock);
	if (!burn)
		return NULL;
	ns = burst_work(burn_ms);
	pthread_mutex_lock(&lock);
	cpu_ns += ns;
	done++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	int chains = argc > 1 ? atoi(argv[1]) : 4, i, sig;
	uint64_t burners;
	sigset_t set;
	struct timespec now;

	if (argc > 2)
		live = (unsigned)atoi(argv[2]);
	if (argc > 3)
		burn_ms = atoi(argv[3]);
	if (chains < 1 || live < 1 || burn_ms < 1) {
		fprintf(stderr, "usage: threadburst [CHAINS [LIVE [BURN_MS]]]\n");
		return 2;
	}
	/* SIGUSR1 only for sigwait(), in every thread (they inherit it). */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < chains; i++)
		if (!start_next()) {
			perror("threadburst: pthread_create");
			return 1;
		}
	while (sigwait(&set, &sig))
		;
	pthread_mutex_lock(&lock);
	go_seq = started;
	burners = go_seq < live ? go_seq : live;
	pthread_cond_broadcast(&cond);
	while (done < burners)
		pthread_cond_wait(&cond, &lock);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	printf("cpu_ms %.3f threads %llu process_ms %.3f\n", (double)cpu_ns / 1e6,
	       (unsigned long long)burners,
	       (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6);
	fflush(stdout);
	pthread_mutex_unlock(&lock);
	return 0;
}
