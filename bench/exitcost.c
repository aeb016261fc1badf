/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/exitcost.c: how long a program takes to be gone once it calls
 * exit(), for bench/agent-exit.sh (a profiler's exit cost: stopping,
 * symbolizing and writing its profile at exit).
 *
 * Runs COMMAND with its stdout on a pipe, waits for it (wait4), and reads
 * CLOCK_REALTIME as soon as wait4 returns.  The command prints, as the
 * last thing before returning from main, a line holding "end NS" (its own
 * CLOCK_REALTIME in ns: bench/mtloop.c does).  Prints one line:
 *   exit_us USER_S SYS_S STATUS
 * exit_us = microseconds from that "end" to the process being reaped
 * (-1 when no "end" was printed), then the child's user and system CPU
 * seconds (rusage) and its wait status.  A fork and a waitpid around the
 * command, no shell: `date` in a script costs a process start (about a
 * millisecond) on each side of what is measured.
 *
 * Usage: exitcost COMMAND [ARG...]   (the environment is passed through)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char out[1 << 16];
	size_t len = 0;
	struct rusage ru;
	struct timespec ts;
	int fds[2], status;
	long long end_ns = -1, gone_ns;
	pid_t pid;
	char *p;

	if (argc < 2) {
		fprintf(stderr, "usage: exitcost COMMAND [ARG...]\n");
		return 2;
	}
	if (pipe(fds))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], out + len, sizeof(out) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(out) - 1)
			len = 0;	/* keep the tail only */
	}
	out[len] = '\0';
	/* EOF came when the command closed its stdout, at exit: then the
	 * reaping, whose time is the end of what is measured. */
	if (wait4(pid, &status, 0, &ru) < 0)
		return 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	gone_ns = (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
	for (p = out; (p = strstr(p, "end ")); p += 4)
		end_ns = strtoll(p + 4, NULL, 10);
	printf("%lld %.4f %.4f %d\n", end_ns > 0 ? (gone_ns - end_ns) / 1000 : -1,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, status);
	fputs(out, stderr);
	return 0;
}
