/*
 * A program that installs a seccomp filter (agent): from then on any
 * system call kiln makes in that program's threads may be forbidden, and
 * a filter that kills on one (timer_create for a new thread's CPU timer,
 * sigaltstack for its signal stack, the wall ticker's signals) kills the
 * program.  kiln cannot read the filter, so it assumes the worst: the
 * moment before the program installs one, CPU sampling stops for good
 * (every timer deleted, the wall ticker ended, no new thread armed or
 * given a stack) while the samples taken so far are kept and written as
 * usual; the log and the profile's comment say so.
 *
 * The ways in: prctl(PR_SET_SECCOMP) and syscall(SYS_seccomp), which
 * libseccomp's seccomp_load() uses (glibc has no seccomp() wrapper).
 * Both are interposed; kiln's own syscall() calls pass through the second
 * (resolved at load, before any signal handler can run).
 */
#include <dlfcn.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"

typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long,
			unsigned long);
typedef long (*syscall_fn)(long, long, long, long, long, long, long);

static syscall_fn real_syscall;

/* Before the program can act: kiln's handlers call syscall() too. */
__attribute__((constructor)) static void resolve(void)
{
	if (!real_syscall)
		real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
}

static void filter_coming(unsigned long mode)
{
	if (mode == SECCOMP_MODE_FILTER || mode == SECCOMP_MODE_STRICT)
		kiln_agent_cpu_freeze("the program installs a seccomp filter");
}

__attribute__((visibility("default")))
int prctl(int option, ...)
{
	static prctl_fn real;
	unsigned long a[4];
	va_list ap;
	int i;

	va_start(ap, option);
	for (i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (!real)
		real = (prctl_fn)dlsym(RTLD_NEXT, "prctl");
	if (option == PR_SET_SECCOMP)
		filter_coming(a[0]);
	return real(option, a[0], a[1], a[2], a[3]);
}

/* glibc's syscall() takes six arguments after the number, whatever the
 * call: so does this one. */
__attribute__((visibility("default")))
long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_seccomp && (a[0] == SECCOMP_SET_MODE_FILTER ||
				 a[0] == SECCOMP_SET_MODE_STRICT))
		filter_coming(a[0] == SECCOMP_SET_MODE_FILTER ?
			      SECCOMP_MODE_FILTER : SECCOMP_MODE_STRICT);
	if (!real_syscall)
		resolve();
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
