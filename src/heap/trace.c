/*
 * The heap trace of libkiln.so (heap stage): the per-thread event rings
 * the malloc hooks fill, the process-wide stack table, the set of sampled
 * blocks, and the writer thread that streams everything to
 * KILN_HEAP_TRACE as zstd frames in the format of docs/heap-trace.md.
 *
 * Hot path (hooks.c, on the program's threads): encode a record into the
 * thread's ring (single producer, single consumer, lock-free), wake the
 * writer with a futex once a quarter of the ring is pending.  Cold path
 * (the writer, a thread of kiln's own with every signal blocked and the
 * hook guard set for good): every 100 ms, or sooner when woken, drain the
 * rings into batches, prefix them with the stacks, maps, thread names and
 * loss counts they need, compress that into one zstd frame and write it
 * with one write(2), so that a SIGKILL loses at most the last ~100 ms.
 * See docs/heap.md.
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
#include "heap/heap.h"
#include "heap/heapint.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"
#include "runtime/log.h"
#include "runtime/threads.h"

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

/*
 * What every hook reads, on cache lines of their own: nothing written
 * often may share them (another core's write would evict them from the
 * hooks' caches).
 */
_Alignas(64) _Atomic bool kheap_on;
uint64_t kheap_sample;
_Alignas(64) _Atomic uint64_t kheap_ss_bits0[KHEAP_SS_BITS0 / 64];
_Alignas(64) _Atomic uint64_t kheap_ss_bits[KHEAP_SS_BITS / 64];

/*
 * The malloc interposer (libkiln-malloc.so), once found: NULL when it is
 * not loaded, and then heap profiling cannot start (find_interposer()).
 */
static const struct kheap_interposer *interposer;


static char *trace_path;		/* KILN_HEAP_TRACE */
/* The trace's fd: high, checked before each frame (runtime/kfd.h). */
static struct kiln_kfd trace_kfd = KILN_KFD_INIT;
static struct kiln_cfi *cfi;
static uint64_t main_stack_hi;
static pid_t main_tid;
static pthread_key_t exit_key;
static bool have_key;
static _Atomic(struct kheap_thread *) rings;
static __thread struct kheap_thread *me __attribute__((tls_model("initial-exec")));
#define ME_DEAD ((struct kheap_thread *)1)

/*
 * Stack table: entries [hash, depth, pcs...] in arena chunks mmap'ed as
 * needed (under st_lock); st_ent[id] points at stack id's entry.
 */
static uint64_t *st_chunk;		/* the chunk being filled */
static size_t st_used;			/* words used in it */
static const uint64_t **st_ent;
static const uint64_t st_empty[2];	/* stack 1: no frame */
static _Atomic uint32_t *st_slots;
static _Atomic uint32_t st_count;	/* ids 1..st_count are published */
static atomic_flag st_lock = ATOMIC_FLAG_INIT;

/* Sampled blocks: exact table under a spin lock, counters in front. */
static uint64_t *ss_slots;
static size_t ss_cap;			/* slots (power of two) */
static size_t ss_count;
static uint32_t *ss_filter;		/* under ss_lock */
static uint32_t ss_filter0[KHEAP_SS_BITS0];	/* under ss_lock */
/* First-filter bits set for good: the bootstrap arena's blocks. */
static uint64_t ss_pins0[KHEAP_SS_BITS0 / 64];	/* under ss_lock */
static atomic_flag ss_lock = ATOMIC_FLAG_INIT;

/* Writer. */
static pthread_t writer;
static bool writer_running;
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t wake_word;
static _Atomic bool stalled;		/* a full ring timed out: drop at once */
static _Atomic int finishing;		/* 1: write E and stop; 2: done */
static struct kiln_henc w_enc;		/* merges the rings' events */
static struct kiln_buf w_ring;		/* a ring's records, copied out */
static uint64_t w_dropped;		/* events the writer had no memory for */
static struct kiln_hcols w_ev;		/* event records, not yet written */
static uint32_t w_stacks;		/* stacks written so far */
static uint64_t w_dl_gen;
static bool w_maps_due;
static uint64_t w_lost;			/* losses already reported */
static uint64_t w_last_flush;
static ZSTD_CCtx *w_zstd;
static pid_t exit_tid;			/* the thread that ran exit() */
static _Atomic uint64_t st_written, st_frames;
static bool trace_on;			/* a trace file is being written */
static bool agg_on;			/* the aggregate is kept (agg.c) */
static uint32_t agg_epoch;		/* the encoder's epoch when it started */

static void lock(atomic_flag *f)
{
	while (atomic_flag_test_and_set_explicit(f, memory_order_acquire))
		sched_yield();
}

