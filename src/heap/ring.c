/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap tracer's hook context (heap stage): what the malloc hooks of
 * libkiln-malloc.so call on the program's threads -- the calling thread's
 * event ring (single producer, single consumer, lock-free; the writer
 * woken with a futex once a quarter of the ring is pending), the
 * process-wide stack table, the set of sampled blocks.  Nothing here
 * blocks but a full ring's bounded wait for the writer; nothing
 * allocates with the hooked malloc.  See trace.c and docs/heap.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "runtime/env.h"
#include "runtime/kfd.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "unwind/cfi.h"
#include "heap/htrace.h"
#include "heap/heapint.h"
#include "heap/traceint.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"
#include "runtime/log.h"
#include "runtime/threads.h"


/*
 * What every hook reads, on cache lines of their own: nothing written
 * often may share them (another core's write would evict them from the
 * hooks' caches).
 */
_Alignas(64) _Atomic bool kheap_on;
uint64_t kheap_sample;
bool kheap_tsc;
_Alignas(64) _Atomic uint64_t kheap_ss_bits0[KHEAP_SS_BITS0 / 64];
_Alignas(64) _Atomic uint64_t kheap_ss_bits[KHEAP_SS_BITS / 64];
/*
 * The malloc interposer (libkiln-malloc.so), once found: NULL when it is
 * not loaded, and then heap profiling cannot start (find_interposer()).
 */
const struct kheap_interposer *kheap_malloc_lib;
struct kiln_cfi *kheap_cfi;
uint64_t kheap_main_stack_hi;
pid_t kheap_main_tid;
pthread_key_t kheap_exit_key;
bool kheap_have_key;
_Atomic(struct kheap_thread *) kheap_rings;
/*
 * Stack table: entries [hash, depth, pcs...] in arena chunks mmap'ed as
 * needed (under st_lock); st_ent[id] points at stack id's entry.
 */
static uint64_t *kheap_st_chunk;		/* the chunk being filled */
static size_t kheap_st_used;			/* words used in it */
const uint64_t **kheap_st_ent;
const uint64_t kheap_st_empty[2];	/* stack 1: no frame */
_Atomic uint32_t *kheap_st_slots;
_Atomic uint32_t kheap_st_count;	/* ids 1..st_count are published */
atomic_flag kheap_st_lock = ATOMIC_FLAG_INIT;
/* Sampled blocks: exact table under a spin lock, counters in front. */
uint64_t *kheap_ss_slots;
size_t kheap_ss_cap;			/* slots (power of two) */
static size_t kheap_ss_count;
uint32_t *kheap_ss_filter;		/* under ss_lock */
uint32_t kheap_ss_filter0[KHEAP_SS_BITS0];	/* under ss_lock */
/* First-filter bits set for good: the bootstrap arena's blocks. */
uint64_t kheap_ss_pins0[KHEAP_SS_BITS0 / 64];	/* under ss_lock */
atomic_flag kheap_ss_lock = ATOMIC_FLAG_INIT;
__thread struct kheap_thread *kheap_me __attribute__((tls_model("initial-exec")));

