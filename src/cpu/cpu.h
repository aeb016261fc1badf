/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libkiln.so's CPU sampler (cpu stage), a part of the in-process runtime:
 * cpu.c arms per-thread CPU-time timers whose SIGPROF handler (sigprof.c)
 * unwinds the interrupted stack into a lock-free buffer; a collector
 * thread aggregates the stacks; a profile is built and symbolized only
 * when it is written (procprof.h).  wall.c samples every thread on a
 * wall-clock ticker; envprof.c acts on KILN_CPU/CPUPROFILE.  See
 * docs/agent.md.
 */
#ifndef KILN_CPU_CPU_H
#define KILN_CPU_CPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/altstack.h"
#include "runtime/forkgate.h"
#include "runtime/log.h"
#include "runtime/threads.h"

struct kiln_prof;

/* The sampling engine in use. */
enum kiln_sampler_engine {
	KILN_ENGINE_NONE,
	KILN_ENGINE_THREAD_TIMERS,	/* timer_create per thread (CPU time) */
	KILN_ENGINE_ITIMER,		/* setitimer(ITIMER_PROF), process-wide */
	KILN_ENGINE_WALL,		/* wall.c's ticker: every thread, wall time */
};

/* Frames a sample keeps. */
#define KILN_SAMPLER_MAX_DEPTH 125

/*
 * Starts a CPU profile at hz samples per CPU second, or with wall, hz
 * samples of every thread per second of wall-clock time, running or not
 * (sample type wall/nanoseconds, a `state` label: wall.c).  0, -EBUSY
 * (one is running), -EINVAL (bad hz), -EEXIST (the program has its own
 * SIGPROF handler: the agent steps aside), -errno.
 */
int kiln_sampler_begin(int hz, bool wall);

/*
 * Stops the profile and returns it, symbolized, with the sample types
 * samples/count and cpu/nanoseconds (wall/nanoseconds) (caller frees).
 * -ENOENT if none runs, -ENOMEM.
 */
int kiln_sampler_end(struct kiln_prof **out);

bool kiln_sampler_running(void);

/* Stops the profile and writes it to path (kiln_cpu_stop_write()).
 * 0 or -errno. */
int kiln_sampler_stop_write(const char *path);

/* The program installs a SIGPROF handler of its own (sigaction() or
 * signal(), interposed): CPU profiling stops, what was taken is written,
 * and kiln steps aside (envprof.c). */
void kiln_cpuenv_sigprof_claimed(void);
enum kiln_sampler_engine kiln_sampler_engine(void);

/*
 * Registers the calling thread and the fork handler; called once by the
 * library constructor (idempotent).
 */
void kiln_sampler_init(void);



/*
 * cpu.c: the calling thread set its own alternate stack, too small for a
 * sample (small) or not: its CPU timer is disarmed or armed again, wall
 * mode skips it or not.
 */
bool kiln_sampler_small_altstack(bool small);
/*
 * Stops CPU sampling for good, keeping what was taken (written as
 * usual): every timer deleted, the wall ticker ended, no thread armed or
 * given a stack from now on, no new profile started; why is logged and
 * put in the profile's comment.  seccomp.c calls it before the program
 * installs a seccomp filter.
 */
void kiln_sampler_freeze(const char *why);
/* Threads seen with too small an alternate stack of their own. */
uint64_t kiln_sampler_small_altstacks(void);

struct sigaction;
/* Whether act installs the agent's own SIGPROF handler. */
bool kiln_sampler_is_own_handler(const struct sigaction *act);


/* ---- wall-clock sampling (wall.c, fed into cpu.c's queue) ---- */

/* A wall sample's thread state (its `state` label); 0: a CPU sample. */
enum kiln_sampler_wall_state {
	KILN_WALL_RUNNING = 1,		/* R: on a CPU or ready for one */
	KILN_WALL_SLEEPING,		/* S */
	KILN_WALL_BLOCKED_IO,		/* D */
	KILN_WALL_OTHER,		/* stopped, traced, ... */
};

/* Starts (stops) the ticker thread: every thread sampled each period_ns
 * of wall-clock time.  0 or -errno. */