static void unlock(atomic_flag *f)
{
	atomic_flag_clear_explicit(f, memory_order_release);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

uint64_t kheap_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *map_anon(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * map_anon() for a hash table probed at random: its pages are allocated
 * writable at once.  A page of a plain mapping that a probe reads first
 * gets the shared zero page, and the write that follows replaces it:
 * a copy-on-write fault that flushes the TLB of every CPU running the
 * program (an inter-processor interrupt each; in a VM, tens of
 * microseconds of the program's threads per page, 1% of a malloc-bound
 * program's time in sampling mode).
 */
static void *map_table(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- thread rings ---- */

static void on_thread_exit(void *arg)
{
	struct kheap_thread *t = arg;

	if (t && t != ME_DEAD && me == t) {
		/* Short-lived threads are gone before the writer looks. */
		if (prctl(PR_GET_NAME, t->exit_name))
			t->exit_name[0] = '\0';
		me = ME_DEAD;	/* later frees of this thread: untraced */
		atomic_store_explicit(&t->state, KHEAP_DEAD, memory_order_release);
	}
}

static uint64_t stack_top(pid_t tid)
{
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo, hi;
	uint64_t self = (uint64_t)pthread_self();

	if (tid == main_tid && main_stack_hi)
		return main_stack_hi;
	/* glibc puts a thread's descriptor at the top of its stack block
	 * (the program's own block too, with pthread_attr_setstack): all of
	 * [sp, self) is the thread's mapped stack. */
	if (tid != main_tid && self > sp && self - sp < (1ull << 30))
		return self;
	if (!kiln_maps_find(sp, &lo, &hi))
		return hi;
	return 0;
}

struct kheap_thread *kheap_self(void)
{
	struct kheap_thread *t = me, *head;
	pid_t tid;

	if (t)
		return t == ME_DEAD ? NULL : t;
	tid = gettid_();
	/* A ring whose thread exited and which the writer drained. */
	for (t = atomic_load(&rings); t; t = t->next) {
		int f = KHEAP_FREE;

		if (atomic_load_explicit(&t->state, memory_order_relaxed) == KHEAP_FREE &&
		    atomic_compare_exchange_strong(&t->state, &f, KHEAP_ATTACHING))
			break;
	}
	if (!t) {
		t = map_anon(sizeof(*t));
		if (!t) {
			me = ME_DEAD;
			return NULL;
		}
		t->state = KHEAP_ATTACHING;
		head = atomic_load(&rings);
		do
			t->next = head;
		while (!atomic_compare_exchange_weak(&rings, &head, t));
	}
	/* The writer finished with it (FREE) or never saw it: reset. */
	t->tid = tid;
	t->t_base = t->last_ns = kheap_now();
	atomic_store(&t->tail, atomic_load(&t->head));
	atomic_store(&t->events, 0);
	atomic_store(&t->lost, 0);
	t->stack_hi = stack_top(tid);
	t->exit_name[0] = '\0';
	if (interposer)
		interposer->sample_start(t, (uint64_t)tid ^ t->t_base);
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_relaxed);
	/* The writer reads gen, t_base and tid only after seeing OWNED. */
	atomic_store_explicit(&t->state, KHEAP_OWNED, memory_order_release);
	me = t;
	if (have_key)
		pthread_setspecific(exit_key, t);
	return t;
}

void kheap_wake(void)
{
	if (!atomic_exchange_explicit(&wake_word, 1, memory_order_acq_rel))
		syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
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
	atomic_fetch_add_explicit(&t->events, 1, memory_order_relaxed);
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

	if (ring_put(t, rec, len, h, tl))
		return true;
	/*
	 * Full: wait for the writer (it may be compressing, or starved of
	 * CPU by the program's own threads), up to FULL_WAIT_NS; after that
	 * the event is counted lost, and until the writer drains again every
	 * full ring drops at once.
	 */
	if (!atomic_load_explicit(&stalled, memory_order_relaxed) &&
	    atomic_load(&finishing) == 0) {
		until = kheap_now() + FULL_WAIT_NS;
		do {
			kheap_wake();
			nanosleep(&nap, NULL);
			tl = atomic_load_explicit(&t->tail, memory_order_acquire);
			if (ring_put(t, rec, len, h, tl))
				return true;
		} while (kheap_now() < until);
		atomic_store(&stalled, true);
	}
	atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
	return false;
}

/* ---- stacks ---- */

int kheap_unwind(struct kheap_thread *t, void *frame, uint64_t *pcs, int max)
{
	const uint64_t *f = frame;
	struct kiln_cfi_regs r;
	uint64_t hi = t->stack_hi;

	/* The hook's frame: saved frame pointer, then the return address
	 * into the allocation function's caller, whose sp is right above. */
	r.fp = f[0];
	r.pc = f[1];
	r.sp = (uint64_t)(uintptr_t)(f + 2);
	if (!cfi || !hi || r.sp >= hi || hi - r.sp > (1ull << 30)) {
		/* An unknown stack (sigaltstack, a coroutine's): the caller. */
		pcs[0] = r.pc;
		return 1;
	}
	return kiln_cfi_unwind_cached(cfi, &t->cfi_cache, &r, r.sp, hi, pcs, max);
}

static bool stack_eq(uint32_t id, uint64_t h, const uint64_t *pcs, int n)
{
	const uint64_t *e = st_ent[id];

	return e[0] == h && e[1] == (uint64_t)n &&
	       !memcmp(e + 2, pcs, (size_t)n * sizeof(*pcs));
}

uint32_t kheap_stack_id(const uint64_t *pcs, int n)
{
	uint64_t h = kiln_hash(pcs, (size_t)n * sizeof(*pcs));
	size_t i = h & (ST_SLOTS - 1);
	uint32_t id;

	if (n <= 0 || !st_ent)
		return 1;
	/* Lock-free: slots only ever go from 0 to a published id. */
	for (;; i = (i + 1) & (ST_SLOTS - 1)) {
		id = atomic_load_explicit(&st_slots[i], memory_order_acquire);
		if (!id)
			break;
		if (stack_eq(id, h, pcs, n))
			return id;
	}
	lock(&st_lock);
	/* Another thread may have added it, at i or after it. */
	for (;; i = (i + 1) & (ST_SLOTS - 1)) {
		id = atomic_load_explicit(&st_slots[i], memory_order_acquire);
		if (!id)
			break;
		if (stack_eq(id, h, pcs, n))
			goto out;
	}
	id = atomic_load_explicit(&st_count, memory_order_relaxed) + 1;
	if (!st_chunk || st_used + 2 + (size_t)n > ST_CHUNK) {
		uint64_t *c = id <= ST_MAX ? map_anon(ST_CHUNK * 8) : NULL;

		if (c) {
			st_chunk = c;
			st_used = 0;
		}
	}
	if (id > ST_MAX || !st_chunk || st_used + 2 + (size_t)n > ST_CHUNK) {
		id = 1;		/* full: the empty stack */
		goto out;
	}
	st_chunk[st_used] = h;
	st_chunk[st_used + 1] = (uint64_t)n;
	memcpy(st_chunk + st_used + 2, pcs, (size_t)n * sizeof(*pcs));
	st_ent[id] = st_chunk + st_used;
	st_used += 2 + (size_t)n;
	atomic_store_explicit(&st_count, id, memory_order_release);
	atomic_store_explicit(&st_slots[i], id, memory_order_release);
out:
	unlock(&st_lock);
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
	filter_slot(ss_filter0, kheap_ss_bits0, ss_pins0, kheap_ss_index0(p), d);
	filter_slot(ss_filter, kheap_ss_bits, NULL, kheap_ss_index(p), d);
}

void kheap_ss_pin0(uint64_t p)
{
	size_t i = kheap_ss_index0(p);
	uint64_t bit = 1ull << (i & 63);

	lock(&ss_lock);
	ss_pins0[i >> 6] |= bit;
	atomic_fetch_or_explicit(&kheap_ss_bits0[i >> 6], bit, memory_order_relaxed);
	unlock(&ss_lock);
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
static bool ss_map(void)
{
	ss_cap = SS_SLOTS0;
	ss_count = 0;
	ss_slots = map_table(ss_cap * sizeof(*ss_slots));
	ss_filter = map_table(SS_FILTER * sizeof(*ss_filter));
	return ss_slots && ss_filter;
}

/* Moves the table to one four times larger (ss_lock held).  false: full. */
static bool ss_grow(void)
{
	size_t cap = ss_cap * 4, i;
	uint64_t *t;

	if (cap > SS_SLOTS || !(t = map_table(cap * sizeof(*t))))
		return false;
	for (i = 0; i < ss_cap; i++)
		if (ss_slots[i])
			t[ss_probe(t, cap - 1, ss_slots[i])] = ss_slots[i];
	munmap(ss_slots, ss_cap * sizeof(*ss_slots));
	ss_slots = t;
	ss_cap = cap;
	return true;
}

bool kheap_sset_add(uint64_t p)
{
	size_t i;
	bool ok = false;

	if (!ss_slots)
		return false;
	lock(&ss_lock);
	if (ss_count < ss_cap / 4 * 3 || ss_grow()) {
		i = ss_probe(ss_slots, ss_cap - 1, p);
		if (!ss_slots[i]) {
			ss_slots[i] = p;
			ss_count++;
			filter_add(p, 1);
		}
		ok = true;
	}
	unlock(&ss_lock);
	return ok;
}

bool kheap_sset_del(uint64_t p)
{
	size_t i, j, mask;
	bool found = false;

	/* Most frees are of blocks never sampled: no lock for them (the
	 * hooks looked at the bit already; other callers look here). */
	if (!ss_slots || !kheap_ss_maybe(p))
		return false;
	lock(&ss_lock);
	mask = ss_cap - 1;
	i = ss_probe(ss_slots, mask, p);
	if (ss_slots[i]) {
		found = true;
		ss_count--;
		filter_add(p, -1);
		/* Backward-shift deletion: no tombstones. */
		ss_slots[i] = 0;
		for (j = (i + 1) & mask; ss_slots[j]; j = (j + 1) & mask) {
			size_t home = ss_hash(ss_slots[j]) & mask;

			/* Move j into the hole unless its home lies in (i, j]. */
			if ((j > i && (home <= i || home > j)) ||
			    (j < i && (home <= i && home > j))) {
				ss_slots[i] = ss_slots[j];
				ss_slots[j] = 0;
				i = j;
			}
		}
	}
	unlock(&ss_lock);
	return found;
}

/* ---- the writer ---- */

static bool w_nomem;	/* an append failed while building a frame */

static void put(struct kiln_buf *b, const void *p, size_t n)
{
	if (n && kiln_buf_add(b, p, n))
		w_nomem = true;
}

/* A record builder's result: remembers a failure. */
static void ok(int err)
{
	if (err)
		w_nomem = true;
}

static int keep_exec(const struct kiln_maps_entry *e, void *arg)
{
	if (e->perms[2] == 'x') {
		put(arg, e->line, e->linelen);
		put(arg, "\n", 1);
	}
	return 0;
}

/* 'P': the executable mappings of /proc/self/maps. */
static void put_maps(struct kiln_hcols *out)
{
	struct kiln_buf raw = KILN_BUF_INIT, keep = KILN_BUF_INIT;

	if (kiln_read_self_maps(&raw) == 0)
		kiln_maps_parse(raw.data, raw.len, keep_exec, &keep);
	ok(kiln_hcols_maps(out, keep.data ? keep.data : "", keep.len));
	kiln_buf_release(&raw);
	kiln_buf_release(&keep);
}

static void put_header(struct kiln_hcols *out)
{
	struct kiln_buf cmd = KILN_BUF_INIT;
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	kiln_read_proc(AT_FDCWD, "/proc/self/cmdline", &cmd);
	if (cmd.len && !cmd.data[cmd.len - 1])
		cmd.len--;	/* NUL-separated, no final NUL */
	ok(kiln_hcols_header(out, (uint64_t)getpid(), (uint64_t)getppid(),
			     (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
			     kheap_sample, cmd.data ? cmd.data : "", cmd.len));
	kiln_buf_release(&cmd);
}

static int dl_gen(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uint64_t *)arg = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1;
}

/* Reads a varint of a ring record (written by this library: well formed). */
static inline const unsigned char *rd_uv(const unsigned char *p, uint64_t *v)
{
	uint64_t x = 0;
	int shift = 0;

	while (*p & 0x80) {
		x |= (uint64_t)(*p++ & 0x7f) << shift;
		shift += 7;
	}
	*v = x | (uint64_t)*p++ << shift;
	return p;
}

/*
 * Moves a ring's pending records into the encoder as one run of events
 * (the ring's records are in time order).  Ring records: 'A' dt ptr size
 * stack, 'F' dt ptr, dt the time since the thread's previous record.
 */
static void drain_ring(struct kheap_thread *t, struct kiln_hcols *names)
{
	uint64_t h = atomic_load_explicit(&t->head, memory_order_acquire);
	uint64_t tl = atomic_load_explicit(&t->tail, memory_order_relaxed);
	uint64_t time = t->w_last_ns, now, v;
	size_t n = (size_t)(h - tl), at = (size_t)(tl & (KHEAP_RING - 1));
	size_t first, used = 0;
	const unsigned char *p, *end;
	struct kiln_hev *ev;

	if (!n)
		return;
	/* A record is 3 bytes at least. */
	if (kiln_buf_grow(&w_ring, n + 16))
		return;		/* out of memory: try again next round */
	ev = kiln_henc_reserve(&w_enc, n / 3 + 1);
	if (!ev)
		return;
	first = KHEAP_RING - at;
	if (first >= n) {
		memcpy(w_ring.data, t->data + at, n);
	} else {
		memcpy(w_ring.data, t->data + at, first);
		memcpy(w_ring.data + first, t->data, n - first);
	}
	atomic_store_explicit(&t->tail, h, memory_order_release);
	p = (const unsigned char *)w_ring.data;
	end = p + n;
	while (p < end) {
		struct kiln_hev *e = &ev[used++];
		unsigned char tag = *p++;

		p = rd_uv(p, &v);
		time += v;
		e->t = time;
		e->tid = (uint32_t)t->tid;
		p = rd_uv(p, &e->ptr);
		if (tag == 'A') {
			e->kind = KILN_HEV_ALLOC;
			p = rd_uv(p, &e->size);
			p = rd_uv(p, &v);
			e->stack = (uint32_t)v;
		} else {
			e->kind = KILN_HEV_FREE;
			e->size = 0;
			e->stack = 0;
		}
	}
	t->w_last_ns = time;
	if (kiln_henc_commit(&w_enc, used))
		w_dropped += used;
	/* The thread's name, when new or changed (checked once a second). */
	now = kheap_now();
	if (!trace_on)
		return;
	if (!t->w_name_ns || now - t->w_name_ns > 1000000000ull) {
		char path[64], name[20];
		ssize_t got;
		int fd;

		t->w_name_ns = now;
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", t->tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			got = read(fd, name, sizeof(name) - 1);
			close(fd);
			if (got > 0) {
				name[got] = '\0';
				name[strcspn(name, "\n")] = '\0';
				if (strcmp(name, t->w_name)) {
					strcpy(t->w_name, name);
					ok(kiln_hcols_name(names, (uint64_t)t->tid,
							   name, strlen(name)));
				}
			}
		}
	}
}

/* Drains every ring; the new losses in *lost. */
static void drain_all(struct kiln_hcols *names, uint64_t *lost)
{
	struct kheap_thread *t;

	for (t = atomic_load(&rings); t; t = t->next) {
		int st = atomic_load_explicit(&t->state, memory_order_acquire);
		uint32_t g;
		uint64_t l;

		if (st != KHEAP_OWNED && st != KHEAP_DEAD)
			continue;
		g = atomic_load_explicit(&t->gen, memory_order_relaxed);
		if (g != t->w_gen) {
			t->w_gen = g;
			t->w_last_ns = t->t_base;
			t->w_lost = 0;
			t->w_name_ns = 0;
			t->w_name[0] = '\0';
		}
		drain_ring(t, names);
		l = atomic_load_explicit(&t->lost, memory_order_relaxed);
		*lost += l - t->w_lost;
		t->w_lost = l;
		if (st == KHEAP_DEAD) {
			if (t->exit_name[0] && strcmp(t->exit_name, t->w_name)) {
				ok(kiln_hcols_name(names, (uint64_t)t->tid, t->exit_name,
						   strnlen(t->exit_name, 16)));
			}
			atomic_store_explicit(&t->state, KHEAP_FREE, memory_order_release);
		}
	}
	atomic_store(&stalled, false);
}

/*
 * The trace's fd before a frame: still kiln's, or the program closed it
 * (a daemon closing every fd as it detaches) and it is opened again, for
 * appending, if the path still names the same file.  0 or -errno.
 */
static int trace_fd_check(void)
{
	int err;

	if (kiln_kfd_ours(&trace_kfd))
		return 0;
	err = kiln_kfd_reopen(&trace_kfd, trace_path, O_WRONLY | O_APPEND);
	if (err) {
		kiln_kfd_forget(&trace_kfd);
		return err == -ESTALE ? -EBADF : err;
	}
	kiln_rt_log(KILN_LOG_DEBUG, "the heap trace's fd was closed by the "
		       "program: '%s' opened again", trace_path);
	return 0;
}

/* Compresses buf into one zstd frame and writes it with one write(2). */
static int write_frame(const struct kiln_buf *b)
{
	size_t cap = ZSTD_compressBound(b->len), n;
	void *dst;
	int err = 0;

	if (!b->len || trace_kfd.fd < 0)
		return 0;
	dst = malloc(cap);
	if (!dst)
		return -ENOMEM;
	n = ZSTD_compressCCtx(w_zstd, dst, cap, b->data, b->len, 1);
	if (ZSTD_isError(n)) {
		err = -EIO;
		goto out;
	}
	err = trace_fd_check();
	if (!err)
		err = kiln_kfd_write(&trace_kfd, dst, n);
	if (!err)
		atomic_fetch_add(&st_written, n);
	atomic_fetch_add(&st_frames, 1);
out:
	free(dst);
	return err;
}

/*
 * The encoder's callback: the aggregate sees each event in order, and the
 * frees of blocks allocated since it started.
 */
static void agg_event(void *arg, const struct kiln_hev *ev)
{
	if (ev->kind == KILN_HEV_ALLOC)
		kheap_agg_alloc(ev->size, ev->stack);
	else if (ev->kind == KILN_HEV_FREE && ev->epoch >= agg_epoch)
		kheap_agg_free(ev->size, ev->stack);
}

/*
 * One writer round (wlock held): drain the rings into the encoder, which
 * emits every event earlier than the round's start in time order (see
 * format/heapenc.h for why that is causally right); when due, write a
 * frame of what the events need (maps, thread names, new stacks, losses)
 * and the events, and at the end the end record and everything left
 * (everything drained, with all: before an exec).
 */
static void round_(bool force, bool all, bool end)
{
	struct kiln_hcols pre = { 0 }, names = { 0 };
	const struct kiln_hcols *parts[3] = { &pre, &names, &w_ev };
	struct kiln_buf frame = KILN_BUF_INIT;
	uint64_t lost = 0, gen = 0, now, limit;
	uint32_t n, id;
	int err;

	limit = kheap_now();
	drain_all(&names, &lost);
	lost += w_dropped;
	w_dropped = 0;
	now = kheap_now();
	if (end) {
		struct kiln_hev *e = kiln_henc_reserve(&w_enc, 1);

		if (e) {
			memset(e, 0, sizeof(*e));
			e->t = now;
			e->tid = (uint32_t)(exit_tid ? exit_tid : getpid());
			e->kind = KILN_HEV_END;
			kiln_henc_commit(&w_enc, 1);
		}
		limit = UINT64_MAX;
	}
	if (all)
		limit = UINT64_MAX;
	/* Out of memory: what was not emitted waits for the next round. */
	kiln_henc_emit(&w_enc, limit, trace_on ? &w_ev : NULL,
		       agg_on ? agg_event : NULL, NULL);
	dl_iterate_phdr(dl_gen, &gen);
	if (gen != w_dl_gen) {
		/* Libraries came or went: new unwind tables, new maps. */
		w_dl_gen = gen;
		kiln_cfi_refresh(cfi);
		w_maps_due = true;
	} else if (kiln_cfi_wanted(cfi)) {
		/* A library without an FDE search table, wanted whole. */
		kiln_cfi_refresh(cfi);
	}
	if (!trace_on) {
		/* Heap profile only: the events went into the aggregate. */
		w_lost += lost;
		w_last_flush = now;
		w_nomem = false;
		goto out;
	}
	n = atomic_load_explicit(&st_count, memory_order_acquire);
	if (!force && !end && w_ev.c[KILN_HCOL_TAG].len < FLUSH_RECORDS &&
	    now - w_last_flush < FLUSH_NS && !w_maps_due &&
	    kiln_hcols_empty(&names) && !lost)
		goto out;
	if (!force && !end && kiln_hcols_empty(&w_ev) && kiln_hcols_empty(&names) &&
	    !lost && !w_maps_due && n == w_stacks)
		goto done;	/* nothing to say */
	if (w_maps_due) {
		put_maps(&pre);
		w_maps_due = false;
	}
	for (id = w_stacks + 1; id <= n; id++) {
		const uint64_t *e = st_ent[id];

		ok(kiln_hcols_stack(&pre, id, e + 2, (size_t)e[1]));
	}
	if (lost)
		ok(kiln_hcols_lost(&pre, lost));
	ok(kiln_hcols_frame(parts, 3, false, &frame));
	if (w_nomem) {
		err = -ENOMEM;
		w_nomem = false;
	} else {
		err = write_frame(&frame);
	}
	if (err != -ENOMEM) {
		w_stacks = n;
		w_lost += lost;
		kiln_hcols_reset(&w_ev);
	} else {
		/* Nothing half-built is written: the events (whose frees
		 * count blocks back), the stacks and the losses wait for
		 * the next frame. */
		w_dropped += lost;
	}
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap trace '%s': %s",
			       trace_path, strerror(-err));
		if (err != -ENOMEM)
			/* Stop writing (hooks keep draining); never closes
			 * an fd that is the program's now. */
			kiln_kfd_close(&trace_kfd);
	}
done:
	w_last_flush = now;
out:
	kiln_buf_release(&frame);
	kiln_hcols_release(&pre);
	kiln_hcols_release(&names);
}

/* A thread of kiln's (kiln_rt_thread_start()): its allocations are
 * never traced, it is never sampled. */
static void *write_loop(void *arg)
{
	for (;;) {
		uint64_t now = kheap_now(), wait_ns;
		struct timespec ts;

		wait_ns = w_last_flush + FLUSH_NS > now ? w_last_flush + FLUSH_NS - now : 0;
		if (wait_ns && !atomic_load(&finishing)) {
			ts.tv_sec = (time_t)(wait_ns / 1000000000ull);
			ts.tv_nsec = (long)(wait_ns % 1000000000ull);
			syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, 0, &ts,
				NULL, 0);
		}
		atomic_store(&wake_word, 0);
		pthread_mutex_lock(&wlock);
		if (atomic_load(&finishing) == 1) {
			round_(true, true, true);
			kiln_kfd_close(&trace_kfd);
			atomic_store(&finishing, 2);
			pthread_mutex_unlock(&wlock);
			syscall(SYS_futex, &finishing, FUTEX_WAKE_PRIVATE, INT_MAX,
				NULL, NULL, 0);
			return NULL;
		}
		round_(false, false, false);
		pthread_mutex_unlock(&wlock);
	}
}