uint64_t kheap_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *kheap_map_anon(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * kheap_map_anon() for a hash table probed at random: its pages are allocated
 * writable at once.  A page of a plain mapping that a probe reads first
 * gets the shared zero page, and the write that follows replaces it:
 * a copy-on-write fault that flushes the TLB of every CPU running the
 * program (an inter-processor interrupt each; in a VM, tens of
 * microseconds of the program's threads per page, 1% of a malloc-bound
 * program's time in sampling mode).
 */
void *kheap_map_table(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- thread rings ---- */

void kheap_on_thread_exit(void *arg)
{
	struct kheap_thread *t = arg;

	if (t && t != ME_DEAD && kheap_me == t) {
		/* Short-lived threads are gone before the writer looks. */
		if (prctl(PR_GET_NAME, t->exit_name))
			t->exit_name[0] = '\0';
		kheap_me = ME_DEAD;	/* later frees of this thread: untraced */
		atomic_store_explicit(&t->state, KHEAP_DEAD, memory_order_release);
	}
}

static uint64_t stack_top(pid_t tid)
{
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo, hi;
	uint64_t self = (uint64_t)pthread_self();

	if (tid == kheap_main_tid && kheap_main_stack_hi)
		return kheap_main_stack_hi;
	/* glibc puts a thread's descriptor at the top of its stack block
	 * (the program's own block too, with pthread_attr_setstack): all of
	 * [sp, self) is the thread's mapped stack. */
	if (tid != kheap_main_tid && self > sp && self - sp < (1ull << 30))
		return self;
	if (!kiln_maps_find(sp, &lo, &hi))
		return hi;
	return 0;
}

/* kheap_self() for a thread without a ring: one attached (or NULL). */
static __attribute__((noinline)) struct kheap_thread *attach(void)
{
	struct kheap_thread *t, *head;
	pid_t tid;

	tid = kheap_gettid();
	/* A ring whose thread exited and which the writer drained. */
	for (t = atomic_load(&kheap_rings); t; t = t->next) {
		int f = KHEAP_FREE;

		if (atomic_load_explicit(&t->state, memory_order_relaxed) == KHEAP_FREE &&
		    atomic_compare_exchange_strong(&t->state, &f, KHEAP_ATTACHING))
			break;
	}
	if (!t) {
		t = kheap_map_anon(sizeof(*t));
		if (!t) {
			kheap_me = ME_DEAD;
			return NULL;
		}
		t->state = KHEAP_ATTACHING;
		head = atomic_load(&kheap_rings);
		do
			t->next = head;
		while (!atomic_compare_exchange_weak(&kheap_rings, &head, t));
	}
	/* The writer finished with it (FREE) or never saw it: reset. */
	t->tid = tid;
	t->t_base = t->last_ns = kheap_stamp();
	atomic_store(&t->tail, atomic_load(&t->head));
	t->tail_seen = atomic_load(&t->tail);
	atomic_store(&t->events, 0);
	atomic_store(&t->lost, 0);
	t->stack_hi = stack_top(tid);
	t->exit_name[0] = '\0';
	if (kheap_malloc_lib)
		kheap_malloc_lib->sample_start(t, (uint64_t)tid ^ t->t_base);
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_relaxed);
	/* The writer reads gen, t_base and tid only after seeing OWNED. */
	atomic_store_explicit(&t->state, KHEAP_OWNED, memory_order_release);
	kheap_me = t;
	if (kheap_have_key)
		pthread_setspecific(kheap_exit_key, t);
	return t;
}

struct kheap_thread *kheap_self(void)
{
	struct kheap_thread *t = kheap_me;

	/* The hooks' every record: no register saved but for attach(). */
	if (__builtin_expect(t != NULL, 1))
		return t == ME_DEAD ? NULL : t;
	return attach();
}

void kheap_wake(void)
{
	if (!atomic_exchange_explicit(&kheap_wake_word, 1, memory_order_acq_rel))
		syscall(SYS_futex, &kheap_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static bool ring_put(struct kheap_thread *t, const unsigned char *rec,
		     size_t len, uint64_t h, uint64_t tl)
{
	size_t at = (size_t)(h & (KHEAP_RING - 1)), first;

	if (h + len - tl > KHEAP_RING)
		return false;
	first = KHEAP_RING - at;
	if (first >= len) {
		memcpy(t->data + at, rec, len);
	} else {
		memcpy(t->data + at, rec, first);
		memcpy(t->data, rec + first, len - first);
	}
	atomic_store_explicit(&t->head, h + len, memory_order_release);
	atomic_store_explicit(&t->events,
			      atomic_load_explicit(&t->events, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (h + len - tl >= KHEAP_WAKE && h - tl < KHEAP_WAKE)
		kheap_wake();
	return true;
}

bool kheap_put(struct kheap_thread *t, const unsigned char *rec, size_t len)
{
	uint64_t h = atomic_load_explicit(&t->head, memory_order_relaxed);
	uint64_t tl = atomic_load_explicit(&t->tail, memory_order_acquire);
	uint64_t until;
	struct timespec nap = { 0, 50000 };

	t->tail_seen = tl;
	if (ring_put(t, rec, len, h, tl))
		return true;
	/*
	 * Full: wait for the writer (it may be compressing, or starved of
	 * CPU by the program's own threads), up to FULL_WAIT_NS; after that
	 * the event is counted lost, and until the writer drains again every
	 * full ring drops at once.
	 */
	if (!atomic_load_explicit(&kheap_stalled, memory_order_relaxed) &&
	    atomic_load(&kheap_finishing) == 0) {
		until = kheap_now() + FULL_WAIT_NS;
		do {
			kheap_wake();
			nanosleep(&nap, NULL);
			tl = atomic_load_explicit(&t->tail, memory_order_acquire);
			t->tail_seen = tl;
			if (ring_put(t, rec, len, h, tl))
				return true;
		} while (kheap_now() < until);
		atomic_store(&kheap_stalled, true);
	}
	atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
	return false;
}

/* ---- stacks ---- */

/* kheap_frame_stack() for a chain not in the cache: walked, interned,
 * cached (the stack buffer is here, off the hit's path). */
static __attribute__((noinline)) uint32_t walk_chain(struct kheap_thread *t,
						     const struct kiln_cfi_regs *r,
						     uint64_t hi)
{
	uint64_t pcs[KHEAP_MAX_DEPTH];
	uint32_t id;
	int n;

	n = kiln_cfi_unwind_chain(kheap_cfi, &t->cfi_cache, &t->chains, r, r->sp,
				  hi, pcs, KHEAP_MAX_DEPTH);
	id = kheap_stack_id(pcs, n);
	/* Not the empty stack: a full table's answer, or none. */
	if (id > 1)
		kiln_cfi_chain_put(&t->chains, id);
	return id;
}

uint32_t kheap_frame_stack(struct kheap_thread *t, void *frame)
{
	const uint64_t *f = frame;
	struct kiln_cfi_regs r;
	uint64_t hi = t->stack_hi;
	uint32_t id;

	/* The hook's frame: saved frame pointer, then the return address
	 * into the allocation function's caller, whose sp is right above. */
	r.fp = f[0];
	r.pc = f[1];
	r.sp = (uint64_t)(uintptr_t)(f + 2);
	if (!kheap_cfi || !hi || r.sp >= hi || hi - r.sp > (1ull << 30)) {
		/* An unknown stack (sigaltstack, a coroutine's): the caller. */
		return kheap_stack_id(&r.pc, 1);
	}
	/* A chain seen before, reached the same way: its id, no walk. */
	id = kiln_cfi_chain_find(kheap_cfi, &t->chains, &r, r.sp, hi);
	return id ? id : walk_chain(t, &r, hi);
}

static bool stack_eq(uint32_t id, uint64_t h, const uint64_t *pcs, int n)
{
	const uint64_t *e = kheap_st_ent[id];

	return e[0] == h && e[1] == (uint64_t)n &&
	       !memcmp(e + 2, pcs, (size_t)n * sizeof(*pcs));
}

uint32_t kheap_stack_id(const uint64_t *pcs, int n)
{
	uint64_t h = kiln_hash(pcs, (size_t)n * sizeof(*pcs));
	size_t i = h & (ST_SLOTS - 1);
	uint32_t id;

	if (n <= 0 || !kheap_st_ent)
		return 1;
	/* Lock-free: slots only ever go from 0 to a published id. */
	for (;; i = (i + 1) & (ST_SLOTS - 1)) {
		id = atomic_load_explicit(&kheap_st_slots[i], memory_order_acquire);
		if (!id)
			break;
		if (stack_eq(id, h, pcs, n))
			return id;
	}
	kheap_lock(&kheap_st_lock);
	/* Another thread may have added it, at i or after it. */
	for (;; i = (i + 1) & (ST_SLOTS - 1)) {
		id = atomic_load_explicit(&kheap_st_slots[i], memory_order_acquire);
		if (!id)
			break;
		if (stack_eq(id, h, pcs, n))
			goto out;
	}
	id = atomic_load_explicit(&kheap_st_count, memory_order_relaxed) + 1;
	if (!kheap_st_chunk || kheap_st_used + 2 + (size_t)n > ST_CHUNK) {
		uint64_t *c = id <= ST_MAX ? kheap_map_anon(ST_CHUNK * 8) : NULL;

		if (c) {
			kheap_st_chunk = c;
			kheap_st_used = 0;
		}
	}
	if (id > ST_MAX || !kheap_st_chunk || kheap_st_used + 2 + (size_t)n > ST_CHUNK) {
		id = 1;		/* full: the empty stack */
		goto out;
	}
	kheap_st_chunk[kheap_st_used] = h;
	kheap_st_chunk[kheap_st_used + 1] = (uint64_t)n;
	memcpy(kheap_st_chunk + kheap_st_used + 2, pcs, (size_t)n * sizeof(*pcs));
	kheap_st_ent[id] = kheap_st_chunk + kheap_st_used;
	kheap_st_used += 2 + (size_t)n;
	atomic_store_explicit(&kheap_st_count, id, memory_order_release);
	atomic_store_explicit(&kheap_st_slots[i], id, memory_order_release);
out:
	kheap_unlock(&kheap_st_lock);
	return id;
}

/* ---- sampled blocks ---- */

/*
 * Adds d to the block count of one filter slot, setting or clearing its
 * bit when the count leaves or reaches 0, unless pinned (ss_lock held).
 */
static void filter_slot(uint32_t *count, _Atomic uint64_t *bits,
			const uint64_t *pins, size_t i, int d)
{
	uint64_t bit = 1ull << (i & 63);

	if (d > 0 && count[i]++ == 0)
		atomic_fetch_or_explicit(&bits[i >> 6], bit, memory_order_relaxed);
	else if (d < 0 && --count[i] == 0 && !(pins && pins[i >> 6] & bit))
		atomic_fetch_and_explicit(&bits[i >> 6], ~bit, memory_order_relaxed);
}

/* The filters' counts for p change by d (ss_lock held). */
static void filter_add(uint64_t p, int d)
{
	filter_slot(kheap_ss_filter0, kheap_ss_bits0, kheap_ss_pins0, kheap_ss_index0(p), d);
	filter_slot(kheap_ss_filter, kheap_ss_bits, NULL, kheap_ss_index(p), d);
}

void kheap_ss_pin0(uint64_t p)
{
	size_t i = kheap_ss_index0(p);
	uint64_t bit = 1ull << (i & 63);

	kheap_lock(&kheap_ss_lock);
	kheap_ss_pins0[i >> 6] |= bit;
	atomic_fetch_or_explicit(&kheap_ss_bits0[i >> 6], bit, memory_order_relaxed);
	kheap_unlock(&kheap_ss_lock);
}

static inline size_t ss_hash(uint64_t p)
{
	p ^= p >> 33;
	p *= 0xff51afd7ed558ccdull;
	p ^= p >> 33;
	return (size_t)p;
}

/* The slot of p in a table of mask + 1 slots, or the empty one ending
 * its probe sequence. */
static size_t ss_probe(const uint64_t *t, size_t mask, uint64_t p)
{
	size_t i;

	for (i = ss_hash(p) & mask; t[i] && t[i] != p; i = (i + 1) & mask)
		;
	return i;
}

/* A new empty table and its counts (start, fork child).  false: no memory. */
bool kheap_ss_map(void)
{
	kheap_ss_cap = SS_SLOTS0;
	kheap_ss_count = 0;
	kheap_ss_slots = kheap_map_table(kheap_ss_cap * sizeof(*kheap_ss_slots));
	kheap_ss_filter = kheap_map_table(SS_FILTER * sizeof(*kheap_ss_filter));
	return kheap_ss_slots && kheap_ss_filter;
}

/* Moves the table to one four times larger (ss_lock held).  false: full. */
static bool ss_grow(void)
{
	size_t cap = kheap_ss_cap * 4, i;
	uint64_t *t;

	if (cap > SS_SLOTS || !(t = kheap_map_table(cap * sizeof(*t))))
		return false;
	for (i = 0; i < kheap_ss_cap; i++)
		if (kheap_ss_slots[i])
			t[ss_probe(t, cap - 1, kheap_ss_slots[i])] = kheap_ss_slots[i];
	munmap(kheap_ss_slots, kheap_ss_cap * sizeof(*kheap_ss_slots));
	kheap_ss_slots = t;
	kheap_ss_cap = cap;
	return true;
}

bool kheap_sset_add(uint64_t p)
{
	size_t i;
	bool kheap_ok = false;

	if (!kheap_ss_slots)
		return false;
	kheap_lock(&kheap_ss_lock);
	if (kheap_ss_count < kheap_ss_cap / 4 * 3 || ss_grow()) {
		i = ss_probe(kheap_ss_slots, kheap_ss_cap - 1, p);
		if (!kheap_ss_slots[i]) {
			kheap_ss_slots[i] = p;
			kheap_ss_count++;
			filter_add(p, 1);
		}
		kheap_ok = true;
	}
	kheap_unlock(&kheap_ss_lock);
	return kheap_ok;
}

bool kheap_sset_del(uint64_t p)
{
	size_t i, j, mask;
	bool found = false;

	/* Most frees are of blocks never sampled: no lock for them (the
	 * hooks looked at the bit already; other callers look here). */
	if (!kheap_ss_slots || !kheap_ss_maybe(p))
		return false;
	kheap_lock(&kheap_ss_lock);
	mask = kheap_ss_cap - 1;
	i = ss_probe(kheap_ss_slots, mask, p);
	if (kheap_ss_slots[i]) {
		found = true;
		kheap_ss_count--;
		filter_add(p, -1);
		/* Backward-shift deletion: no tombstones. */
		kheap_ss_slots[i] = 0;
		for (j = (i + 1) & mask; kheap_ss_slots[j]; j = (j + 1) & mask) {
			size_t home = ss_hash(kheap_ss_slots[j]) & mask;

			/* Move j into the hole unless its home lies in (i, j]. */
			if ((j > i && (home <= i || home > j)) ||
			    (j < i && (home <= i && home > j))) {
				kheap_ss_slots[i] = kheap_ss_slots[j];
				kheap_ss_slots[j] = 0;
				i = j;
			}
		}
	}
	kheap_unlock(&kheap_ss_lock);
	return found;
}

