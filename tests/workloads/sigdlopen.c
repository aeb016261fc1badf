/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a fatal signal while the dynamic loader's lock is held.  A
 * thread dlopens LIBRARY, whose constructor never returns (so dlopen
 * holds the loader's lock for ever); once it runs, the main thread
 * raises SIGTERM.  The program must die of SIGTERM: a fatal-signal
 * handler that calls dlsym (or anything taking that lock) hangs instead.
 * Usage: sigdlopen LIBRARY   (tests/workloads/plugins/stuckctor.c)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *lib;

static void *opener(void *arg)
{
	dlopen(lib, RTLD_NOW);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int p[2];
	char fd[16], c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: sigdlopen LIBRARY\n");
		return 2;
	}
	lib = argv[1];
	if (pipe(p))
		return 1;
	snprintf(fd, sizeof(fd), "%d", p[1]);
	setenv("STUCK_FD", fd, 1);
	if (pthread_create(&t, NULL, opener, NULL))
		return 1;
	if (read(p[0], &c, 1) != 1)
		return 1;
	printf("the loader's lock is held: SIGTERM\n");
	raise(SIGTERM);
	printf("still alive\n");
	return 0;
}
