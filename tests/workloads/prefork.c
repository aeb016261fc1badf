/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a pre-fork server in miniature (nginx's master and workers).
 *
 *   prefork [WORKERS [SECONDS]]        (defaults 3, 0.5)
 *
 * SECONDS 0: the workers burn until the master is gone (kill it), as a
 * server's workers serve until their master ends.
 *
 * PREFORK_SPAWN=N in the environment: the master first runs /bin/true N
 * times, each by fork() and exec (with an empty environment), waiting for
 * each, as a server that runs helpers does.  PREFORK_NEST=1: each worker
 * forks a child of its own that burns in prefork_work() too.
 *
 * The master forks WORKERS workers (fork() without exec, as nginx, the
 * postgres postmaster and gunicorn do) and waits for them in
 * master_wait(), using no CPU.  Each worker starts one thread that
 * burns SECONDS of its own CPU time in prefork_thread_work() while the
 * worker's first thread burns SECONDS in prefork_work(), then exits.
 * The master prints "worker PID" for each worker, then "done".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds = 0.5;
static pid_t master;	/* the process that forked this one */
volatile unsigned long prefork_sink;

/* Whether a worker goes on burning: for its SECONDS, or (0) while the
 * process that forked it lives. */
static int burning(double t0, double now)
{
	if (seconds == 0)
		return getppid() == master;
	return now - t0 < seconds;
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void prefork_work(void)
{
	double t0 = thread_cpu();

	while (burning(t0, thread_cpu()))
		for (int i = 0; i < 100000; i++)
			prefork_sink += (unsigned long)i * 3;
}

__attribute__((noinline)) void prefork_thread_work(void)
{
	double t0 = thread_cpu();

	while (burning(t0, thread_cpu()))
		for (int i = 0; i < 100000; i++)
			prefork_sink += (unsigned long)i * 5;
}

static void *worker_thread(void *arg)
{
	(void)arg;
	prefork_thread_work();
	return NULL;
}

static int worker(void)
{
	pthread_t t;

	/* PREFORK_NEST=1: the worker forks a child of its own first, which
	 * burns in prefork_work() too (while the worker lives). */
	if (getenv("PREFORK_NEST") && !strcmp(getenv("PREFORK_NEST"), "1")) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			master = getppid();
			prefork_work();
			_exit(0);
		}
	}
	if (pthread_create(&t, NULL, worker_thread, NULL))
		return 1;
	prefork_work();
	pthread_join(t, NULL);
	return 0;
}

__attribute__((noinline)) int master_wait(int n)
{
	int status, bad = 0;

	while (n-- > 0)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	return bad;
}

/* PREFORK_SPAWN's helpers: fork, exec, wait. */
static int spawn_helpers(int n)
{
	static char *const argv[] = { "true", NULL };
	static char *const envp[] = { NULL };
	int status;

	while (n-- > 0) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			execve("/bin/true", argv, envp);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, i;

	if (argc > 2)
		seconds = atof(argv[2]);
	master = getpid();
	if (n < 1 || seconds < 0) {
		fprintf(stderr, "usage: prefork [WORKERS [SECONDS]]\n");
		return 2;
	}
	if (getenv("PREFORK_SPAWN") && spawn_helpers(atoi(getenv("PREFORK_SPAWN")))) {
		fprintf(stderr, "prefork: a helper failed\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("prefork: fork");
			return 1;
		}
		if (pid == 0)
			exit(worker());
		printf("worker %d\n", (int)pid);
	}
	fflush(stdout);
	i = master_wait(n);
	printf("done\n");
	return i;
}
