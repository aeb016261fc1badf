/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU sampler's shared state (cpu stage), between the sampler and
 * collector (cpu.c, normal context) and the SIGPROF handler (sigprof.c,
 * a file that holds the handler and what it calls, nothing else).  Only
 * those two files include it.
 */
#ifndef KILN_CPU_CPUINT_H
#define KILN_CPU_CPUINT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "runtime/threads.h"

/* Frames a sample keeps: a queue slot is then exactly 1 KiB. */
#define MAX_DEPTH KILN_SAMPLER_MAX_DEPTH
/*
 * Queue slots (a power of two).  The collector drains it when it fills
 * by a quarter and every 100 ms: 1024 slots hold 64 ms of samples at the
 * most CPU-time timers can give 64 busy threads (250 a second each);
 * beyond that samples are dropped and counted.  Kept small: every page
 * of it must be made present, which costs several microseconds a page
 * in a VM whose memory the host backs on first touch.
 */
#define RING_SLOTS 1024
#define RING_BYTES ((size_t)RING_SLOTS * 1024)

/* What the sampler keeps of a thread, beside its registry slot
 * (runtime/threads.h: same index). */
struct kcpu_slot {
	timer_t timer;
	_Atomic bool armed;
	_Atomic uint64_t owed;		/* wall ns of ticks its signal is for */
	/* SIGPROFs being sent to it now from other threads (wall ticker,
	 * snapshot): kiln_sampler_small_altstack() waits for them to land */
	_Atomic uint32_t sending;
	/* Its CPU timer could not be made (counted once: every scan of
	 * /proc tries again) */
	_Atomic bool timer_failed;
};

/*
 * A slot of the sample queue (Vyukov's bounded MPMC queue).  Its
 * sequence number is stored minus the slot's index, so that the queue
 * starts as all zeros: a fresh (populated) mmap needs no initialising
 * pass (4 MiB of slots written one by one cost a thousand page faults
 * at every start).
 */
struct rec {
	_Atomic uint64_t seq;		/* sequence - index of the slot */
	uint32_t tid;
	uint16_t n;
	uint8_t state;			/* enum kiln_sampler_wall_state */
	uint8_t pad;
	uint64_t weight;		/* samples; wall mode: nanoseconds */
	uint64_t pcs[MAX_DEPTH];
};
_Static_assert(sizeof(struct rec) == 1024,
	       "a queue slot is 1 KiB: every page holds the start of a slot "
	       "(populate_ring())");

/*
 * A snapshot of every thread's stack (kiln_sampler_snapshot(), Go's
 * goroutine endpoint): a running thread is sent SIGPROF with SNAP_MAGIC
 * and the snapshot's generation as the value, and its handler unwinds
 * into the next free record.  A record counts for the snapshot whose
 * generation it carries (a signal delivered after its snapshot gave up
 * waiting lands in none).
 */
#define SNAP_MAGIC 0x6b736e00u	/* "ksn" and a generation byte */
#define SNAP_MAX 512

struct snap_rec {
	_Atomic uint32_t gen;	/* 0: not filled */
	uint32_t tid;
	uint32_t n;
	uint64_t pcs[MAX_DEPTH];
};

/* ---- state: defined in cpu.c, written there under its locks ---- */

extern struct kcpu_slot kcpu_slots[KILN_RT_MAX_THREADS];
extern _Atomic bool kcpu_active;	/* samples are taken */
/*
 * Handlers running now (low 32 bits) and an epoch (high 32 bits).  A
 * handler leaves by a decrement only if the epoch is the one it entered
 * under: a handler the program jumped out of (its own SIGSEGV handler
 * siglongjmp'ing out of a fault taken inside ours) never leaves, and the
 * stop, after waiting a while for the count to drop, starts a new epoch
 * at 0 instead of waiting for ever.  The queue stays mapped for the life
 * of the process, so a handler still running then writes into valid
 * memory.
 */
extern _Atomic uint64_t kcpu_in_handler;
extern _Atomic uint64_t kcpu_dropped;	/* samples the full queue refused */
extern _Atomic uint64_t kcpu_short_stack;	/* dropped: no room on the stack */
extern bool kcpu_wall;			/* KILN_CPU_MODE=wall (wall.c ticks) */
extern pid_t kcpu_own_pid;		/* the process the profile runs in */
extern struct rec *kcpu_ring;		/* RING_SLOTS slots, mapped for good */
extern _Atomic uint64_t kcpu_enq_pos;
extern struct kiln_cfi *kcpu_cfi;	/* the unwinder's tables */
extern _Atomic uint32_t kcpu_collector_stop;	/* a futex word: 1 stops it */
extern struct snap_rec *kcpu_snaps;	/* mapped at the first snapshot, kept */
extern _Atomic uint32_t kcpu_snap_next;
extern _Atomic uint32_t kcpu_snap_gen;	/* the snapshot being taken, 0: none */
extern _Atomic bool kcpu_snap_unknown_top;	/* a stack top was not known yet */

