/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the malloc hooks (hooks.c) and the trace writer
 * (trace.c) of the heap profiler (heap stage).  Everything a hook touches
 * is reserved with mmap before tracing starts or mmap'ed by the hook
 * itself: hooks never call the allocator, stdio or a mutex.
 *
 * The hooks are a library of their own, libkiln-malloc.so (the malloc
 * interposer), which needs libkiln.so; libkiln.so never needs it, so that
 * a process profiled without a heap profile has no kiln code on its
 * allocations (SPEC section 1).  What the hooks use of libkiln.so is
 * marked KHEAP_SHARED: exported, a private interface between two files of
 * one build (checked by KHEAP_ABI); what libkiln.so uses of the hooks is
 * the table struct kheap_interposer, found by name at start.
 */
#ifndef KILN_HEAP_HEAPINT_H
#define KILN_HEAP_HEAPINT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/guard.h"
#include "util/varint.h"
#include "unwind/cfi.h"

/* Exported by libkiln.so for libkiln-malloc.so only. */
#define KHEAP_SHARED __attribute__((visibility("default")))

#define KHEAP_RING (1u << 20)		/* bytes of events per thread */
#define KHEAP_WAKE (KHEAP_RING / 4)	/* pending bytes that wake the writer */
#define KHEAP_MAX_DEPTH 128		/* frames kept per stack */
#define KHEAP_MAX_REC 64		/* the longest event record */

/* Ring states. */
enum { KHEAP_FREE, KHEAP_OWNED, KHEAP_DEAD, KHEAP_ATTACHING };

/*
 * One thread's events: a single-producer (the thread), single-consumer
 * (the writer) byte ring of whole records, and the thread's sampling and
 * stack state.  mmap'ed, never freed; reused after its thread exited and
 * the writer drained it.
 */
struct kheap_thread {
	struct kheap_thread *next;	/* list of all rings; set once */
	_Atomic int state;		/* KHEAP_* */
	_Atomic uint32_t gen;		/* owners so far (the writer resyncs) */
	int tid;
	uint64_t t_base;		/* time of the generation's start */
	/* Producer side (the owning thread only). */
	_Atomic uint64_t head;
	/* The writer's tail as last read (<= tail): the hooks read the
	 * writer's cache line only when this says the ring nears the
	 * writer's wake-up mark (kheap_rec_start()). */
	uint64_t tail_seen;
	uint64_t last_ns;		/* time of the last record */
	uint64_t rng;			/* xorshift state */
	uint64_t stack_hi;		/* top of the thread's stack, 0: unknown */
	_Atomic uint64_t events, lost;
	char exit_name[16];		/* the thread's name when it ended */
	struct kiln_cfi_cache cfi_cache;	/* the unwinder's lookups */
	/* Recent call chains and their stack ids (kheap_frame_stack()):
	 * valid whichever thread owns the ring, since a chain is checked
	 * against the stack words themselves. */
	struct kiln_cfi_chains chains;
	char pad1[64];
	/* Consumer side (the writer). */
	_Atomic uint64_t tail;
	uint32_t w_gen;
	uint64_t w_last_ns, w_lost, w_name_ns;
	char w_name[20];
	char pad2[64];
	unsigned char data[KHEAP_RING];
};

/*
 * Re-entrancy: the allocation guard (runtime/guard.h), set while a hook
 * records and for good on kiln's own threads; a hook that finds it set
 * goes straight to the real allocator.
 */

/* Set while tracing (hooks record); cleared at exit and while forking. */
KHEAP_SHARED extern _Atomic bool kheap_on;
/* KILN_HEAP_SAMPLE: mean bytes between samples, 0: every allocation. */
KHEAP_SHARED extern uint64_t kheap_sample;

/*
 * The calling thread's ring, attached on first use (mmap, no malloc);
 * NULL when none can be had or after the thread's key destructor ran.
 * Hook context: caller holds the guard.
 */
KHEAP_SHARED struct kheap_thread *kheap_self(void);

/* CLOCK_MONOTONIC in ns (vDSO). */
KHEAP_SHARED uint64_t kheap_now(void);

