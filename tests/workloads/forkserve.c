/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a process-per-connection server in miniature (postgres'
 * backends, inetd, CGI): each "request" is served by a child that fork()
 * makes, names itself "conn" and burns MS milliseconds of its own CPU
 * time in conn_work() before it exits; the parent waits for it and
 * serves the next.
 *
 *   forkserve [REQUESTS [MS]]      (defaults 100, 5; REQUESTS 0: until
 *                                   SIGTERM or SIGINT)
 *
 * Prints "child PID" for each request served, then "served N" and the
 * requests per second of wall-clock time ("rate R").
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
volatile unsigned long conn_sink;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void conn_work(double ms)
{
	double t0 = now(CLOCK_THREAD_CPUTIME_ID);

	while (now(CLOCK_THREAD_CPUTIME_ID) - t0 < ms / 1e3)
		for (int i = 0; i < 10000; i++)
			conn_sink += (unsigned long)i * 3;
}

int main(int argc, char **argv)
{
	long requests = argc > 1 ? atol(argv[1]) : 100, n;
	double ms = argc > 2 ? atof(argv[2]) : 5, t0;

	if (requests < 0 || ms < 0) {
		fprintf(stderr, "usage: forkserve [REQUESTS [MS]]\n");
		return 2;
	}
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	t0 = now(CLOCK_MONOTONIC);
	for (n = 0; !stop && (!requests || n < requests); n++) {
		pid_t pid;
		int status;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("forkserve: fork");
			return 1;
		}
		if (pid == 0) {
			prctl(PR_SET_NAME, "conn");
			conn_work(ms);
			_exit(0);
		}
		printf("child %d\n", (int)pid);
		while (waitpid(pid, &status, 0) < 0)
			;
	}
	printf("served %ld\nrate %.1f\n", n, n / (now(CLOCK_MONOTONIC) - t0));
	return 0;
}
