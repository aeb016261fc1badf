/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap tracer's writer thread (heap stage): every 100 ms, or sooner
 * when woken, it drains the threads' rings into batches, prefixes them
 * with the stacks, maps, thread names and loss counts they need,
 * compresses that into one zstd frame and writes it with one write(2), so
 * that a SIGKILL loses at most the last ~100 ms; it also feeds the heap
 * aggregate (agg.c).  A thread of kiln's own, every signal blocked, the
 * allocation guard set for good.  See trace.c and docs/heap-trace.md.
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


char *kheap_trace_path;		/* KILN_HEAP_TRACE */
/* The trace's fd: high, checked before each frame (runtime/kfd.h). */
struct kiln_kfd kheap_trace_kfd = KILN_KFD_INIT;
/* Writer. */
pthread_t kheap_writer;
bool kheap_writer_running;
pthread_mutex_t kheap_wlock = PTHREAD_MUTEX_INITIALIZER;
_Atomic uint32_t kheap_wake_word;
_Atomic bool kheap_stalled;		/* a full ring timed out: drop at once */
_Atomic int kheap_finishing;		/* 1: write E and stop; 2: done */
struct kiln_henc kheap_w_enc;		/* merges the rings' events */
static struct kiln_buf kheap_w_ring;		/* a ring's records, copied out */
uint64_t kheap_w_dropped;		/* events the writer had no memory for */
struct kiln_hcols kheap_w_ev;		/* event records, not yet written */
uint32_t kheap_w_stacks;		/* stacks written so far */
uint64_t kheap_w_dl_gen;
bool kheap_w_maps_due;
uint64_t kheap_w_lost;			/* losses already reported */
uint64_t kheap_w_last_flush;
uint64_t kheap_w_c_raw, kheap_w_c_ns;
bool kheap_w_c_drawn;			/* a line drawn from a good pair */
ZSTD_CCtx *kheap_w_zstd;
pid_t kheap_exit_tid;			/* the thread that ran exit() */
_Atomic uint64_t kheap_st_written, kheap_st_frames;
bool kheap_trace_on;			/* a trace file is being written */
bool kheap_agg_on;			/* the aggregate is kept (agg.c) */
uint32_t kheap_agg_epoch;		/* the encoder's epoch when it started */
/* ---- the writer ---- */

bool kheap_w_nomem;	/* an append failed while building a frame */

static void put(struct kiln_buf *b, const void *p, size_t n)
{
	if (n && kiln_buf_add(b, p, n))
		kheap_w_nomem = true;
}

/* A record builder's result: remembers a failure. */
void kheap_ok(int err)
{
	if (err)
		kheap_w_nomem = true;
}

/*
 * The executable ranges of the maps written last, sorted: a new stack
 * with an address in none of them was taken in code mapped since (node
 * maps a second copy of V8's builtins from its own file after it
 * starts, no dlopen() that the loader's generation would show), and the
 * maps are written again -- at most once a second, so that a stack
 * through code no mapping holds (a stray address) costs no more.
 */
static struct kiln_buf w_ranges;	/* uint64_t start, end pairs */
static uint64_t w_ranges_reread;	/* when they were last read for that */
#define REREAD_NS 1000000000ull

static int keep_exec(const struct kiln_maps_entry *e, void *arg)
{
	if (e->perms[2] == 'x') {
		uint64_t r[2] = { e->start, e->end };

		put(arg, e->line, e->linelen);
		put(arg, "\n", 1);
		put(&w_ranges, r, sizeof(r));
	}
	return 0;
}

/* 'P': the executable mappings of /proc/self/maps. */
void kheap_put_maps(struct kiln_hcols *out)
{
	struct kiln_buf raw = KILN_BUF_INIT, keep = KILN_BUF_INIT;

	kiln_buf_reset(&w_ranges);
	if (kiln_read_self_maps(&raw) == 0)
		kiln_maps_parse(raw.data, raw.len, keep_exec, &keep);
	kheap_ok(kiln_hcols_maps(out, keep.data ? keep.data : "", keep.len));
	kiln_buf_release(&raw);
	kiln_buf_release(&keep);
}

