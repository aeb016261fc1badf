/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fork gate (runtime stage, forkgate.c): kiln's threads idle across
 * the program's fork(), so that a child never inherits a lock held by a
 * thread that does not exist there.
 */
#ifndef KILN_RUNTIME_FORKGATE_H
#define KILN_RUNTIME_FORKGATE_H

#include <sys/types.h>

/*
 * A kiln thread's work that may allocate (or take a lock a forked child
 * would need) runs between these two: a fork() of the program waits for
 * every such section to end (2 s at most, then forks anyway) and holds
 * new ones back until it is done, so that the child never inherits a lock
 * held by a thread that does not exist there (see fork.c).  Sections of
 * several threads count; not for signal handlers; never call fork()
 * inside one.
 */
void kiln_rt_busy_begin(void);
void kiln_rt_busy_end(void);

/* Registers the fork gate's handlers; called by kiln_sampler_init(). */
void kiln_rt_gate_init(void);

/* The pthread_atfork triple's part (libkiln/life.c): kiln's threads idle
 * before the copy, released after it, reset in the child. */
void kiln_rt_gate_prepare(void);
void kiln_rt_gate_parent(void);
void kiln_rt_gate_child(void);

/* Around the program's fork() (libkiln's interposer): the gate closed
 * before the copy, opened in the parent after it (reset in the child by
 * kiln_rt_gate_child()). */
void kiln_rt_fork_enter(void);
void kiln_rt_fork_leave(pid_t pid);

#endif
