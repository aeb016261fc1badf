/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload for the ASan-hosted agent loop (t711): forks 20 children while
 * its threads allocate and kiln's own threads (the CPU collector, a heap
 * writer) run; each child allocates in every size class and exits.  A
 * fork that copies an allocator lock held by another thread into the
 * child hangs that child's malloc (GCC 12's ASan allocator has no fork
 * protection).  Prints the same every run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;

static void *churn(void *arg)
{
	while (!stop) {
		void *p[64];

		for (int i = 0; i < 64; i++)
			p[i] = malloc((size_t)(i * 37 + 1));
		for (int i = 0; i < 64; i++)
			free(p[i]);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	int ok = 0;

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn, NULL);
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			for (size_t sz = 1; sz < (1 << 20); sz *= 2)
				free(malloc(sz));
			_exit(0);
		}
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    !WEXITSTATUS(st))
			ok++;
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("forks: %d of 20 children exited 0\n", ok);
	return 0;
}