static inline pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- cpu.c: the sampler, for collect.c and snapshot.c ---- */

/* The sampler's state lock (start, stop, snapshot). */
void kcpu_lock_state(void);
void kcpu_unlock_state(void);
/* Thread tid's registry slot, taken for it if it has none. */
struct kiln_rt_thread *kcpu_slot_for(pid_t tid);
/* ---- what the profile misses (missed.c) ---- */

/* The collector's scan of /proc/self/task for threads kiln did not see
 * start (kiln_rt_threads_scan()), counting what they ran before. */
void kcpu_scan_late(void);
void kcpu_missed_reset(void);			/* a profile starts */
void kcpu_missed_timer_refused(struct kcpu_slot *k);
void kcpu_missed_timer_made(struct kcpu_slot *k);
/* Thread tid was just armed (its CPU clock: what it ran before counts
 * when a late scan armed it). */
void kcpu_missed_armed(pid_t tid, clockid_t clock);
void kcpu_missed_ended(pid_t tid);		/* its exit step */
/* Appends to note (NUL-terminated, size bytes) what the ending profile
 * missed, each part after "; "; thread_timers: the per-thread engine. */
void kcpu_missed_note(char *note, size_t size, bool thread_timers);
/* The handler installed and the tables there (state lock held): false
 * where the program has a SIGPROF handler of its own. */
bool kcpu_handler_ready(void);

/* ---- collect.c: the collector and the profile's end ---- */

struct kiln_prof;
struct kiln_sym;
/* A new aggregate for a profile at period ns per sample (wall: sample
 * type wall/nanoseconds).  0 or -ENOMEM. */
int kcpu_collect_open(int period_ns, bool wall);
/* Whether an aggregate is open (a profile runs or is being ended). */
bool kcpu_collect_opened(void);
/* Starts the collector thread (after open).  0 or -EAGAIN. */
int kcpu_collect_start(void);
/* Stops the collector at once (it drains a last time) and joins it. */
void kcpu_collect_stop(void);
/* The aggregate, the caller's now; the collector's tables emptied. */
struct kiln_prof *kcpu_collect_take(void);
/* Frees an open aggregate (a start that failed). */
void kcpu_collect_close(void);
void kcpu_collect_fork_child(void);
/* Drains the queue into the aggregate (collector, or stop once joined). */
void kcpu_drain(void);
/* Sample stacks whose top was not known get it (the handler's sp). */
void kcpu_resolve_stacks(void);
/* The labels of thread tid's samples in state (0: none) in p: pid,
 * thread, thread_name, state, into l.  Returns how many (at most 4). */
struct kiln_label;
uint32_t kcpu_thread_labels(struct kiln_prof *p, uint32_t tid, uint8_t state,
			    struct kiln_label *l);
/* raw with mappings and symbols, as *out (caller frees), through the
 * session with (NULL: one of its own); _warm: the collector's warm one. */
int kcpu_finish(struct kiln_prof *raw, struct kiln_prof **out,
		struct kiln_sym *with);
int kcpu_finish_warm(struct kiln_prof *raw, struct kiln_prof **out);

/* ---- snapshot.c ---- */

void kcpu_snapshot_fork_child(void);

/* ---- wall.c ---- */

/* In a fork child: the copy of the parent's /proc/PID/task folder, which
 * its ticker (not in the child) read, closed. */
void kcpu_wall_fork_child(void);

/* ---- sigprof.c: async-signal-safe ---- */

/* Wakes the collector before its period ends. */
void kcpu_wake_collector(void *arg);
/* Queues a sample; false when the queue is full. */
bool kcpu_ring_push(uint32_t tid, uint8_t state, uint64_t weight,
		    const uint64_t *pcs, int n);
/* The SIGPROF handler (SA_SIGINFO | SA_ONSTACK | SA_RESTART). */
void kcpu_on_sigprof(int sig, siginfo_t *si, void *ucv);

#endif
