/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload that forks (tests of the heap tracer): the parent makes
 * 100 allocations of 200 bytes in parent_work() and frees them; the child
 * makes 300 of 300 bytes in child_work(), leaks 7 of them and exits
 * normally; its trace is PATH.PID, the parent's never has its events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep[300];
static volatile unsigned long sink;

__attribute__((noinline)) void parent_work(void)
{
	int i;

	for (i = 0; i < 100; i++)
		keep[i] = malloc(200);
	for (i = 0; i < 100; i++)
		free(keep[i]);
}

__attribute__((noinline)) void child_work(void)
{
	int i;

	for (i = 0; i < 300; i++)
		keep[i] = malloc(300);
	for (i = 7; i < 300; i++)
		free(keep[i]);
	sink += (unsigned long)keep[0] & 1;
}

int main(void)
{
	pid_t pid;
	int st = 0;

	parent_work();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_work();
		printf("heapfork: child done\n");
		exit(0);
	}
	waitpid(pid, &st, 0);
	printf("heapfork: parent done, child %d\n", WEXITSTATUS(st));
	return 0;
}