/* Whether pc lies in an executable range of the maps written last. */
static bool mapped(uint64_t pc)
{
	const uint64_t *r = (const uint64_t *)(void *)w_ranges.data;
	size_t lo = 0, hi = w_ranges.len / (2 * sizeof(*r));

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[2 * mid + 1] <= pc)
			lo = mid + 1;
		else if (r[2 * mid] > pc)
			hi = mid;
		else
			return true;
	}
	return false;
}

/* Whether the stacks (first, last] hold an address the maps written last
 * do not cover, and the maps were not read again for that within
 * REREAD_NS. */
static bool maps_behind(uint32_t first, uint32_t last, uint64_t now)
{
	uint32_t id;
	uint64_t i;

	if (!w_ranges.len || now - w_ranges_reread < REREAD_NS)
		return false;
	for (id = first + 1; id <= last; id++) {
		const uint64_t *e = kheap_st_ent[id];

		for (i = 0; i < e[1]; i++) {
			if (!mapped(e[2 + i])) {
				w_ranges_reread = now;
				return true;
			}
		}
	}
	return false;
}

void kheap_put_header(struct kiln_hcols *out)
{
	struct kiln_buf cmd = KILN_BUF_INIT;
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	kiln_read_proc(AT_FDCWD, "/proc/self/cmdline", &cmd);
	if (cmd.len && !cmd.data[cmd.len - 1])
		cmd.len--;	/* NUL-separated, no final NUL */
	kheap_ok(kiln_hcols_header(out, (uint64_t)getpid(), (uint64_t)getppid(),
			     (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
			     kheap_sample, cmd.data ? cmd.data : "", cmd.len));
	kiln_buf_release(&cmd);
}

int kheap_dl_gen(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uint64_t *)arg = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1;
}

/* Reads a varint of a ring record (written by this library: well formed). */
static inline const unsigned char *rd_uv(const unsigned char *p, uint64_t *v)
{
	return kiln_varint_get_own(p, v);
}

/*
 * Moves a ring's pending records into the encoder as one run of events
 * (the ring's records are in time order).  Ring records: 'A' dt ptr size
 * stack, 'F' dt ptr, dt the time since the thread's previous record; ptr
 * 8 bytes in the machine's order, the others varints (heapint.h).
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
	/* A record is 10 bytes at least (tag, dt, 8 of address). */
	ev = kiln_henc_reserve(&kheap_w_enc, n / 10 + 1);
	if (!ev)
		return;		/* out of memory: try again next round */
	first = KHEAP_RING - at;
	if (first >= n) {
		/* Read in place; the room is the thread's again after. */
		p = t->data + at;
	} else {
		/* Around the ring's end: one piece. */
		if (kiln_buf_grow(&kheap_w_ring, n + 16))
			return;
		memcpy(kheap_w_ring.data, t->data + at, first);
		memcpy(kheap_w_ring.data + first, t->data, n - first);
		atomic_store_explicit(&t->tail, h, memory_order_release);
		p = (const unsigned char *)kheap_w_ring.data;
	}
	end = p + n;
	while (p < end) {
		struct kiln_hev *e = &ev[used++];
		unsigned char tag = *p++;

		p = rd_uv(p, &v);
		time += v;
		e->t = time;
		e->tid = (uint32_t)t->tid;
		memcpy(&e->ptr, p, sizeof(e->ptr));
		p += sizeof(e->ptr);
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
	atomic_store_explicit(&t->tail, h, memory_order_release);
	if (kiln_henc_commit(&kheap_w_enc, used))
		kheap_w_dropped += used;
	/* The thread's name, when new or changed (checked once a second). */
	now = kheap_now();
	if (!kheap_trace_on)
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
					kheap_ok(kiln_hcols_name(names, (uint64_t)t->tid,
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

	for (t = atomic_load(&kheap_rings); t; t = t->next) {
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
				kheap_ok(kiln_hcols_name(names, (uint64_t)t->tid, t->exit_name,
						   strnlen(t->exit_name, 16)));
			}
			atomic_store_explicit(&t->state, KHEAP_FREE, memory_order_release);
		}
	}
	atomic_store(&kheap_stalled, false);
}

