/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload that ends with _exit() (tests of the heap tracer): 1000
 * allocations of 100 bytes in exit_work(), kept, then _exit(0), which
 * runs no destructor.  With "fork", a forked child does that (a snapshot
 * child, say) and the parent waits for it and returns normally.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *heapexit_keep[1000];	/* global: the allocations are not optimized away */

__attribute__((noinline)) void exit_work(void)
{
	for (int i = 0; i < 1000; i++)
		heapexit_keep[i] = malloc(100);
}

int main(int argc, char **argv)
{
	int st = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			exit_work();
			_exit(0);
		}
		waitpid(pid, &st, 0);
		printf("child exited %d\n", WEXITSTATUS(st));
		return 0;
	}
	exit_work();
	printf("1000 blocks, then _exit\n");
	_exit(0);
}
