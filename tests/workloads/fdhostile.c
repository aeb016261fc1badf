/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a host that treats file descriptors as daemons do, to check
 * that an in-process profiler never writes into, reads from or closes a
 * descriptor that has become the host's.  Output is deterministic, the
 * same with and without an agent.
 *
 *   fdhostile closeall DIR   closes fds 3..1023, opens 8 pipes and
 *                            DIR/log, allocates and burns CPU for ~0.6 s
 *                            while logging, then checks that each pipe
 *                            carries exactly its own bytes and that the
 *                            log holds exactly its own lines
 *   fdhostile stderr DIR     closes fd 2, opens DIR/data (it becomes fd
 *                            2), writes "data" to it and exits: the file
 *                            must hold that line only
 *   fdhostile term DIR       closes fds 3..1023, opens 8 pipes, forks a
 *                            watcher, burns CPU and dies of SIGTERM; the
 *                            watcher reports any byte that reached the
 *                            pipes (run it as `fdhostile term DIR | cat`
 *                            to wait for the watcher)
 *   fdhostile chroot DIR     changes root to DIR (an empty folder; needs
 *                            root), burns CPU and exits: outputs named
 *                            before are still written where they were
 *   fdhostile late DIR LIB   burns CPU until a descriptor of its own
 *                            executable is open (an agent's symbolizer
 *                            holds one; at most ~3 s), then does what
 *                            closeall does with a dlopen of LIB after
 *                            opening its pipes and log (a profiler that
 *                            drops its symbols when libraries change then
 *                            closes what it held: never the host's)
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NPIPES 8

static int pipes[NPIPES][2];
volatile unsigned long fd_sink;

static void close_all(void)
{
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
}

static void open_pipes(void)
{
	for (int i = 0; i < NPIPES; i++)
		if (pipe(pipes[i])) {
			perror("pipe");
			exit(1);
		}
}

/* CPU time of the calling thread, in ns: the process's (clock()) counts
 * the agent's threads too, whose start-up work could end the burn below
 * before this thread has run at all (t710 once got no sample). */
static long long thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) static void fd_work(int rounds, int logfd)
{
	for (int r = 0; r < rounds; r++) {
		struct timespec ts = { 0, 20000000 };
		long long c0 = thread_ns();
		void *keep[256];
		char line[64];
		int n;

		for (int i = 0; i < 256; i++)
			keep[i] = malloc((size_t)(i * 16 + 1));
		for (int i = 0; i < 256; i++)
			free(keep[i]);
		while (thread_ns() - c0 < 10000000)	/* 10 ms of this thread's CPU */
			fd_sink++;
		if (logfd >= 0) {
			n = snprintf(line, sizeof(line), "log line %d\n", r);
			if (write(logfd, line, (size_t)n) != n)
				exit(3);
		}
		nanosleep(&ts, NULL);
	}
}

/* Each pipe carries "ping N" and nothing else. */
static int check_pipes(void)
{
	int bad = 0;

	for (int i = 0; i < NPIPES; i++) {
		char want[16], got[64];
		int n = snprintf(want, sizeof(want), "ping %d", i);
		ssize_t r;

		if (write(pipes[i][1], want, (size_t)n) != n) {
			printf("pipe %d: write failed: %s\n", i, strerror(errno));
			bad++;
			continue;
		}
		fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
		r = read(pipes[i][0], got, sizeof(got));
		if (r != n || memcmp(got, want, (size_t)n)) {
			printf("pipe %d: read %zd bytes, not '%s'\n", i, r, want);
			bad++;
		}
	}
	return bad;
}

static int check_log(const char *path, int rounds)
{
	char buf[8192], want[8192];
	size_t wn = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	for (int r = 0; r < rounds; r++)
		wn += (size_t)snprintf(want + wn, sizeof(want) - wn, "log line %d\n", r);
	n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)wn || memcmp(buf, want, wn)) {
		printf("log: %zd bytes, want %zu: not only its own lines\n", n, wn);
		return 1;
	}
	return 0;
}

/* Whether a descriptor of this process names its own executable. */
static int exe_held(void)
{
	char exe[4096], link[4096], name[300];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct dirent *e;
	DIR *d;
	int held = 0;

	if (n <= 0 || !(d = opendir("/proc/self/fd")))
		return 0;
	exe[n] = '\0';
	while (!held && (e = readdir(d))) {
		ssize_t m;

		snprintf(name, sizeof(name), "/proc/self/fd/%s", e->d_name);
		m = readlink(name, link, sizeof(link) - 1);
		if (m > 0) {
			link[m] = '\0';
			held = !strcmp(link, exe);
		}
	}
	closedir(d);
	return held;
}

int main(int argc, char **argv)
{
	char path[4096];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: fdhostile closeall|stderr|term|chroot DIR | late DIR LIB\n");
		return 2;
	}
	if (!strcmp(argv[1], "closeall") ||
	    (!strcmp(argv[1], "late") && argc > 3)) {
		bool late = argv[1][0] == 'l';
		int logfd, bad;

		for (int i = 0; late && i < 100 && !exe_held(); i++)
			fd_work(1, -1);
		close_all();
		open_pipes();
		snprintf(path, sizeof(path), "%s/log", argv[2]);
		logfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (logfd < 0) {
			perror(path);
			return 1;
		}
		if (late && !dlopen(argv[3], RTLD_NOW)) {
			printf("late: %s\n", dlerror());
			return 1;
		}
		fd_work(30, logfd);
		bad = check_pipes() + check_log(path, 30);
		printf("%s: %s\n", argv[1], bad ? "damaged" : "pipes and log intact");
		return bad ? 1 : 0;
	}
	if (!strcmp(argv[1], "stderr")) {
		int fd;

		close(2);
		snprintf(path, sizeof(path), "%s/data", argv[2]);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != 2) {
			printf("stderr: the data file is fd %d\n", fd);
			return 1;
		}
		fd_work(5, -1);
		if (write(fd, "data\n", 5) != 5)
			return 1;
		printf("stderr: wrote data on fd 2\n");
		return 0;
	}
	if (!strcmp(argv[1], "term")) {
		int death[2];
		pid_t pid;

		close_all();
		open_pipes();
		if (pipe(death))
			return 1;
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			char c;
			long stray = 0;

			close(death[1]);
			/* EOF: the parent is gone (and so its agent). */
			while (read(death[0], &c, 1) > 0)
				;
			for (int i = 0; i < NPIPES; i++) {
				char buf[256];
				ssize_t r;

				close(pipes[i][1]);
				fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
				while ((r = read(pipes[i][0], buf, sizeof(buf))) > 0)
					stray += r;
			}
			printf("term: %ld stray bytes in the pipes\n", stray);
			_exit(0);
		}
		close(death[0]);
		fd_work(10, -1);
		raise(SIGTERM);
		return 0;
	}
	if (!strcmp(argv[1], "chroot")) {
		if (chdir(argv[2]) || chroot(".")) {
			printf("chroot: %s\n", strerror(errno));
			return 1;
		}
		fd_work(10, -1);
		printf("chroot: done\n");
		return 0;
	}
	fprintf(stderr, "fdhostile: unknown mode '%s'\n", argv[1]);
	return 2;
}
