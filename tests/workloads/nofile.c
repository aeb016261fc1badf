/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a host that runs near its RLIMIT_NOFILE.  After a first
 * phase of work, lowers the soft limit to 3 + ROOM (room for ROOM fds of
 * its own beside 0-2, as a program that knows what it uses), then opens
 * /dev/null until EMFILE (trying again after each EMFILE, 50 times 1 ms
 * apart: a descriptor someone else in the process holds for a moment, as
 * a profiler's thread reading /proc, comes back), keeps them open
 * while it burns CPU in nofile_burn and allocates in nofile_alloc, closes
 * them, burns again, and prints how many it could open.  The same count
 * bare and under a profiler that keeps no descriptor below the limit
 * (fds its caller left open count the same in both).
 * Usage: nofile ROOM [SECONDS]    (CPU seconds per phase, default 0.3)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

volatile unsigned long nf_sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void nofile_alloc(void)
{
	for (int i = 0; i < 2000; i++) {
		char *volatile p = malloc(256 + (size_t)i);

		if (p)
			p[0] = (char)i;
		free(p);
	}
}

__attribute__((noinline)) void nofile_burn(double seconds)
{
	double end = cpu_now() + seconds;

	/* A few MB allocated, far below KILN_HEAP's 1 GiB between dumps:
	 * a heap dump holds files of its own while it is written. */
	nofile_alloc();
	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			nf_sink += (unsigned long)i;
	nf_sink++;
}

int main(int argc, char **argv)
{
	int room = argc > 1 ? atoi(argv[1]) : 16, n = 0, fds[1024], tries;
	double s = argc > 2 ? atof(argv[2]) : 0.3;
	struct rlimit rl;

	if (room < 1 || room > 512)
		room = 16;
	nofile_burn(s);
	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		perror("nofile: getrlimit");
		return 1;
	}
	rl.rlim_cur = 3 + (rlim_t)room;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("nofile: setrlimit");
		return 1;
	}
	for (tries = 0; tries < 50 && n < 1024; ) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			fds[n++] = fd;
			continue;
		}
		if (errno != EMFILE) {
			perror("nofile: open");
			return 1;
		}
		tries++;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	nofile_burn(s);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	nofile_burn(s);
	printf("opened %d\n", n);
	return 0;
}
