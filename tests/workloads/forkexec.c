/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: forks; the child execs PROGRAM [ARGS...] while the parent burns
 * CPU in parent_burn until the child exits.
 * Usage: forkexec PROGRAM [ARGS...]
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long fe_sink;

__attribute__((noinline)) void parent_burn(void)
{
	for (int i = 0; i < 200000; i++)
		fe_sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
	pid_t pid;
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: forkexec PROGRAM [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		perror("execv");
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) == 0)
		parent_burn();
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