/*
 * The clock of the events in the rings (clock.c): the TSC when the kernel
 * keeps CLOCK_MONOTONIC on it (the writer turns its counts into
 * CLOCK_MONOTONIC ns), else kheap_now().  Set before tracing starts.
 */
KHEAP_SHARED extern bool kheap_tsc;

/*
 * An event's time in the rings' clock.  The lfence keeps the read after
 * every load before it: a free's time is then after the allocation it
 * frees (whose pointer this thread loaded), an allocation's after the free
 * whose block the allocator handed back; without it the TSC may be read
 * before those loads complete.  The vDSO's clock_gettime() does the same
 * read behind a sequence counter and a scaling: 19 ns against 24 here.
 * Hook context.
 */
static inline uint64_t kheap_stamp(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(kheap_tsc, 1)) {
		uint32_t lo, hi;

		__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return kheap_now();
}

/*
 * Appends one encoded record to t's ring, waiting briefly for the writer
 * when the ring is full, else counting it lost.  false: lost (the caller
 * then keeps t->last_ns, so the next record's dt stays right).  Hook
 * context.
 */
KHEAP_SHARED bool kheap_put(struct kheap_thread *t, const unsigned char *rec, size_t len);

/*
 * Where the calling thread encodes its next record (at most KHEAP_MAX_REC
 * bytes) straight into its ring, then kheap_rec_end(): no copy, no store
 * the writer reads but the head.  NULL when the record must go through
 * kheap_put() instead: it would wrap around the ring's end, or the ring
 * may be near the writer's wake-up mark (or full) by what the thread
 * last saw of the writer's tail (kheap_put() reads the tail again, wakes
 * the writer, waits for room).  Hook context.
 */
static inline unsigned char *kheap_rec_start(struct kheap_thread *t)
{
	uint64_t h = atomic_load_explicit(&t->head, memory_order_relaxed);
	size_t at = (size_t)(h & (KHEAP_RING - 1));

	if (at > KHEAP_RING - KHEAP_MAX_REC ||
	    h + KHEAP_MAX_REC - t->tail_seen > KHEAP_WAKE)
		return NULL;
	return t->data + at;
}