int kiln_sampler_wall_start(int64_t period_ns);
void kiln_sampler_wall_stop(void);

/* The bytes of a waiting thread's stack copied to unwind it. */
#define KILN_SAMPLER_COPY_BYTES 65536

/*
 * Calls fn(tid, state letter, ctx) for each live thread of the task
 * folder dir (/proc/self/task) but me and kiln's own; stops at fn's
 * first non-zero return, which it returns (or -errno).
 */
int kiln_sampler_each_thread(int dir, pid_t me,
			   int (*fn)(pid_t tid, char state, void *ctx), void *ctx);

/* The state letter of thread tid (R, S, D, ...) from the task folder
 * dir (/proc/self/task); 0 when it is gone. */
char kiln_sampler_thread_state(int dir, pid_t tid);
enum kiln_sampler_wall_state kiln_sampler_wall_state_of(char c);

/*
 * The stack of waiting thread tid of process pid, from outside it (the
 * sp and pc of /proc/self/task/TID/syscall, a copy of its stack into buf,
 * KILN_SAMPLER_COPY_BYTES): the number of frames stored in pcs
 * (KILN_SAMPLER_MAX_DEPTH), 0 when there is none to take, -1 when the
 * thread runs (it must be signalled instead).
 */
int kiln_sampler_unwind_waiting(int dir, pid_t pid, pid_t tid, uint64_t *buf,
			      uint64_t *pcs);

/*
 * Every thread's stack now, as a profile with one sample per thread
 * (sample type goroutine/count, as Go's goroutine profile; pid, thread,
 * thread_name and state labels), symbolized; kiln's own threads and the
 * calling thread are left out.  Running threads are interrupted by
 * SIGPROF for a moment (none where the program has its own SIGPROF
 * handler: their stacks are then empty); waiting ones are read from
 * outside.  0 or -errno.
 */
int kiln_sampler_snapshot(struct kiln_prof **out);

/*
 * SIGPROF queued to thread tid of process pid (rt_tgsigqueueinfo,
 * SI_QUEUE, this process as the sender, value as si_value): how the wall
 * ticker and the goroutine snapshot reach cpu.c's handler.  0 or -errno;
 * -EAGAIN, nothing sent, to one of kiln's threads or one on a small
 * alternate stack of its own (checked against its setting one, so that
 * no signal lands on such a stack).
 */
int kiln_sampler_sigprof_to(pid_t pid, pid_t tid, int value);

/* Whether tid is never signalled nor sampled: one of kiln's own
 * threads, or one whose own alternate stack is too small for a sample
 * (KILN_ALTSTACK_MIN). */
bool kiln_sampler_internal(pid_t tid);
/* Adds weight ns to what running thread tid's next wall sample (its
 * handler's) weighs; false for a thread of kiln's. */
bool kiln_sampler_owe(pid_t tid, uint64_t weight);
/* Queues a sample of thread tid taken outside it (weight in ns). */
void kiln_sampler_push(pid_t tid, enum kiln_sampler_wall_state state,
			 uint64_t weight, const uint64_t *pcs, int n);
/* Unwinds a copy of a waiting thread's stack (len bytes from sp) with
 * the sampler's CFI tables, building missing rows first. */
int kiln_sampler_unwind_copy(uint64_t pc, uint64_t sp, const void *copy,
			       size_t len, uint64_t *pcs, int max);

/* ---- hooks libkiln/life.c calls, in the order it states ---- */

void kiln_cpuenv_load(void);		/* envprof.c: CPU profile, signals */
void kiln_cpuenv_before_exit(void);	/* envprof.c: the CPU profile */
void kiln_cpuenv_before_exec(void);	/* envprof.c: the CPU profile */
void kiln_cpuenv_after_exec(void);	/* envprof.c: a failed exec: on again */
void kiln_cpuenv_before_setid(void);	/* envprof.c: privileges go: PATH held */
void kiln_sampler_fork_child(void);	/* cpu.c: no profile runs */
void kiln_cpuenv_fork_child(void);	/* envprof.c: the parent's files */
void kiln_cpuenv_fork_started(void);	/* envprof.c: fork() returned in the
					 * child: KILN_CPU_CHILDREN's profile */

#endif
