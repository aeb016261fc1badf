/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: everything an in-process profiler must survive.  It forks,
 * execs, creates and joins 1000 threads, dlopens and dlcloses a library,
 * mallocs in tight loops while being sampled, and finally installs its own
 * SIGPROF handler and profiles itself with setitimer.  Its output is
 * deterministic: the same with and without an agent.
 * Usage: hostile LIBRARY
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t own_ticks;
volatile unsigned long h_sink;

static void *thread_fn(void *arg)
{
	unsigned long x = (unsigned long)arg, i;

	for (i = 0; i < 2000; i++)
		x = x * 6364136223846793005ul + 1;
	return (void *)(x & 0xff);
}

__attribute__((noinline)) static unsigned long malloc_storm(int rounds)
{
	unsigned long sum = 0;
	void *keep[64] = { 0 };

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 64; i++) {
			size_t sz = (size_t)((r * 64 + i) % 1024) + 1;

			free(keep[i]);
			keep[i] = malloc(sz);
			memset(keep[i], i, sz);
			sum += sz;
		}
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return sum;
}

static void on_prof(int sig)
{
	own_ticks++;
}

int main(int argc, char **argv)
{
	unsigned long total = 0;
	pthread_t t[1000];
	pid_t pid;
	int status, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: hostile LIBRARY\n");
		return 2;
	}
	/* fork: the child computes and exits with a known status. */
	pid = fork();
	if (pid == 0) {
		printf("child: %lu\n", malloc_storm(200));
		_exit(7);
	}
	waitpid(pid, &status, 0);
	printf("fork: child exited %d\n", WEXITSTATUS(status));
	/* exec */
	pid = fork();
	if (pid == 0) {
		execl("/bin/echo", "echo", "exec: hello from echo", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	printf("exec: status %d\n", WEXITSTATUS(status));
	/* 1000 threads */
	for (i = 0; i < 1000; i++)
		if (pthread_create(&t[i], NULL, thread_fn, (void *)(unsigned long)i)) {
			printf("threads: create failed at %d\n", i);
			return 1;
		}
	for (i = 0; i < 1000; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (unsigned long)r;
	}
	printf("threads: 1000 joined, sum %lu\n", total);
	/* dlopen / dlclose */
	for (i = 0; i < 20; i++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		void (*burn)(double);

		if (!h) {
			printf("dlopen failed: %s\n", dlerror());
			return 1;
		}
		burn = (void (*)(double))dlsym(h, "plugin_burn");
		burn(0.005);
		dlclose(h);
	}
	printf("dlopen: 20 rounds\n");
	/* malloc in tight loops */
	printf("malloc: %lu bytes\n", malloc_storm(20000));
	/* its own SIGPROF profiling */
	{
		struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
		struct itimerval zero = { { 0, 0 }, { 0, 0 } };
		clock_t c0;

		signal(SIGPROF, on_prof);
		setitimer(ITIMER_PROF, &it, NULL);
		/* 0.2 s of CPU from the timer's start: an agent that steps
		 * aside inside signal() writes its profile there, and that CPU
		 * time must not eat the whole period. */
		c0 = clock();
		while (clock() - c0 < CLOCKS_PER_SEC / 5)
			h_sink++;
		setitimer(ITIMER_PROF, &zero, NULL);
		printf("own SIGPROF: %s\n", own_ticks > 0 ? "ticked" : "silent");
	}
	printf("done\n");
	return 0;
}
