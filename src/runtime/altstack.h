/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's alternate signal stacks (runtime stage, altstack.c).
 */
#ifndef KILN_RUNTIME_ALTSTACK_H
#define KILN_RUNTIME_ALTSTACK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Gives the calling thread an alternate signal stack of kiln's if it has
 * none (one the program set is kept); false if it could not.
 * Async-signal-safe.  kiln_rt_altstack_release() unmaps kiln's when
 * the thread ends (the program's is never touched).  altstack.c.
 */
bool kiln_rt_altstack_ensure(void);
void kiln_rt_altstack_release(void);

/*
 * The least alternate stack a thread of the program may have and still
 * be signalled for samples: the kernel's frame (up to ~11 KiB with
 * AVX-512 and AMX state), the handler and the unwinder.  A thread that
 * sets a smaller one (sigaltstack(), interposed) is not sampled while it
 * has it.
 */
#define KILN_ALTSTACK_MIN (32 * 1024)
/*
 * Whether the handler runs on an alternate stack with less than `need`
 * bytes left below it (the program's, set behind sigaltstack()'s
 * interposer): the sample is then dropped.  Async-signal-safe.
 */
bool kiln_rt_altstack_short(size_t need);

/* The program's sigaltstack(), made (the system call, errno kept);
 * kiln's judgement of the thread's stack is renewed.  */
int kiln_rt_altstack_set(const stack_t *ss, stack_t *old);

#endif