/*
 * The trace's fd before a frame: still kiln's, or the program closed it
 * (a daemon closing every fd as it detaches) and it is opened again, for
 * appending, if the path still names the same file.  0 or -errno.
 */
static int trace_fd_check(void)
{
	int err;

	if (kiln_kfd_ours(&kheap_trace_kfd))
		return 0;
	err = kiln_kfd_reopen(&kheap_trace_kfd, kheap_trace_path, O_WRONLY | O_APPEND);
	if (err) {
		kiln_kfd_forget(&kheap_trace_kfd);
		return err == -ESTALE ? -EBADF : err;
	}
	kiln_rt_log(KILN_LOG_DEBUG, "the heap trace's fd was closed by the "
		       "program: '%s' opened again", kheap_trace_path);
	return 0;
}

/* Compresses buf into one zstd frame and writes it with one write(2). */
int kheap_write_frame(const struct kiln_buf *b)
{
	size_t cap = ZSTD_compressBound(b->len), n;
	void *dst;
	int err = 0;

	if (!b->len || kheap_trace_kfd.fd < 0)
		return 0;
	dst = malloc(cap);
	if (!dst)
		return -ENOMEM;
	n = ZSTD_compressCCtx(kheap_w_zstd, dst, cap, b->data, b->len, 1);
	if (ZSTD_isError(n)) {
		err = -EIO;
		goto out;
	}
	err = trace_fd_check();
	if (!err)
		err = kiln_kfd_write(&kheap_trace_kfd, dst, n);
	if (!err)
		atomic_fetch_add(&kheap_st_written, n);
	atomic_fetch_add(&kheap_st_frames, 1);
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
	else if (ev->kind == KILN_HEV_FREE && ev->epoch >= kheap_agg_epoch)
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
void kheap_round(bool force, bool all, bool end)
{
	struct kiln_hcols pre = { 0 }, names = { 0 };
	const struct kiln_hcols *parts[3] = { &pre, &names, &kheap_w_ev };
	struct kiln_buf frame = KILN_BUF_INIT;
	uint64_t lost = 0, gen = 0, now, limit;
	uint32_t n, id;
	int err;

	/* The hooks' clock and CLOCK_MONOTONIC at the round's start: the
	 * events up to it are placed on the line from the last such pair. */
	if (kheap_clock_pair(&limit, &now) || !kheap_w_c_drawn) {
		if (now < kheap_w_c_ns)
			now = kheap_w_c_ns;
		kiln_henc_clock(&kheap_w_enc, kheap_w_c_raw, kheap_w_c_ns, limit, now);
		kheap_w_c_raw = limit;
		kheap_w_c_ns = now;
		kheap_w_c_drawn = true;
	} else {
		/* A loose pair would be off by half its gap: the line goes on. */
		kiln_henc_clock_at(&kheap_w_enc, limit);
		kheap_w_c_raw = limit;
		kheap_w_c_ns = kiln_henc_ns(&kheap_w_enc, limit);
	}
	drain_all(&names, &lost);
	lost += kheap_w_dropped;
	kheap_w_dropped = 0;
	now = kheap_now();
	if (end) {
		struct kiln_hev *e = kiln_henc_reserve(&kheap_w_enc, 1);

		if (e) {
			memset(e, 0, sizeof(*e));
			e->t = kheap_stamp();
			e->tid = (uint32_t)(kheap_exit_tid ? kheap_exit_tid : getpid());
			e->kind = KILN_HEV_END;
			kiln_henc_commit(&kheap_w_enc, 1);
		}
		limit = UINT64_MAX;
	}
	if (all)
		limit = UINT64_MAX;
	/* Out of memory: what was not emitted waits for the next round. */
	kiln_henc_emit(&kheap_w_enc, limit, kheap_trace_on ? &kheap_w_ev : NULL,
		       kheap_agg_on ? agg_event : NULL, NULL);
	dl_iterate_phdr(kheap_dl_gen, &gen);
	if (gen != kheap_w_dl_gen) {
		/* Libraries came or went: new unwind tables, new maps. */
		kheap_w_dl_gen = gen;
		kiln_cfi_refresh(kheap_cfi);
		kheap_w_maps_due = true;
	} else if (kiln_cfi_wanted(kheap_cfi)) {
		/* A library without an FDE search table, wanted whole. */
		kiln_cfi_refresh(kheap_cfi);
	}
	if (!kheap_trace_on) {
		/* Heap profile only: the events went into the aggregate. */
		kheap_w_lost += lost;
		kheap_w_last_flush = now;
		kheap_w_nomem = false;
		goto out;
	}
	n = atomic_load_explicit(&kheap_st_count, memory_order_acquire);
	if (!force && !end && kheap_w_ev.c[KILN_HCOL_TAG].len < FLUSH_RECORDS &&
	    now - kheap_w_last_flush < FLUSH_NS && !kheap_w_maps_due &&
	    kiln_hcols_empty(&names) && !lost)
		goto out;
	if (!force && !end && kiln_hcols_empty(&kheap_w_ev) && kiln_hcols_empty(&names) &&
	    !lost && !kheap_w_maps_due && n == kheap_w_stacks)
		goto done;	/* nothing to say */
	if (!kheap_w_maps_due && maps_behind(kheap_w_stacks, n, now))
		kheap_w_maps_due = true;
	if (kheap_w_maps_due) {
		kheap_put_maps(&pre);
		kheap_w_maps_due = false;
	}
	for (id = kheap_w_stacks + 1; id <= n; id++) {
		const uint64_t *e = kheap_st_ent[id];

		kheap_ok(kiln_hcols_stack(&pre, id, e + 2, (size_t)e[1]));
	}
	if (lost)
		kheap_ok(kiln_hcols_lost(&pre, lost));
	kheap_ok(kiln_hcols_frame(parts, 3, false, &frame));
	if (kheap_w_nomem) {
		err = -ENOMEM;
		kheap_w_nomem = false;
	} else {
		err = kheap_write_frame(&frame);
	}
	if (err != -ENOMEM) {
		kheap_w_stacks = n;
		kheap_w_lost += lost;
		kiln_hcols_reset(&kheap_w_ev);
	} else {
		/* Nothing half-built is written: the events (whose frees
		 * count blocks back), the stacks and the losses wait for
		 * the next frame. */
		kheap_w_dropped += lost;
	}
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap trace '%s': %s",
			       kheap_trace_path, strerror(-err));
		if (err != -ENOMEM)
			/* Stop writing (hooks keep draining); never closes
			 * an fd that is the program's now. */
			kiln_kfd_close(&kheap_trace_kfd);
	}