/* Publishes the len bytes written at kheap_rec_start().  Hook context. */
static inline void kheap_rec_end(struct kheap_thread *t, size_t len)
{
	uint64_t h = atomic_load_explicit(&t->head, memory_order_relaxed);

	/* Below the wake-up mark: the writer need not be woken.  events:
	 * this thread's alone (a plain add, no locked instruction). */
	atomic_store_explicit(&t->head, h + len, memory_order_release);
	atomic_store_explicit(&t->events,
			      atomic_load_explicit(&t->events, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/*
 * Interns a stack (leaf first), returning its id (>= 2; id 1 is the empty
 * stack, also returned when the table is full).  Lock-free lookup, a spin
 * lock only to add a stack never seen.  Hook context.
 */
KHEAP_SHARED uint32_t kheap_stack_id(const uint64_t *pcs, int n);

/*
 * The stack id of the allocation whose hook's frame is given (its
 * __builtin_frame_address(0)): the stack starts at the return address
 * into the allocation function's caller.  A call chain seen before by
 * the thread, with the same return addresses on the stack, is found in
 * its chain cache without unwinding (unwind/cfi.h); otherwise the stack
 * is unwound (CFI, frame pointers where a module has no CFI) and
 * interned.  Hook context.
 */
KHEAP_SHARED uint32_t kheap_frame_stack(struct kheap_thread *t, void *frame);

/* Sampled-block set (sampling mode): add, and remove-if-present. */
KHEAP_SHARED bool kheap_sset_add(uint64_t ptr);
KHEAP_SHARED bool kheap_sset_del(uint64_t ptr);

/*
 * In front of the set, two bit filters: one bit per slot of addresses,
 * set while a sampled block lives at an address of its slot.  Every free
 * reads the first (512 bytes, so it stays in cache), the second (2 KiB)
 * only when the first says maybe, and only a set bit in both takes the
 * set's lock.  With few sampled blocks live (a heap of a few MiB at 512
 * KiB: about a dozen) a free costs one cached load, and one free in 300
 * goes on to the second (with a 512-bit first filter, one in 40: 1% of
 * a malloc-bound program's time); a gigabyte of live heap (2000 samples)
 * sends two frees in five past the first and one in eight to the set.
 * When every allocation is
 * traced the first filter is all ones (every free is recorded); before
 * tracing starts it is all zeros but for the pinned bits of the
 * bootstrap arena's blocks (kheap_ss_pin0()): the free hook reads only
 * it first.
 */
#define KHEAP_SS_BITS0 4096u
#define KHEAP_SS_BITS (1u << 14)
KHEAP_SHARED extern _Atomic uint64_t kheap_ss_bits0[KHEAP_SS_BITS0 / 64];
KHEAP_SHARED extern _Atomic uint64_t kheap_ss_bits[KHEAP_SS_BITS / 64];

static inline size_t kheap_ss_index0(uint64_t p)
{
	/* The address's low bits (allocators align blocks to 16): every
	 * free computes it, so it is kept to a shift and a mask. */
	return (size_t)(p >> 4) & (KHEAP_SS_BITS0 - 1);
}

static inline size_t kheap_ss_index(uint64_t p)
{
	return (size_t)((p >> 4) ^ (p >> 20)) & (KHEAP_SS_BITS - 1);
}

/* The first filter: false when a free of p needs no recording. */
static inline bool kheap_ss_maybe0(uint64_t p)
{
	size_t i = kheap_ss_index0(p);

	return atomic_load_explicit(&kheap_ss_bits0[i >> 6],
				    memory_order_relaxed) >> (i & 63) & 1;
}

/*
 * Sets p's first-filter bit for good, so that every free of p reaches
 * the hooks' slow path (a block of the bootstrap arena, which must never
 * reach the real free).  Hook context.
 */
KHEAP_SHARED void kheap_ss_pin0(uint64_t p);

/* Whether a sampled block may live at p.  Hook context. */
static inline bool kheap_ss_maybe(uint64_t p)
{
	size_t i;

	if (!kheap_ss_maybe0(p))
		return false;
	i = kheap_ss_index(p);
	return atomic_load_explicit(&kheap_ss_bits[i >> 6],
				    memory_order_relaxed) >> (i & 63) & 1;
}

/*
 * What libkiln.so needs of the malloc interposer, which exports it as
 * KHEAP_INTERPOSER_SYM: libkiln.so looks the name up (dlsym) when heap
 * profiling starts, and heap profiling is possible only when it is found.
 */
#define KHEAP_ABI 2
#define KHEAP_INTERPOSER_SYM "kiln_malloc_interposer"
struct kheap_interposer {
	uint32_t abi;			/* KHEAP_ABI of the build */
	/* Resolves the real allocator (dlsym) and returns the real malloc. */
	void *(*real_malloc)(void);
	/* Looks up jemalloc's extra entry points (mallocx...), if any. */
	void (*jemalloc_init)(void);
	/* Seeds a thread's sampling random numbers (each ring generation). */
	void (*sample_start)(struct kheap_thread *t, uint64_t seed);
};

/* Wakes the writer (futex), at most one syscall per writer round. */
void kheap_wake(void);

/*
 * The aggregate (agg.c), fed by the writer with its lock held, in time
 * order: an allocation, a free (with the freed block's size and stack);
 * reset in a child after fork; copy for a snapshot; the interval
 * callback.
 */
struct kiln_htrace_snap;
void kheap_agg_alloc(uint64_t size, uint32_t stack);
void kheap_agg_free(uint64_t size, uint32_t stack);
void kheap_agg_reset(void);
int kheap_agg_copy(struct kiln_htrace_snap *out);
void kheap_agg_interval(uint64_t bytes, void (*fn)(void));

/*
 * Encoding helpers for ring records: 'A' dt ptr size stack, 'F' dt ptr
 * (writer.c reads them): varints but for the address, 8 bytes as they
 * are (a 47-bit address is a 7-byte varint: a loop of 7 steps to write
 * and another to read, for one byte saved).
 */
static inline unsigned char *kheap_uv(unsigned char *p, uint64_t v)
{
	return p + kiln_varint_put(p, v);
}

static inline unsigned char *kheap_u64(unsigned char *p, uint64_t v)
{
	__builtin_memcpy(p, &v, sizeof(v));
	return p + sizeof(v);
}

#endif
