/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap workload that execs (tests of the heap tracer, t811): the pid stays,
 * the image changes, and every image's allocations must be found.
 *
 *   heapexec execv    first_image() (300 x 100 bytes, kept), then
 *                     execv() of itself: second_image() (500 x 200, kept)
 *   heapexec execl    the same through execl()
 *   heapexec chain    three images: first, second, third_image()
 *                     (700 x 50, kept)
 *   heapexec fexecve  as chain, image 1 -> 2 by fexecve() of an fd of
 *                     /proc/self/exe, 2 -> 3 by execveat() (glibc's
 *                     call the system call itself)
 *   heapexec fork     a forked child makes child_before() (100 x 10,
 *                     kept), then execs second_image(); the parent waits
 *   heapexec wait F   as execv, but image 1 waits for file F to exist
 *                     before it execs (a test lets kiln heap open the
 *                     trace first)
 *
 * The stage is the last argument (the image's number), given by the image
 * before.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void *heapexec_keep[700];	/* global: the allocations are not optimized away */

__attribute__((noinline)) void first_image(void)
{
	for (int i = 0; i < 300; i++)
		heapexec_keep[i] = malloc(100);
}

__attribute__((noinline)) void second_image(void)
{
	for (int i = 0; i < 500; i++)
		heapexec_keep[i] = malloc(200);
}

__attribute__((noinline)) void third_image(void)
{
	for (int i = 0; i < 700; i++)
		heapexec_keep[i] = malloc(50);
}

__attribute__((noinline)) void child_before(void)
{
	for (int i = 0; i < 100; i++)
		heapexec_keep[i] = malloc(10);
}

/* Execs this program as image stage (file: wait mode's F). */
static void next(const char *argv0, const char *mode, const char *file,
		 const char *stage)
{
	char *args[] = { (char *)argv0, (char *)mode, (char *)(file ? file : stage),
			 (char *)(file ? stage : NULL), NULL };

	if (!strcmp(mode, "execl")) {
		execl("/proc/self/exe", argv0, mode, stage, (char *)NULL);
	} else if (!strcmp(mode, "fexecve") && !strcmp(stage, "2")) {
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

		if (fd >= 0)
			fexecve(fd, args, environ);
	} else if (!strcmp(mode, "fexecve")) {
		execveat(AT_FDCWD, "/proc/self/exe", args, environ, 0);
	} else
		execv("/proc/self/exe", args);
	perror("exec");
	exit(1);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "execv";
	/* "wait F STAGE": the stage comes after F. */
	const char *file = !strcmp(mode, "wait") && argc > 2 ? argv[2] : NULL;
	int at = file ? 3 : 2;
	int stage = argc > at ? atoi(argv[at]) : 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (stage == 1 && !strcmp(mode, "fork")) {
		int st = 0;
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			child_before();
			next(argv[0], mode, NULL, "2");
		}
		waitpid(pid, &st, 0);
		printf("child exited %d\n", WEXITSTATUS(st));
		return 0;
	}
	if (stage == 1) {
		first_image();
		printf("image 1: 300 blocks of 100\n");
		if (file) {
			struct timespec nap = { 0, 10000000 };

			while (access(file, F_OK))
				nanosleep(&nap, NULL);
		}
		next(argv[0], mode, file, "2");
	}
	if (stage == 2) {
		second_image();
		printf("image 2: 500 blocks of 200\n");
		if (!strcmp(mode, "chain") || !strcmp(mode, "fexecve"))
			next(argv[0], mode, NULL, "3");
		return 0;
	}
	third_image();
	printf("image 3: 700 blocks of 50\n");
	return 0;
}
