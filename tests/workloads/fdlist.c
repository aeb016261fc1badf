/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: lists its own file descriptors, as a host sees what a library
 * in it holds.  Burns CPU in fdlist_burn and allocates in fdlist_alloc
 * first (so that a profiler in it has opened what it opens: its output,
 * the files it symbolizes from, its server's sockets), then reads
 * /proc/self/fd and each fd's flags from /proc/self/fdinfo.  Prints on
 * stdout the fds below FLOOR and the fds at or above FLOOR that a
 * program it execs would inherit (no O_CLOEXEC): the same bare and under
 * a profiler whose fds are all high and close-on-exec.  The whole list
 * (fd, flags, target) goes to stderr.
 * Usage: fdlist FLOOR [SECONDS]    (CPU seconds, default 0.5)
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long fl_sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void fdlist_burn(double seconds)
{
	double end = cpu_now() + seconds;

	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			fl_sink += (unsigned long)i;
	fl_sink++;
}

__attribute__((noinline)) void fdlist_alloc(void)
{
	for (int i = 0; i < 5000; i++) {
		char *volatile p = malloc(1024 + (size_t)i);

		if (p)
			p[0] = (char)i;
		free(p);
	}
}

/* The flags of fd (octal in fdinfo), or -1. */
static long fd_flags(int fd)
{
	char path[64], line[256];
	long flags = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags:", 6))
			flags = strtol(line + 6, NULL, 8);
	fclose(f);
	return flags;
}

int main(int argc, char **argv)
{
	int floor_ = argc > 1 ? atoi(argv[1]) : 64, n = 0, fds[4096];
	double s = argc > 2 ? atof(argv[2]) : 0.5;
	struct dirent *de;
	DIR *d;

	fdlist_alloc();
	fdlist_burn(s);
	fdlist_alloc();
	d = opendir("/proc/self/fd");
	if (!d) {
		perror("fdlist: /proc/self/fd");
		return 1;
	}
	while ((de = readdir(d)) && n < 4096) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd != dirfd(d))
			fds[n++] = fd;
	}
	closedir(d);
	printf("below %d:", floor_);
	for (int i = 0; i < n; i++)
		if (fds[i] < floor_)
			printf(" %d", fds[i]);
	printf("\ninherited at or above %d:", floor_);
	for (int i = 0; i < n; i++) {
		long fl = fd_flags(fds[i]);
		char path[64], target[512];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[i]);
		len = readlink(path, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = '\0';
		fprintf(stderr, "fd %d flags 0%lo %s\n", fds[i], fl, target);
		if (fds[i] >= floor_ && fl >= 0 && !(fl & O_CLOEXEC))
			printf(" %d", fds[i]);
	}
	printf("\n");
	return 0;
}
