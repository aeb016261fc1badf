/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Alternate signal stacks for the SIGPROF handler (runtime stage).
 *
 * The handler is installed with SA_ONSTACK, so the kernel builds its frame
 * (and the handler runs) on the thread's alternate stack when it has one:
 * a thread running close to its stack limit (deep recursion, small
 * thread stacks, a language runtime's green stacks) is never pushed over
 * it by a sample.  A thread of the program that has no alternate stack
 * gets one of kiln's when it starts (or, started before kiln, when it
 * is first seen: the start of a profile, its first sample); one the
 * program set is left as it is, and the handler runs on that.  Kiln's
 * stack is unmapped when the thread ends, unless the program has replaced
 * it meanwhile.
 *
 * A program's own alternate stack may be tiny (MINSIGSTKSZ is 2 KiB):
 * the kernel's frame and the handler would overflow it into whatever
 * lies below (the program's heap), or the kernel kills the process with
 * SIGSEGV when its frame does not fit.  sigaltstack() is interposed: a
 * thread that sets one smaller than KILN_ALTSTACK_MIN is not signalled
 * while it has it (cpu.c, wall.c), and the handler drops a sample that
 * finds itself on such a stack anyway (set by a raw system call).
 *
 * kiln_rt_altstack_ensure() is async-signal-safe (sigaltstack and mmap
 * are plain system calls), so the handler may call it.  kiln's own calls
 * are system calls, never the interposer.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/altstack.h"

static int sys_sigaltstack(const stack_t *ss, stack_t *old)
{
	return (int)syscall(SYS_sigaltstack, ss, old);
}

/* Room for the kernel's frame (up to ~10 KiB with AVX-512 state), the
 * handler and the unwinder, many times over; only touched pages cost. */
#define ALT_SIZE (64 * 1024)
#define ALT_GUARD 4096

static __thread void *alt_mem __attribute__((tls_model("initial-exec")));
/* ensure() has looked once (kiln's installed, or the program's seen). */
static __thread bool alt_checked __attribute__((tls_model("initial-exec")));

bool kiln_rt_altstack_ensure(void)
{
	stack_t cur, ss;
	void *m;

	if (alt_checked)
		return true;
	if (sys_sigaltstack(NULL, &cur))
		return false;
	if (!(cur.ss_flags & SS_DISABLE)) {
		alt_checked = true;
		return true;	/* the program's own: used as it is */
	}
	m = mmap(NULL, ALT_SIZE + ALT_GUARD, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return false;
	/* A guard page below it: an overflow faults instead of writing
	 * into whatever lies there. */
	mprotect(m, ALT_GUARD, PROT_NONE);
	ss.ss_sp = (char *)m + ALT_GUARD;
	ss.ss_size = ALT_SIZE;
	ss.ss_flags = 0;
	if (sys_sigaltstack(&ss, NULL)) {
		munmap(m, ALT_SIZE + ALT_GUARD);
		return false;
	}
	alt_mem = m;
	alt_checked = true;
	return true;
}

void kiln_rt_altstack_release(void)
{
	stack_t cur, off = { .ss_flags = SS_DISABLE };
	void *m = alt_mem;
	bool ours;

	alt_checked = false;
	if (!m)
		return;
	alt_mem = NULL;
	if (sys_sigaltstack(NULL, &cur))
		return;
	ours = !(cur.ss_flags & SS_DISABLE) && cur.ss_sp == (char *)m + ALT_GUARD;
	if (ours && (cur.ss_flags & SS_ONSTACK))
		return;	/* running on it: leaked rather than pulled away */
	/* The program's own, if it set one since, is left alone. */
	if (ours)
		sys_sigaltstack(&off, NULL);
	munmap(m, ALT_SIZE + ALT_GUARD);
}

bool kiln_rt_altstack_short(size_t need)
{
	char here;
	uintptr_t sp = (uintptr_t)&here, lo = (uintptr_t)alt_mem + ALT_GUARD;
	stack_t cur;

	/* On kiln's own: room enough, no system call. */
	if (alt_mem && sp > lo && sp <= lo + ALT_SIZE)
		return false;
	if (sys_sigaltstack(NULL, &cur) || !(cur.ss_flags & SS_ONSTACK))
		return false;	/* the thread's own stack: not judged here */
	return sp < (uintptr_t)cur.ss_sp + need;
}

int kiln_rt_altstack_set(const stack_t *ss, stack_t *old)
{
	int rc = sys_sigaltstack(ss, old), err = errno;

	/* Looked at again by the next ensure(): the program's now, or
	 * none. */
	if (ss)
		alt_checked = false;
	errno = err;
	return rc;
}