/* ---- start, fork, exit ---- */

static const char *base_path;	/* KILN_HEAP_TRACE, absolute */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_read, start_tried;	/* under start_lock */
static int start_err;
static pid_t trace_pid;		/* the process that writes trace_fd */

static int start_writer(void)
{
	int err = kiln_rt_thread_start(&writer, "kiln-heap", write_loop, NULL, true);

	if (err)
		return err;
	writer_running = true;
	return 0;
}

/* Opens path and writes the first frame (header, maps).  0 or -errno. */
static int open_trace(const char *path)
{
	struct kiln_hcols f = { 0 };
	const struct kiln_hcols *parts[1] = { &f };
	struct kiln_buf b = KILN_BUF_INIT;
	int err;

	err = kiln_kfd_open(&trace_kfd, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (err)
		return err;
	trace_pid = getpid();
	put_header(&f);
	put_maps(&f);
	ok(kiln_hcols_frame(parts, 1, true, &b));
	dl_iterate_phdr(dl_gen, &w_dl_gen);
	w_maps_due = false;
	err = w_nomem ? -ENOMEM : write_frame(&b);
	w_nomem = false;
	kiln_buf_release(&b);
	kiln_hcols_release(&f);
	if (err)
		kiln_kfd_close(&trace_kfd);
	return err;
}

void kiln_heap_fork_prepare(void)
{
	if (!writer_running)
		return;
	kiln_rt_guard++;
	/* No writer round, stack insertion or sampled-set change may be
	 * half done in the child's copy of memory. */
	pthread_mutex_lock(&wlock);
	lock(&st_lock);
	lock(&ss_lock);
}

void kiln_heap_fork_parent(void)
{
	if (!writer_running)
		return;
	unlock(&ss_lock);
	unlock(&st_lock);
	pthread_mutex_unlock(&wlock);
	kiln_rt_guard--;
}

void kiln_heap_fork_child(void)
{
	struct kheap_thread *t;
	char path[PATH_MAX];
	int err;

	if (!writer_running)
		return;
	unlock(&ss_lock);
	unlock(&st_lock);
	pthread_mutex_init(&wlock, NULL);
	if (cfi)
		kiln_cfi_fork_child(cfi);
	writer_running = false;
	if (atomic_load(&finishing) || !atomic_load(&kheap_on)) {
		atomic_store(&kheap_on, false);
		kiln_rt_guard--;
		return;
	}
	/* The parent writes what its threads recorded; the child starts
	 * empty, with only this thread, and defines every stack again. */
	for (t = atomic_load(&rings); t; t = t->next) {
		atomic_store(&t->tail, atomic_load(&t->head));
		if (t == me) {
			t->tid = gettid_();
			t->t_base = t->last_ns = kheap_now();
			atomic_store(&t->lost, 0);
			atomic_fetch_add(&t->gen, 1);
		} else {
			atomic_store(&t->state, KHEAP_FREE);
		}
	}
	main_tid = getpid();
	main_stack_hi = me && me != ME_DEAD ? me->stack_hi : 0;
	if (kheap_sample && ss_slots) {
		/* The parent's sampled blocks are not this trace's. */
		munmap(ss_slots, ss_cap * sizeof(*ss_slots));
		munmap(ss_filter, SS_FILTER * sizeof(*ss_filter));
		for (size_t i = 0; i < KHEAP_SS_BITS / 64; i++)
			atomic_store(&kheap_ss_bits[i], 0);
		for (size_t i = 0; i < KHEAP_SS_BITS0 / 64; i++)
			atomic_store(&kheap_ss_bits0[i], ss_pins0[i]);
		memset(ss_filter0, 0, sizeof(ss_filter0));
		ss_map();
	}
	kiln_hcols_reset(&w_ev);
	kiln_henc_release(&w_enc);
	agg_epoch = 0;
	w_stacks = 0;
	w_lost = 0;
	w_dropped = 0;
	w_last_flush = kheap_now();
	exit_tid = 0;
	atomic_store(&stalled, false);
	atomic_store(&wake_word, 0);
	/* The parent's fd (the child shares its file offset: closed here,
	 * if it is still kiln's, the parent's stays open). */
	kiln_kfd_close(&trace_kfd);
	/* The child's heap profile holds what it allocates itself. */
	if (agg_on)
		kheap_agg_reset();
	trace_pid = getpid();
	err = 0;
	if (trace_on) {
		snprintf(path, sizeof(path), "%s.%d", base_path, (int)getpid());
		free(trace_path);
		trace_path = strdup(path);
		err = trace_path ? kiln_keep_as_old(trace_path) : -ENOMEM;
		if (!err)
			err = open_trace(trace_path);
	} else {
		snprintf(path, sizeof(path), "the heap profiler");
	}
	if (!err)
		err = start_writer();
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap trace '%s': %s",
			       path, strerror(-err));
		atomic_store(&kheap_on, false);
		start_err = err;
	}
	kiln_rt_guard--;
}

