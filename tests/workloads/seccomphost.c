/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a program that installs a seccomp filter forbidding
 * timer_create (what a sandboxed server's allowlist does to a call it
 * never makes itself), then starts threads.
 * Usage: seccomphost prctl|syscall|raw kill|errno
 *   prctl: prctl(PR_SET_SECCOMP); syscall: syscall(SYS_seccomp), as
 *   libseccomp's seccomp_load() does; raw: the system call instruction
 *   itself (x86-64), which no interposer sees.  kill: the process is
 *   killed by a forbidden call (SECCOMP_RET_KILL_PROCESS); errno: it
 *   fails with EPERM.
 * Burns CPU in burn_before (0.3 s), then in two threads' burn_after
 * (0.3 s each; raw: 1.2 s, long enough for kiln to look at the threads
 * again); prints "seccomphost: done".
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void burn(double seconds)
{
	double t0 = cpu_now();
	unsigned long x = sink;

	while (cpu_now() - t0 < seconds)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) static void burn_before(void) { burn(0.3); }
static double after_s = 0.3;
__attribute__((noinline)) static void burn_after(void) { burn(after_s); }

/* seccomp(2) by the instruction: no libc function, no interposer. */
static long raw_seccomp(unsigned op, unsigned flags, void *args)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = 0;

	__asm__ volatile("syscall" : "=a"(ret)
			 : "0"((long)SYS_seccomp), "D"((long)op), "S"((long)flags),
			   "d"(args), "r"(r10)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	return syscall(SYS_seccomp, op, flags, args);
#endif
}

static void *worker(void *arg)
{
	(void)arg;
	burn_after();
	return NULL;
}

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_timer_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	pthread_t t[2];
	int i, rc;

	if (argc < 3)
		return 2;
	f[2].k = !strcmp(argv[2], "kill") ? SECCOMP_RET_KILL_PROCESS :
		 SECCOMP_RET_ERRNO | EPERM;
	burn_before();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return 2;
	if (!strcmp(argv[1], "prctl")) {
		rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	} else if (!strcmp(argv[1], "raw")) {
		after_s = 1.2;
		rc = (int)raw_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog);
	} else
		rc = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	if (rc) {
		perror("seccomphost: seccomp");
		return 2;
	}
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 2;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("seccomphost: done\n");
	return 0;
}
