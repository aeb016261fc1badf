/*
 * Alternate signal stacks for the SIGPROF handler (agent stage).
 *
 * The handler is installed with SA_ONSTACK, so the kernel builds its frame
 * (and the handler runs) on the thread's alternate stack when it has one:
 * a thread running close to its stack limit (deep recursion, small
 * thread stacks, a language runtime's green stacks) is never pushed over
 * it by a sample.  A thread of the program that has no alternate stack
 * gets one of kiln's when it is first seen (its start, the start of a
 * profile, or its first sample); one the program set is left as it is,
 * and the handler runs on that.  Kiln's stack is unmapped when the thread
 * ends, unless the program has replaced it meanwhile.
 *
 * kiln_agent_altstack_ensure() is async-signal-safe (sigaltstack and mmap
 * are plain system calls), so the handler may call it.
 */
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>

#include "agent/agent.h"

/* Room for the kernel's frame (up to ~10 KiB with AVX-512 state), the
 * handler and the unwinder, many times over; only touched pages cost. */
#define ALT_SIZE (64 * 1024)
#define ALT_GUARD 4096

static __thread void *alt_mem __attribute__((tls_model("initial-exec")));
/* ensure() has looked once (kiln's installed, or the program's seen). */
static __thread bool alt_checked __attribute__((tls_model("initial-exec")));

bool kiln_agent_altstack_ensure(void)
{
	stack_t cur, ss;
	void *m;

	if (alt_checked)
		return true;
	if (sigaltstack(NULL, &cur))
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
	if (sigaltstack(&ss, NULL)) {
		munmap(m, ALT_SIZE + ALT_GUARD);
		return false;
	}
	alt_mem = m;
	alt_checked = true;
	return true;
}

void kiln_agent_altstack_release(void)
{
	stack_t cur, off = { .ss_flags = SS_DISABLE };
	void *m = alt_mem;
	bool ours;

	alt_checked = false;
	if (!m)
		return;
	alt_mem = NULL;
	if (sigaltstack(NULL, &cur))
		return;
	ours = !(cur.ss_flags & SS_DISABLE) && cur.ss_sp == (char *)m + ALT_GUARD;
	if (ours && (cur.ss_flags & SS_ONSTACK))
		return;	/* running on it: leaked rather than pulled away */
	/* The program's own, if it set one since, is left alone. */
	if (ours)
		sigaltstack(&off, NULL);
	munmap(m, ALT_SIZE + ALT_GUARD);
}
