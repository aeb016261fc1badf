/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a thread made by a raw clone() (no pthread_create, as some
 * runtimes and sandboxes make theirs), which the agent's pthread_create
 * interposer never sees.  Usage: rawclone SECONDS
 * The raw thread burns SECONDS of its own CPU in raw_burn, then waits;
 * main burns SECONDS in main_burn, then ends the process (exit) while
 * the raw thread still waits: the profile is written with it alive.
 * Prints "rawclone: done".
 */

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define STACK (256 * 1024)

volatile unsigned long sink;
static double seconds;
static volatile int burnt;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double s)
{
	double t0 = cpu_now();
	unsigned long x = sink;

	while (cpu_now() - t0 < s)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void raw_burn(void)
{
	spin(seconds);
}

__attribute__((noinline)) void main_burn(void)
{
	spin(seconds);
}

/* The raw thread: no TLS of its own (glibc's would be the parent's),
 * so only system calls and plain code. */
static int raw_thread(void *arg)
{
	(void)arg;
	raw_burn();
	__atomic_store_n(&burnt, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &burnt, FUTEX_WAKE, 1, NULL, NULL, 0);
	for (;;)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	char *stack;

	seconds = argc > 1 ? atof(argv[1]) : 0.5;
	stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return 1;
	if (clone(raw_thread, stack + STACK, CLONE_VM | CLONE_FS | CLONE_FILES |
		  CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, NULL) < 0) {
		perror("clone");
		return 1;
	}
	main_burn();
	while (!__atomic_load_n(&burnt, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &burnt, FUTEX_WAIT, 0, NULL, NULL, 0);
	printf("rawclone: done\n");
	fflush(stdout);
	exit(0);
}
