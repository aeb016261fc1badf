/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap tracer's internals inside libkiln.so (heap stage), shared by
 * its three files: ring.c (what the malloc hooks call, on the program's
 * threads: the per-thread event rings, the stack table, the sampled-block
 * set), writer.c (the writer thread: rings drained, frames compressed and
 * written) and trace.c (start, fork, exec, exit).  heapint.h is what
 * libkiln-malloc.so shares with them; this header is libkiln.so's alone.
 */
#ifndef KILN_HEAP_TRACEINT_H
#define KILN_HEAP_TRACEINT_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <link.h>
#include <zstd.h>

#include "format/heapenc.h"
#include "heap/heapint.h"
#include "runtime/kfd.h"
#include "util/buf.h"

#define FLUSH_NS 100000000ull		/* at most this long between frames */
#define FLUSH_RECORDS (1u << 18)	/* ... or this many records pending */
#define ST_SLOTS (1u << 19)		/* stack hash slots (power of two) */
#define ST_MAX (ST_SLOTS / 2)		/* stacks at most */
#define ST_CHUNK (1u << 19)		/* words per arena chunk (4 MiB) */
/*
 * The sampled-block table: 196 608 sampled blocks live at most (100 GiB
 * of live heap at the default 512 KiB).  It starts at 4096 slots (32 KiB,
 * 3072 blocks: 1.5 GiB of live heap) and grows four times over when three
 * quarters full: a program with a few MiB of live heap keeps a dozen
 * sampled blocks, and a 2 MiB table probed at random costs every sample
 * a cache and a TLB miss, besides 512 page faults at start (pages are
 * mapped populated: a page read before it is written costs a copy-on-write
 * fault, whose TLB flush interrupts every CPU the process runs on).
 */
#define SS_SLOTS (1u << 18)
#define SS_SLOTS0 (1u << 12)
#define SS_FILTER KHEAP_SS_BITS		/* blocks per bit of kheap_ss_bits */
/*
 * A full ring waits for the writer this long before it drops events:
 * exact traces need back-pressure (the hook holds no allocator lock
 * while it waits), but a writer that cannot write must not hang the
 * program.
 */
#define FULL_WAIT_NS 5000000000ull
#define ME_DEAD ((struct kheap_thread *)1)

/* ---- ring.c: the rings, the stack table, the sampled blocks ---- */

extern const struct kheap_interposer *kheap_malloc_lib;
extern char *kheap_trace_path;
extern struct kiln_kfd kheap_trace_kfd;
extern struct kiln_cfi *kheap_cfi;
extern uint64_t kheap_main_stack_hi;
extern pid_t kheap_main_tid;
extern pthread_key_t kheap_exit_key;
extern bool kheap_have_key;
extern _Atomic(struct kheap_thread *) kheap_rings;
extern const uint64_t **kheap_st_ent;
extern const uint64_t kheap_st_empty[2];
extern _Atomic uint32_t *kheap_st_slots;
extern _Atomic uint32_t kheap_st_count;
extern atomic_flag kheap_st_lock;
extern uint64_t *kheap_ss_slots;
extern size_t kheap_ss_cap;
extern uint32_t *kheap_ss_filter;
extern uint32_t kheap_ss_filter0[KHEAP_SS_BITS0];
extern uint64_t kheap_ss_pins0[KHEAP_SS_BITS0 / 64];
extern atomic_flag kheap_ss_lock;
extern __thread struct kheap_thread *kheap_me __attribute__((tls_model("initial-exec")));

/* pthread key destructor: the calling thread's ring is marked dead. */
void kheap_on_thread_exit(void *arg);
/* A new empty sampled-block table and its counts.  false: no memory. */
bool kheap_ss_map(void);
void *kheap_map_anon(size_t n);
void *kheap_map_table(size_t n);

/* ---- clock.c: the hooks' clock ---- */

/* Sets kheap_tsc (KILN_HEAP_CLOCK, the CPU, the kernel's clocksource)
 * before tracing starts; returns the clock's name. */
const char *kheap_clock_choose(void);
/* Both clocks read at one moment: the hooks' (kheap_stamp()) and
 * CLOCK_MONOTONIC ns (equal with the monotonic clock).  false: only a
 * loose pair could be had (the writer preempted between the reads). */
bool kheap_clock_pair(uint64_t *raw, uint64_t *ns);

/* ---- writer.c: the writer thread and the trace file ---- */

extern pthread_t kheap_writer;
extern bool kheap_writer_running;
extern pthread_mutex_t kheap_wlock;
extern _Atomic uint32_t kheap_wake_word;
extern _Atomic bool kheap_stalled;
extern _Atomic int kheap_finishing;
extern struct kiln_henc kheap_w_enc;
extern uint64_t kheap_w_dropped;
extern struct kiln_hcols kheap_w_ev;
extern uint32_t kheap_w_stacks;
extern uint64_t kheap_w_dl_gen;
extern bool kheap_w_maps_due;
extern uint64_t kheap_w_lost;
extern uint64_t kheap_w_last_flush;
extern uint64_t kheap_w_c_raw, kheap_w_c_ns;	/* the last clock pair */
extern bool kheap_w_c_drawn;
extern ZSTD_CCtx *kheap_w_zstd;
extern pid_t kheap_exit_tid;
extern _Atomic uint64_t kheap_st_written;
extern _Atomic uint64_t kheap_st_frames;
extern bool kheap_trace_on;
extern bool kheap_agg_on;
extern uint32_t kheap_agg_epoch;
extern bool kheap_w_nomem;

int kheap_dl_gen(struct dl_phdr_info *info, size_t size, void *arg);
void kheap_put_header(struct kiln_hcols *out);
void kheap_put_maps(struct kiln_hcols *out);
void kheap_ok(int err);
int kheap_write_frame(const struct kiln_buf *b);
void kheap_round(bool force, bool all, bool end);
void *kheap_write_loop(void *arg);

/* ---- preload.c: the interposer and the allocator ---- */

/* Says why the program's allocations are not seen (its own allocator). */
void kheap_check_allocator(void);
/* Says that heap profiling needs libkiln-malloc.so, and the LD_PRELOAD;
 * path: the trace's, NULL for a heap profile. */
void kheap_say_no_interposer(const char *path);
/* Says that libkiln.so is behind the C library, and the fix. */
void kheap_check_in_front(void);

/* ---- small helpers ---- */

static inline void kheap_lock(atomic_flag *f)
{
	while (atomic_flag_test_and_set_explicit(f, memory_order_acquire))
		sched_yield();
}

static inline void kheap_unlock(atomic_flag *f)
{
	atomic_flag_clear_explicit(f, memory_order_release);
}

static inline pid_t kheap_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

#endif