/* Writes the end record and stops (normal exit).  Waits at most 2 s. */
static void finish(void)
{
	int none = 0;
	struct timespec ts = { 0, 50000000 };
	int i;

	if (!writer_running || getpid() != trace_pid ||
	    !atomic_compare_exchange_strong(&finishing, &none, 1))
		return;
	kiln_rt_guard++;
	exit_tid = gettid_();
	atomic_store(&kheap_on, false);
	atomic_store(&wake_word, 1);
	syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (i = 0; i < 40 && atomic_load(&finishing) != 2; i++)
		syscall(SYS_futex, &finishing, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
	kiln_rt_guard--;
}

void kiln_heap_exit_flush(void)
{
	finish();
}

void kiln_heap_exec_flush(void)
{
	struct timespec until;
	int rc;

	/* Only the process that writes the trace (never a vfork child,
	 * which shares its parent's memory). */
	if (!writer_running || !trace_on || getpid() != trace_pid ||
	    atomic_load(&finishing))
		return;
	kiln_rt_guard++;
	/* Bounded: exec is async-signal-safe, and a handler may exec while
	 * its thread holds the lock (a snapshot of the embedding API). */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	rc = pthread_mutex_timedlock(&wlock, &until);
	if (!rc) {
		/* Everything the rings hold, in one frame; no end record:
		 * the blocks live at exec were live when the image ended,
		 * and if exec fails tracing goes on. */
		round_(true, true, false);
		pthread_mutex_unlock(&wlock);
	} else {
		kiln_rt_log(KILN_LOG_INFO, "exec: the heap trace's last events "
			       "could not be written first: %s", strerror(rc));
	}
	kiln_rt_guard--;
}

/*
 * When the process started, in CLOCK_REALTIME ns (to a clock tick), or 0:
 * /proc/self/stat's starttime (ticks after boot) against CLOCK_BOOTTIME.
 */
/*
 * Whether path holds a trace that this very process wrote, in an image
 * before an exec: its header has this pid and a start after the
 * process's (a process that had the pid before ended before it started).
 */
static bool by_this_process(const char *path, unsigned long long started,
			    void *arg)
{
	struct kiln_heaptrace_info info = { 0 };
	size_t cap = 256 << 10, len = 0;
	struct stat st;
	char *buf;
	int fd;
	bool yes = false;

	(void)arg;
	/* A FIFO (a reader streaming the trace) would block an open
	 * without O_NONBLOCK: only regular files are traces kept. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	buf = malloc(cap);
	while (buf && len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	/* Tick-rounded start against a header timed after it: 20 ms of
	 * margin for the clocks. */
	if (buf && !kiln_heaptrace_peek(buf, len, &info) &&
	    info.pid == (uint64_t)getpid() &&
	    info.start_realtime_ns + 20000000ull >= started)
		yes = true;
	free(buf);
	return yes;
}

/*
 * exec keeps the pid: the image before wrote its trace to path (and
 * flushed it, kiln_heap_exec_flush()).  It is kept as PATH.old, or
 * PATH.old.2, PATH.old.3, ... when earlier images of this process hold
 * those (names in the order the images ran), before this image starts
 * its own trace in path.  A stale file (another process's) at one of
 * these names is replaced.  0 or -errno (then nothing is overwritten).
 */
static int keep_earlier_image(const char *path)
{
	char *old;
	int err = kiln_keep_earlier_image(path, by_this_process, NULL, &old);

	if (old)
		kiln_rt_log(KILN_LOG_INFO, "exec: the heap trace of the image "
			       "before is kept as '%s'", old);
	free(old);
	return err;
}

/*
 * The last destructor to run in the process (libkiln.so is loaded before
 * the program's own objects), so frees by the program's atexit handlers
 * and static destructors are in the trace.
 */
void kiln_heap_fini(void)
{
	finish();
}

static bool reserve_tables(void)
{
	st_ent = map_anon((ST_MAX + 2) * sizeof(*st_ent));
	st_slots = map_table(ST_SLOTS * sizeof(*st_slots));
	if (!st_ent || !st_slots)
		return false;
	/* Stack 1: the empty stack (the table full, no frame known). */
	st_ent[1] = st_empty;
	atomic_store(&st_count, 1);
	if (kheap_sample) {
		if (!ss_map())
			return false;
		/* Its pages written before any is read (see map_table()). */
		memset(ss_filter0, 0, sizeof(ss_filter0));
	}
	return true;
}

struct in_main {
	uint64_t addr;
	bool yes;
};

static int in_main_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct in_main *m = arg;
	int i;

	/* The first object is the main program. */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && m->addr >= lo && m->addr < lo + ph->p_memsz)
			m->yes = true;
	}
	return 1;
}