done:
	kheap_w_last_flush = now;
out:
	kiln_buf_release(&frame);
	kiln_hcols_release(&pre);
	kiln_hcols_release(&names);
}

/* A thread of kiln's (kiln_rt_thread_start()): its allocations are
 * never traced, it is never sampled. */
void *kheap_write_loop(void *arg)
{
	for (;;) {
		uint64_t now = kheap_now(), wait_ns;
		struct timespec ts;

		wait_ns = kheap_w_last_flush + FLUSH_NS > now ? kheap_w_last_flush + FLUSH_NS - now : 0;
		if (wait_ns && !atomic_load(&kheap_finishing)) {
			ts.tv_sec = (time_t)(wait_ns / 1000000000ull);
			ts.tv_nsec = (long)(wait_ns % 1000000000ull);
			syscall(SYS_futex, &kheap_wake_word, FUTEX_WAIT_PRIVATE, 0, &ts,
				NULL, 0);
		}
		atomic_store(&kheap_wake_word, 0);
		pthread_mutex_lock(&kheap_wlock);
		if (atomic_load(&kheap_finishing) == 1) {
			kheap_round(true, true, true);
			kiln_kfd_close(&kheap_trace_kfd);
			atomic_store(&kheap_finishing, 2);
			pthread_mutex_unlock(&kheap_wlock);
			syscall(SYS_futex, &kheap_finishing, FUTEX_WAKE_PRIVATE, INT_MAX,
				NULL, NULL, 0);
			return NULL;
		}
		kheap_round(false, false, false);
		pthread_mutex_unlock(&kheap_wlock);
	}
}