/* The loaded objects in lookup order, up to the interposer (not included). */
struct before_kiln {
	uint64_t kiln_base;
	int n;
	bool reached;
	struct {
		const char *name;
		uint64_t base;
	} obj[32];
};

static int before_kiln_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct before_kiln *b = arg;

	if (info->dlpi_addr == b->kiln_base) {
		b->reached = true;
		return 1;
	}
	if (b->n < (int)(sizeof(b->obj) / sizeof(b->obj[0]))) {
		b->obj[b->n].name = info->dlpi_name;
		b->obj[b->n].base = info->dlpi_addr;
		b->n++;
	}
	return 0;
}

/*
 * The malloc that the program's calls reach when the program itself does
 * not define one: the first definition in the objects loaded after it
 * (preloaded ones first), ours unless a library preloaded before
 * libkiln-malloc.so brings its own.  NULL: ours (or not known).
 */
static void *first_malloc_after_main(uint64_t kiln_base)
{
	struct before_kiln b = { .kiln_base = kiln_base };
	int i;

	dl_iterate_phdr(before_kiln_cb, &b);
	/* The first object is the program: skipped.  dlopen() outside
	 * dl_iterate_phdr(), which holds the loader's lock. */
	for (i = 1; i < b.n && b.reached; i++) {
		void *h, *p;
		Dl_info di;

		if (!b.obj[i].name || !*b.obj[i].name)
			continue;
		h = dlopen(b.obj[i].name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		/* The object's own definition comes first in its scope. */
		p = dlsym(h, "malloc");
		dlclose(h);
		if (p && dladdr(p, &di) &&
		    (uint64_t)(uintptr_t)di.dli_fbase == b.obj[i].base)
			return p;
	}
	return NULL;
}

/* The program's malloc is not ours (linked into it, or preloaded first). */
static void check_allocator(void)
{
	void *def = dlsym(RTLD_DEFAULT, "malloc");
	const ElfW(Sym) *sym = NULL;
	Dl_info self, di;
	char exe[PATH_MAX];
	ssize_t n;

	/* "self": the interposer (its table is in it), whose malloc the
	 * program should reach. */
	if (!def || !dladdr((const void *)interposer, &self) ||
	    !dladdr1(def, &di, (void **)&sym, RTLD_DL_SYMENT) ||
	    di.dli_fbase == self.dli_fbase)
		return;
	if (sym && sym->st_shndx == SHN_UNDEF) {
		/*
		 * A program built without PIE that takes malloc's address: its
		 * PLT entry is malloc's canonical address, an undefined symbol
		 * with a value, which dlsym() returns.  The program defines no
		 * malloc: its calls reach the next definition.
		 */
		def = first_malloc_after_main((uint64_t)(uintptr_t)self.dli_fbase);
		if (!def || !dladdr(def, &di) || di.dli_fbase == self.dli_fbase)
			return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	{
		struct in_main m = { (uint64_t)(uintptr_t)def, false };

		dl_iterate_phdr(in_main_cb, &m);
		if (!m.yes && di.dli_fname && *di.dli_fname) {
			kiln_rt_log(KILN_LOG_ERROR, "heap profiling cannot see "
				       "the program's allocations: malloc comes "
				       "from '%s', loaded before libkiln-malloc.so",
				       di.dli_fname);
			return;
		}
	}
	kiln_rt_log(KILN_LOG_ERROR, "heap profiling cannot see the "
		       "program's allocations: its allocator is linked "
		       "statically into '%s'", exe);
}

/* KILN_HEAP_SAMPLE, or def when unset (0 with a trace: every allocation;
 * KILN_HEAP_DEFAULT_SAMPLE for a heap profile alone). */
static void read_sample(uint64_t def)
{
	const struct kiln_env *e = kiln_env();

	kheap_sample = e->heap_sample_set ? e->heap_sample : def;
}

/*
 * Why heap profiling cannot start without the interposer, and the fix:
 * the path of the interposer beside this libkiln.so.
 */
/* The folder of this libkiln.so with its '/' (*len bytes of the result;
 * 0 when unknown), for the messages that give the LD_PRELOAD to use. */
static const char *own_dir(int *len)
{
	Dl_info self;
	const char *slash;

	*len = 0;
	if (!dladdr((void *)own_dir, &self) || !self.dli_fname ||
	    !(slash = strrchr(self.dli_fname, '/')))
		return "";
	*len = (int)(slash - self.dli_fname + 1);
	return self.dli_fname;
}

static void say_no_interposer(const char *path)
{
	int len;
	const char *dir = own_dir(&len);

	kiln_rt_log(KILN_LOG_ERROR, "%s off: heap profiling needs kiln's malloc "
		       "interposer, which is not loaded: preload it beside libkiln.so, "
		       "LD_PRELOAD='%.*slibkiln-malloc.so %.*slibkiln.so', or run "
		       "'kiln heap -- CMD'", path ? "heap trace" : "heap profile",
		       len, dir, len, dir);
}

/*
 * Starts the hooks and the writer, with a trace to path (NULL: none, the
 * events only feed the aggregate).  start_lock held.  0 or -errno.
 */
static int start(const char *path)
{
	int err;

	kiln_rt_guard++;
	if (!kiln_heap_available()) {
		say_no_interposer(path);
		kiln_rt_guard--;
		return -ENOTSUP;
	}
	interposer->real_malloc();
	check_allocator();
	if (path) {
		/* Resolved at load, PATH.PID in a program the traced one
		 * started (runtime/env.c). */
		base_path = kiln_env()->trace.base;
		trace_path = strdup(kiln_env()->trace.path);
		if (!trace_path) {
			err = -ENOMEM;
			goto fail;
		}
	}
	if (!reserve_tables()) {
		err = -ENOMEM;
		goto fail;
	}
	kiln_henc_init(&w_enc);
	main_tid = getpid();
	if (gettid_() == main_tid) {
		uint64_t lo, hi;

		if (!kiln_maps_find((uint64_t)(uintptr_t)__builtin_frame_address(0),
				    &lo, &hi))
			main_stack_hi = hi;
	}
	cfi = kiln_cfi_new();
	if (cfi) {
		/* A library's rows are built by the hook that first unwinds
		 * through one of its functions, at once (stacks are exact
		 * from the first allocation): parsing every loaded library
		 * at start cost about 3 ms of every profiled program. */
		kiln_cfi_set_lazy(cfi, true, NULL, NULL);
		kiln_cfi_set_build_now(cfi, true);
		{
			uint64_t lo, hi;

			kiln_rt_own_frames(&lo, &hi);
			kiln_cfi_set_skip(cfi, lo, hi);
		}
		kiln_cfi_refresh(cfi);
	}
	if (!pthread_key_create(&exit_key, on_thread_exit))
		have_key = true;
	if (path) {
		w_zstd = ZSTD_createCCtx();
		if (!w_zstd) {
			err = -ENOMEM;
			goto fail;
		}
		trace_on = true;
		err = keep_earlier_image(trace_path);
		/* Another run's trace at the name: kept as PATH.old. */
		if (!err)
			err = kiln_keep_as_old(trace_path);
		if (!err)
			err = open_trace(trace_path);
		if (err) {
			trace_on = false;
			goto fail;
		}
	} else {
		dl_iterate_phdr(dl_gen, &w_dl_gen);
	}
	trace_pid = getpid();
	w_last_flush = kheap_now();
	err = start_writer();
	if (err)
		goto fail;
	if (!kheap_sample)
		/* Every free is recorded: the hooks' first filter says so. */
		for (size_t i = 0; i < KHEAP_SS_BITS0 / 64; i++)
			atomic_store(&kheap_ss_bits0[i], ~0ull);
	atomic_store(&kheap_on, true);
	if (path)
		kiln_rt_log(KILN_LOG_INFO, "heap trace to '%s' (%s)", trace_path,
			       kheap_sample ? "sampling" : "every allocation");
	kiln_rt_guard--;
	return 0;
fail:
	if (path)
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap trace '%s': %s",
			       trace_path ? trace_path : path, strerror(-err));
	else
		kiln_rt_log(KILN_LOG_ERROR, "cannot start the heap profiler: %s",
			       strerror(-err));
	kiln_rt_guard--;
	return err;
}

void kiln_heap_init(void)
{
	const char *path = kiln_env()->trace.path;

	pthread_mutex_lock(&start_lock);
	if (!env_read) {
		env_read = true;
		if (path) {
			read_sample(0);
			start_err = start(path);
			start_tried = true;
		}
	}
	pthread_mutex_unlock(&start_lock);
}

int kiln_heap_profile_start(void)
{
	int err = 0;

	kiln_heap_init();
	pthread_mutex_lock(&start_lock);
	if (!start_tried) {
		start_tried = true;
		read_sample(KILN_HEAP_DEFAULT_SAMPLE);
		start_err = start(NULL);
	}
	err = start_err;
	if (!err && !agg_on) {
		pthread_mutex_lock(&wlock);
		agg_on = true;
		agg_epoch = ++w_enc.epoch;
		pthread_mutex_unlock(&wlock);
		if (kheap_sample)
			kiln_rt_log(KILN_LOG_INFO, "heap profile: one sample per "
				       "%llu bytes allocated",
				       (unsigned long long)kheap_sample);
		else
			kiln_rt_log(KILN_LOG_INFO, "heap profile: every allocation");
	}
	pthread_mutex_unlock(&start_lock);
	return err;
}

bool kiln_heap_profiling(void)
{
	return agg_on && writer_running;
}

void kiln_heap_stop(void)
{
	finish();
}

int kiln_heap_snap_take(struct kiln_heap_snap *out)
{
	struct timespec rt;
	int err;

	memset(out, 0, sizeof(*out));
	kiln_rt_guard++;
	pthread_mutex_lock(&wlock);
	if (!agg_on || !writer_running) {
		err = -ENOENT;
	} else {
		/* What the threads recorded up to now, unless the writer
		 * already did its last round (exit). */
		if (!atomic_load(&finishing))
			round_(false, false, false);
		err = kheap_agg_copy(out);
	}
	pthread_mutex_unlock(&wlock);
	kiln_rt_guard--;
	out->sample_bytes = kheap_sample;
	clock_gettime(CLOCK_REALTIME, &rt);
	out->time_nanos = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	return err;
}

void kiln_heap_snap_release(struct kiln_heap_snap *s)
{
	kiln_rt_guard++;
	free(s->sites);
	kiln_rt_guard--;
	s->sites = NULL;
	s->n = 0;
}

const uint64_t *kiln_heap_stack(uint32_t id, uint32_t *depth)
{
	const uint64_t *e;

	if (!id || !st_ent || id > atomic_load_explicit(&st_count, memory_order_acquire))
		return NULL;
	e = st_ent[id];
	*depth = (uint32_t)e[1];
	return e + 2;
}

void kiln_heap_on_interval(uint64_t bytes, void (*fn)(void))
{
	pthread_mutex_lock(&wlock);
	kheap_agg_interval(bytes, fn);
	pthread_mutex_unlock(&wlock);
}

/*
 * Finds the malloc interposer by name: it is in the process only when it
 * was preloaded (or linked), and libkiln.so never loads it.  A table of
 * another build's hooks is refused.
 */
static pthread_once_t interposer_once = PTHREAD_ONCE_INIT;

static void find_interposer(void)
{
	const struct kheap_interposer *ip;

	kiln_rt_guard++;
	ip = dlsym(RTLD_DEFAULT, KHEAP_INTERPOSER_SYM);
	kiln_rt_guard--;
	if (ip && ip->abi != KHEAP_ABI) {
		kiln_rt_log(KILN_LOG_ERROR, "heap profiling off: the malloc "
			       "interposer loaded is of another kiln build "
			       "(interface %u, want %u)", ip->abi, KHEAP_ABI);
		return;
	}
	interposer = ip;
}

/*
 * libkiln.so's own hooks (_exit, exec, fork, pthread_create) are reached
 * only when it is in front of the C library: preloaded, or linked by the
 * program.  Loaded as the interposer's dependency alone, it comes after;
 * said, with the fix.
 */
static void check_in_front(void)
{
	void *f = dlsym(RTLD_DEFAULT, "_exit");
	Dl_info got, self;
	const char *dir;
	int len;

	if (!f || !dladdr(f, &got) || !dladdr((void *)check_in_front, &self) ||
	    got.dli_fbase == self.dli_fbase)
		return;
	dir = own_dir(&len);
	kiln_rt_log(KILN_LOG_ERROR, "libkiln.so is loaded behind the C library "
		       "(libkiln-malloc.so preloaded without it?): its hooks of "
		       "_exit, exec and fork are not reached, and heap data is lost "
		       "there; preload both: LD_PRELOAD='%.*slibkiln-malloc.so "
		       "%.*slibkiln.so'", len, dir, len, dir);
}

void kiln_heap_load(void)
{
	kiln_rt_log_init();
	if (kiln_heap_available()) {
		interposer->real_malloc();
		interposer->jemalloc_init();
		check_in_front();
	}
	kiln_heap_init();
}

bool kiln_heap_available(void)
{
	pthread_once(&interposer_once, find_interposer);
	return interposer != NULL;
}

bool kiln_heap_tracing(void)
{
	return writer_running && trace_on && atomic_load(&kheap_on);
}

void kiln_heap_stats(struct kiln_heap_stats *st)
{
	struct kheap_thread *t;

	memset(st, 0, sizeof(*st));
	for (t = atomic_load(&rings); t; t = t->next) {
		st->events += atomic_load(&t->events);
		st->lost += atomic_load(&t->lost);
	}
	st->stacks = atomic_load(&st_count);
	st->bytes_written = atomic_load(&st_written);
	st->frames = atomic_load(&st_frames);
}
