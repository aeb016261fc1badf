/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the heap trace reader (src/format/heaptrace.c) and the
 * heap analysis (src/profile/hprof.c).  Traces are written here by a small
 * writer that follows docs/heap-trace.md (varint records, one zstd frame
 * per flush), so each test knows its exact answers: peak to the byte and
 * when, leaks, temporary allocations, cross-thread frees, the merge of
 * batches written out of time order, sampling scale-back, a file cut in
 * its last frame, and bad data refused with its byte offset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "format/format.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "format/heaptraceint.h"
#include "profile/heapprof.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/limit.h"

/* ---- a trace writer ---- */

/*
 * Header, maps and stacks are written here record by record; events go
 * through the encoder (format/heapenc.c) the way libkiln.so's writer
 * sends them: one run per thread batch, emitted up to a time limit.
 */
struct tw {
	struct kiln_hcols c;	/* records of the frame being built */
	struct kiln_buf f;	/* the file: frames */
	size_t nframes;
	struct kiln_henc enc;
	bool enc_ready;
	uint64_t bt;		/* time of the batch's last event */
	struct kiln_hev run[1024];
	size_t nrun;
};

#define TW_INIT { { { KILN_BUF_INIT } } }


/* Raw bytes in a column. */
static void tw_raw(struct tw *w, int col, const char *bytes, size_t n)
{
	assert_int_equal(kiln_buf_add(&w->c.c[col], bytes, n), 0);
}

static void tw_header(struct tw *w, uint64_t sample)
{
	if (!w->enc_ready) {
		kiln_henc_init(&w->enc);
		w->enc.tick_ns = 1;	/* exact times, for exact peak times */
		w->enc_ready = true;
	}
	assert_int_equal(kiln_hcols_header(&w->c, 4242, 1, 1700000000000000000ull,
					   sample, "prog\0--flag\0", 12), 0);
}

static void tw_maps(struct tw *w, const char *text)
{
	assert_int_equal(kiln_hcols_maps(&w->c, text, strlen(text)), 0);
}

static void tw_stack(struct tw *w, uint64_t id, int depth, ...)
{
	uint64_t pcs[16];
	va_list ap;
	int i;

	assert_true(depth <= 16);
	va_start(ap, depth);
	for (i = 0; i < depth; i++)
		pcs[i] = va_arg(ap, uint64_t);
	va_end(ap);
	assert_int_equal(kiln_hcols_stack(&w->c, id, pcs, (size_t)depth), 0);
}

/* Hands the batch's events to the encoder as one run. */
static void tw_commit(struct tw *w)
{
	struct kiln_hev *e = kiln_henc_reserve(&w->enc, w->nrun);

	assert_non_null(e);
	memcpy(e, w->run, w->nrun * sizeof(*e));
	assert_int_equal(kiln_henc_commit(&w->enc, w->nrun), 0);
	w->nrun = 0;
}

/* A thread's events from time t0 on (dt: since the previous one). */
static void tw_batch(struct tw *w, uint64_t tid, uint64_t t0)
{
	tw_commit(w);
	w->bt = t0;
}

static void tw_ev(struct tw *w, uint64_t dt, uint64_t tid, uint32_t kind,
		  uint64_t ptr, uint64_t size, uint64_t stack)
{
	struct kiln_hev *e;

	assert_true(w->nrun < 1024);
	e = &w->run[w->nrun++];
	w->bt += dt;
	memset(e, 0, sizeof(*e));
	e->t = w->bt;
	e->tid = (uint32_t)tid;
	e->kind = kind;
	e->ptr = ptr;
	e->size = size;
	e->stack = (uint32_t)stack;
}

static void tw_alloc(struct tw *w, uint64_t dt, uint64_t tid, uint64_t ptr,
		     uint64_t size, uint64_t stack)
{
	tw_ev(w, dt, tid, KILN_HEV_ALLOC, ptr, size, stack);
}

static void tw_free(struct tw *w, uint64_t dt, uint64_t tid, uint64_t ptr)
{
	tw_ev(w, dt, tid, KILN_HEV_FREE, ptr, 0, 0);
}

static void tw_end(struct tw *w, uint64_t dt)
{
	tw_ev(w, dt, 1, KILN_HEV_END, 0, 0, 0);
}

/* Emits the events before `limit` (a writer round that began then). */
static void tw_emit(struct tw *w, uint64_t limit)
{
	tw_commit(w);
	assert_int_equal(kiln_henc_emit(&w->enc, limit, &w->c, NULL, NULL), 0);
}

/* Compresses raw frame contents into one frame of the file. */
static void tw_raw_frame(struct tw *w, const char *data, size_t len)
{
	size_t cap = ZSTD_compressBound(len), n;

	assert_int_equal(kiln_buf_grow(&w->f, cap + 1), 0);
	n = ZSTD_compress(w->f.data + w->f.len, cap, data, len, 3);
	assert_false(ZSTD_isError(n));
	w->f.len += n;
	w->nframes++;
}

/* The pending records as one frame of the file. */
static void tw_frame_only(struct tw *w)
{
	const struct kiln_hcols *parts[1] = { &w->c };
	struct kiln_buf raw = KILN_BUF_INIT;

	assert_int_equal(kiln_hcols_frame(parts, 1, w->nframes == 0, &raw), 0);
	tw_raw_frame(w, raw.data, raw.len);
	kiln_buf_release(&raw);
	kiln_hcols_reset(&w->c);
}

/* Emits every event and writes the frame. */
static void tw_frame(struct tw *w)
{
	tw_emit(w, UINT64_MAX);
	tw_frame_only(w);
}

static void tw_release(struct tw *w)
{
	kiln_henc_release(&w->enc);
	kiln_hcols_release(&w->c);
	kiln_buf_release(&w->f);
}

static struct kiln_hprof *analyse(struct tw *w, struct kiln_heaptrace_info *info)
{
	struct kiln_diag d = { "" };
	struct kiln_hprof *h = NULL;
	int err = kiln_heaptrace_analyse(w->f.data, w->f.len, &h, info, &d);

	if (err)
		fail_msg("analyse: %d %s", err, d.msg);
	return h;
}

/* ---- tests ---- */

#define MAPS "00400000-00500000 r-xp 00000000 08:01 42 /nonexistent/prog\n"

/*
 * One thread: a 100-byte block (stack 1), a 200-byte block (stack 2),
 * the first freed, a 50-byte block freed at once (temporary), and a
 * realloc (free + alloc) that is not temporary.
 */
/* The decoder's inline copy of the event records' columns is the
 * format's (format/heapcols.c). */
static void test_event_cols(void **state)
{
	(void)state;
	assert_int_equal(kiln_heaptrace_event_cols(), 0);
}

static void test_single_thread(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;

	tw_header(&w, 0);
	tw_maps(&w, MAPS);
	tw_stack(&w, 1, 2, (uint64_t)0x400100, (uint64_t)0x400200);
	tw_stack(&w, 2, 1, (uint64_t)0x400300);
	tw_batch(&w, 7, 1000000);
	tw_alloc(&w, 10, 7, 0x1000, 100, 1);	/* t 1000010: 100 live */
	tw_alloc(&w, 10, 7, 0x2000, 200, 2);	/* 1000020: 300, the peak */
	tw_free(&w, 10, 7, 0x1000);		/* 200 */
	tw_alloc(&w, 10, 7, 0x3000, 50, 1);	/* 250 */
	tw_free(&w, 10, 7, 0x3000);		/* 200: temporary */
	tw_alloc(&w, 10, 7, 0x4000, 30, 1);	/* 230 */
	tw_free(&w, 10, 7, 0x2000);		/* 30: not temporary */
	tw_end(&w, 1000);
	tw_frame(&w);
	h = analyse(&w, &info);
	assert_int_equal(info.pid, 4242);
	assert_int_equal(info.frames, 1);
	assert_false(info.truncated);
	assert_string_equal(info.cmdline, "prog --flag");
	assert_true(h->tot.calls == 4);
	assert_true(h->tot.allocated == 380);
	assert_true(h->tot.peak == 300);
	assert_true(h->tot.peak_objs == 2);
	assert_int_equal(h->tot.peak_t, 10);	/* after the first event */
	assert_true(h->tot.leaked == 30);
	assert_true(h->tot.leaked_objs == 1);
	assert_true(h->tot.temporary == 1);
	assert_true(h->tot.cross_thread == 0);
	assert_int_equal(h->tot.unknown_frees, 0);
	assert_int_equal(h->tot.late, 0);
	assert_true(h->tot.ended);
	assert_int_equal(h->tot.t_last - h->tot.t_first, 1060);
	/* per stack */
	assert_true(h->sites[1].calls == 3 && h->sites[1].bytes == 180);
	assert_true(h->sites[1].peak_bytes == 100 && h->sites[1].peak_objs == 1);
	assert_true(h->sites[1].live_bytes == 30 && h->sites[1].temporary == 1);
	assert_true(h->sites[2].peak_bytes == 200 && h->sites[2].live_bytes == 0);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

/*
 * Two threads whose events reach the writer out of time order: thread 2's
 * run (frees at t 200 and 400) comes before thread 1's (allocs at t 100,
 * 300 and 500); in the second case over two writer rounds, the first
 * starting at t 250 (free 400 waits for the second) with a frame written
 * in between.  The merge must put each alloc before its free, count the
 * cross-thread frees and find no leak but the last block.
 */
static void cross_thread(bool split_frames)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_batch(&w, 2, 0);
	tw_free(&w, 200, 2, 0xa000);		/* t 200 */
	tw_free(&w, 200, 2, 0xb000);		/* t 400 */
	tw_batch(&w, 1, 100);
	tw_alloc(&w, 0, 1, 0xa000, 64, 1);	/* t 100 */
	if (split_frames) {
		tw_emit(&w, 250);
		tw_frame_only(&w);
		tw_batch(&w, 1, 100);
	}
	tw_alloc(&w, 200, 1, 0xb000, 32, 1);	/* t 300 */
	tw_alloc(&w, 200, 1, 0xc000, 8, 1);	/* t 500, leaked */
	tw_frame(&w);
	h = analyse(&w, &info);
	assert_int_equal(info.threads, 2);
	assert_int_equal(h->tot.unknown_frees, 0);
	assert_int_equal(h->tot.late, 0);
	assert_true(h->tot.cross_thread == 2);
	assert_true(h->tot.calls == 3);
	/* 64 at t100, 0 at t200, 32 at t300: the peak is 64 at t 100 */
	assert_true(h->tot.peak == 64);
	assert_int_equal(h->tot.peak_t, 0);
	assert_true(h->tot.leaked == 8);
	assert_false(h->tot.ended);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

static void test_cross_thread(void **state)
{
	cross_thread(false);
}

static void test_cross_thread_frames(void **state)
{
	cross_thread(true);
}

/*
 * Temporary allocations as heaptrack counts them: freed by the very next
 * heap event, whichever thread makes it.  An allocation of another
 * thread in between breaks it.
 */
static void test_temporary(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_stack(&w, 2, 1, (uint64_t)0x400200);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 10, 1, 0x10, 16, 1);	/* t10 */
	tw_free(&w, 10, 1, 0x10);		/* t20: temporary */
	tw_alloc(&w, 10, 1, 0x20, 16, 1);	/* t30 */
	tw_free(&w, 20, 1, 0x20);		/* t50: not (t40 between) */
	tw_batch(&w, 2, 40);
	tw_alloc(&w, 0, 2, 0x30, 16, 2);	/* t40 */
	tw_free(&w, 20, 2, 0x30);		/* t60: t50 free between: no */
	tw_free(&w, 0, 2, 0x999);		/* t60: never allocated */
	tw_frame(&w);
	/* The writer leaves out the free of a block it never saw. */
	assert_int_equal(w.enc.unknown_frees, 1);
	h = analyse(&w, &info);
	assert_true(h->tot.temporary == 1);
	assert_true(h->sites[1].temporary == 1);
	assert_true(h->sites[2].temporary == 0);
	assert_int_equal(h->tot.unknown_frees, 0);
	assert_true(h->tot.peak == 32);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

/*
 * The bytes each stack has live at the peak, not at the end: stack 2
 * grows after the peak moment, stack 1 shrinks.
 */
static void test_peak_per_stack(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;
	struct kiln_prof *p;
	long *so;
	int i;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_stack(&w, 2, 1, (uint64_t)0x400200);
	tw_stack(&w, 3, 1, (uint64_t)0x400300);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 1, 1, 0x100, 1000, 1);	/* 1000 */
	tw_alloc(&w, 1, 1, 0x200, 1000, 1);	/* 2000 */
	tw_alloc(&w, 1, 1, 0x300, 500, 2);	/* 2500: peak (2 @1, 1 @2) */
	tw_free(&w, 1, 1, 0x100);		/* 1500 */
	tw_free(&w, 1, 1, 0x200);		/* 500 */
	tw_alloc(&w, 1, 1, 0x400, 700, 2);	/* 1200 */
	tw_alloc(&w, 1, 1, 0x500, 1200, 2);	/* 2400 < peak */
	tw_alloc(&w, 1, 1, 0x600, 10, 3);	/* 2410 */
	tw_free(&w, 1, 1, 0x300);		/* 1910 */
	tw_frame(&w);
	h = analyse(&w, &info);
	assert_true(h->tot.peak == 2500);
	assert_int_equal(h->tot.peak_t, 2);
	assert_true(h->sites[1].peak_bytes == 2000 && h->sites[1].peak_objs == 2);
	assert_true(h->sites[2].peak_bytes == 500 && h->sites[2].peak_objs == 1);
	assert_true(h->sites[3].peak_bytes == 0);
	assert_true(h->tot.leaked == 1910);
	/* The same numbers in the pprof layout. */
	p = kiln_prof_new();
	assert_int_equal(kiln_hprof_prof(h, KILN_HPROF_GO, p, &so), 0);
	assert_int_equal(p->ntypes, 6);
	assert_string_equal(kiln_prof_str(p, p->types[5].type), "peak_space");
	assert_string_equal(kiln_prof_str(p, p->period_type.type), "space");
	assert_int_equal(p->period, 1);
	for (i = 1; i <= 3; i++)
		assert_true(so[i] >= 0);
	assert_int_equal(kiln_prof_value(p, (size_t)so[1], 0), 2);	/* objects */
	assert_int_equal(kiln_prof_value(p, (size_t)so[1], 1), 2000);
	assert_int_equal(kiln_prof_value(p, (size_t)so[1], 3), 0);	/* inuse */
	assert_int_equal(kiln_prof_value(p, (size_t)so[2], 3), 1900);
	assert_int_equal(kiln_prof_value(p, (size_t)so[2], 2), 2);
	assert_int_equal(kiln_prof_value(p, (size_t)so[2], 5), 500);
	assert_int_equal(kiln_prof_value(p, (size_t)so[3], 5), 0);
	assert_int_equal(kiln_prof_total(p, 3), 1910);
	/* locations at pc - 1 */
	assert_int_equal(p->locations[p->stacks[p->samples[so[1]].stack]].address,
			 0x4000ff);
	free(so);
	kiln_prof_free(p);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

/* The trace of test_peak_per_stack analysed over a time range [t0, t1)
 * (ns after the first event; its events are 1 ns apart). */
static struct kiln_hprof *analyse_range(uint64_t t0, uint64_t t1,
				       struct kiln_heaptrace_info *info)
{
	struct kiln_diag d = { "" };
	struct tw w = TW_INIT;
	struct kiln_heaptrace_stream *s;
	struct kiln_hprof *h = NULL;
	size_t used;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_stack(&w, 2, 1, (uint64_t)0x400200);
	tw_stack(&w, 3, 1, (uint64_t)0x400300);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 1, 1, 0x100, 1000, 1);	/* 0: 1000 */
	tw_alloc(&w, 1, 1, 0x200, 1000, 1);	/* 1: 2000 */
	tw_alloc(&w, 1, 1, 0x300, 500, 2);	/* 2: 2500, the peak */
	tw_free(&w, 1, 1, 0x100);		/* 3: 1500 */
	tw_free(&w, 1, 1, 0x200);		/* 4: 500 */
	tw_alloc(&w, 1, 1, 0x400, 700, 2);	/* 5: 1200 */
	tw_alloc(&w, 1, 1, 0x500, 1200, 2);	/* 6: 2400 */
	tw_alloc(&w, 1, 1, 0x600, 10, 3);	/* 7: 2410 */
	tw_free(&w, 1, 1, 0x300);		/* 8: 1910 */
	tw_frame(&w);
	s = kiln_heaptrace_stream_new(info, &d);
	assert_non_null(s);
	assert_int_equal(kiln_heaptrace_stream_window(s, t0, t1), 0);
	assert_int_equal(kiln_heaptrace_stream_feed(s, w.f.data, w.f.len, true, &used), 0);
	assert_int_equal(kiln_heaptrace_stream_end(s, w.f.len, &h), 0);
	/* A window is set before the first event, never after. */
	assert_int_equal(kiln_heaptrace_stream_window(s, t0, t1), -EINVAL);
	kiln_heaptrace_stream_free(s);
	tw_release(&w);
	return h;
}

/* A time range: allocated and calls count what happened in it; the peak
 * is the largest size within it, blocks from before included; leaked is
 * what it allocated that is still live at its end; later events are
 * ignored. */
static void test_window(void **state)
{
	struct kiln_heaptrace_info info;
	struct kiln_hprof *h;

	h = analyse_range(4, 7, &info);
	assert_true(h->tot.allocated == 1900 && h->tot.calls == 2);
	assert_true(h->tot.peak == 2400 && h->tot.peak_t == 6);
	assert_true(h->sites[2].peak_bytes == 2400 && h->sites[1].peak_bytes == 0);
	assert_true(h->tot.leaked == 1900 && h->tot.leaked_objs == 2);
	assert_true(h->sites[2].live_bytes == 1900 && h->sites[3].live_bytes == 0);
	assert_true(h->sites[3].calls == 0);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);

	/* Only a free in the range: the heap at its start is its peak. */
	h = analyse_range(3, 4, &info);
	assert_true(h->tot.allocated == 0 && h->tot.leaked == 0);
	assert_true(h->tot.peak == 2500 && h->tot.peak_t == 3);
	assert_true(h->sites[1].peak_bytes == 2000 && h->sites[2].peak_bytes == 500);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);

	/* Nothing in the range (after the last event): the heap at the end. */
	h = analyse_range(100, 200, &info);
	assert_true(h->tot.allocated == 0 && h->tot.peak == 1910);
	assert_true(h->sites[2].peak_bytes == 1900 && h->sites[3].peak_bytes == 10);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);

	/* The whole run as a range: the measures without one. */
	h = analyse_range(0, 9, &info);
	assert_true(h->tot.allocated == 4410 && h->tot.peak == 2500);
	assert_true(h->tot.leaked == 1910 && h->tot.peak_t == 2);
	assert_true(h->sites[1].peak_bytes == 2000 && h->sites[2].live_bytes == 1900);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	(void)state;
}

/*
 * The time index (kiln serve's ranges): a trace of many frames, three
 * threads (frees across threads), stacks and maps defined along the way,
 * blocks living across many frames, temporary allocations within frames
 * and across their ends (where the marks are), the heap growing to a peak
 * in the run's middle; every range read from the index's marks -- most
 * of them in stretches, the whole stretches in between not read again --
 * gives exactly the profile of reading it from the start (sampled: to
 * rounding).
 */
static void index_case(uint64_t sample)
{
	struct kiln_diag d = { "" };
	struct tw w = TW_INIT;
	struct kiln_heaptrace_info info;
	struct kiln_heaptrace_index *x = NULL;
	struct kiln_hprof *h = NULL;
	uint64_t ptrs[512] = { 0 }, t = 0, next = 0x1000, end, pending = 0;
	uint32_t stacks = 2, i, f;
	size_t bytes, k, fast, skipped, v;
	char maps[128];

	tw_header(&w, sample);
	tw_maps(&w, MAPS);
	tw_stack(&w, 1, 2, (uint64_t)0x400100, (uint64_t)0x400800);
	tw_stack(&w, 2, 2, (uint64_t)0x400200, (uint64_t)0x400800);
	for (f = 0; f < 200; f++) {
		if (f % 20 == 19) {	/* a new stack, and sometimes new maps */
			if (f % 40 == 39) {
				snprintf(maps, sizeof(maps), "%s00600000-00700000 "
					 "r-xp 00000000 08:01 43 /lib%u.so\n", MAPS, f);
				tw_maps(&w, maps);
			}
			stacks++;
			tw_stack(&w, stacks, 2, (uint64_t)0x400000 + stacks * 0x10,
				 (uint64_t)0x400800);
		}
		for (i = 0; i < 60; i++) {
			uint64_t tid = 1 + (f + i) % 3, slot = (f * 61 + i * 7) % 512;

			if (i % 20 == 0)
				tw_batch(&w, tid, t);
			t += 1000;
			if (pending) {	/* allocated last, before the frame's end */
				tw_free(&w, 1000, tid, pending);
				pending = 0;
			} else if (ptrs[slot] && (i & 1) && (f < 90 || f > 110)) {
				tw_free(&w, 1000, tid, ptrs[slot]);
				ptrs[slot] = 0;
			} else if (!ptrs[slot]) {
				ptrs[slot] = next;
				next += 0x100;
				tw_alloc(&w, 1000, tid, ptrs[slot],
					 16 + (f * 7 + i) % 300 + (f > 90 && f < 110) * 4000,
					 1 + (f + i) % stacks);
			} else {
				tw_alloc(&w, 1000, tid, next, 40, 1 + i % stacks);
				tw_free(&w, 1, tid, next);	/* temporary */
				next += 0x100;
			}
		}
		if (f % 3 == 1) {	/* freed first thing in the next frame */
			pending = next;
			next += 0x100;
			tw_alloc(&w, 1000, 1, pending, 24, 1 + f % stacks);
		}
		tw_frame(&w);
	}
	end = w.bt + 10;
	assert_int_equal(kiln_heaptrace_analyse_index(w.f.data, w.f.len, NULL, NULL,
						      &h, &info, &x, &d), 0);
	assert_true(kiln_heaptrace_index_marks(x, &bytes) >= 32);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	for (k = 0; k < 60; k++) {
		uint64_t t0 = (end * (k * 37 % 40)) / 41 + k, t1 = t0 + 1 + end * (k % 7) / 9;
		struct kiln_prof *a = kiln_prof_new(), *b = kiln_prof_new();

		if (k >= 40) {	/* ranges about the peak, from its middle */
			t0 = end * (k - 40) / 60;
			t1 = end - end * (k - 40) / 50;
		}
		assert_non_null(a);
		assert_non_null(b);
		assert_int_equal(kiln_heaptrace_read_range(a, w.f.data, w.f.len, NULL,
							   t0, t1, NULL, NULL, &d), 0);
		assert_int_equal(kiln_heaptrace_read_range(b, w.f.data, w.f.len, x,
							   t0, t1, NULL, NULL, &d), 0);
		assert_int_equal(a->nsamples, b->nsamples);
		assert_int_equal(a->ntypes, b->ntypes);
		assert_int_equal(a->duration_nanos, b->duration_nanos);
		if (!sample)
			assert_memory_equal(a->values, b->values,
					    a->nsamples * a->ntypes * sizeof(*a->values));
		for (v = 0; v < a->nsamples * a->ntypes; v++)
			assert_true(llabs(a->values[v] - b->values[v]) <= 1);
		kiln_prof_free(a);
		kiln_prof_free(b);
	}
	/* Most ranges were read in stretches. */
	kiln_heaptrace_index_stats(x, &fast, &skipped);
	assert_true(fast >= 30);
	assert_true(skipped >= fast * 4);
	kiln_heaptrace_index_free(x);
	tw_release(&w);
}

static void test_index(void **state)
{
	index_case(0);
	index_case(64);
	(void)state;
}

/*
 * A trace whose blocks live on (a leak in every frame): the marks keep
 * each block once, not once per mark -- 200 frames of 100 blocks would
 * take 32 MiB copied at every mark, and stop the marks at the budget --
 * and ranges read from them are still exact.
 */
static void test_index_shared(void **state)
{
	struct kiln_diag d = { "" };
	struct tw w = TW_INIT;
	struct kiln_heaptrace_info info;
	struct kiln_heaptrace_index *x = NULL;
	struct kiln_hprof *h = NULL;
	uint64_t t = 0, next = 0x1000, end;
	size_t bytes, marks, k;
	uint32_t f, i;

	tw_header(&w, 0);
	tw_maps(&w, MAPS);
	tw_stack(&w, 1, 2, (uint64_t)0x400100, (uint64_t)0x400800);
	tw_stack(&w, 2, 2, (uint64_t)0x400200, (uint64_t)0x400800);
	for (f = 0; f < 200; f++) {
		tw_batch(&w, 1, t);
		for (i = 0; i < 100; i++) {
			t += 1000;
			tw_alloc(&w, 1000, 1, next, 64 + i, 1 + i % 2);
			if (i % 10 == 9 && f % 2)	/* and some go */
				tw_free(&w, 1, 1, next - 0x100 * 5);
			next += 0x100;
		}
		tw_frame(&w);
	}
	end = w.bt + 10;
	assert_int_equal(kiln_heaptrace_analyse_index(w.f.data, w.f.len, NULL, NULL,
						      &h, &info, &x, &d), 0);
	marks = kiln_heaptrace_index_marks(x, &bytes);
	assert_true(marks >= 60);
	assert_true(bytes < (size_t)4 << 20);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	for (k = 0; k < 10; k++) {
		uint64_t t0 = end * k / 11, t1 = t0 + end * (k + 1) / 12;
		struct kiln_prof *a = kiln_prof_new(), *b = kiln_prof_new();

		assert_int_equal(kiln_heaptrace_read_range(a, w.f.data, w.f.len, NULL,
							   t0, t1, NULL, NULL, &d), 0);
		assert_int_equal(kiln_heaptrace_read_range(b, w.f.data, w.f.len, x,
							   t0, t1, NULL, NULL, &d), 0);
		assert_int_equal(a->nsamples, b->nsamples);
		assert_memory_equal(a->values, b->values,
				    a->nsamples * a->ntypes * sizeof(*a->values));
		kiln_prof_free(a);
		kiln_prof_free(b);
	}
	kiln_heaptrace_index_free(x);
	tw_release(&w);
	(void)state;
}

/* ---- the allocation list (heaptrace-allocs.c) ---- */

struct blk {
	uint64_t t, freed, size, id;	/* ns after the first event; NONE */
	uint32_t stack, tid;
};

#define NONE UINT64_MAX

static int blk_order(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether block b passes q, knowing everything (end: the last event). */
static bool blk_passes(const struct blk *b, const struct kiln_heaptrace_allocq *q,
		       uint64_t end)
{
	uint64_t life = (b->freed != NONE ? b->freed : end) - b->t;

	return b->t >= q->t0 && b->t < q->t1 &&
	       (!q->alive || (b->t <= q->alive_at &&
			      (b->freed == NONE || b->freed > q->alive_at))) &&
	       life >= q->life_min && life <= q->life_max &&
	       b->size >= q->size_min && b->size <= q->size_max &&
	       (!q->site || b->stack == q->site);
}

/*
 * A trace of three threads allocating and freeing at random (frees by
 * other threads too), 150 frames; every filter of the list, read from
 * the start and from the time index, against the blocks as written.
 */
static void test_allocs(void **state)
{
	struct kiln_diag d = { "" };
	struct tw w = TW_INIT;
	struct kiln_heaptrace_info info;
	struct kiln_heaptrace_index *x = NULL;
	struct kiln_hprof *h = NULL;
	static struct blk blks[8000];
	size_t nblk = 0, live[300], f, i, k, qi, nq;
	uint64_t t = 5000, t_first = 0, end, seed = 42, num[4] = { 0 };
	struct kiln_heaptrace_allocq qs[16];
	size_t expect[8000];

	for (i = 0; i < 300; i++)
		live[i] = SIZE_MAX;
	tw_header(&w, 0);
	tw_maps(&w, MAPS);
	for (i = 1; i <= 4; i++)
		tw_stack(&w, i, 2, (uint64_t)0x400100 + i * 0x10, (uint64_t)0x400800);
	for (f = 0; f < 150; f++) {
		tw_batch(&w, 1, t);
		for (i = 0; i < 50; i++) {
			size_t slot;
			uint32_t tid;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			slot = (seed >> 33) % 300;
			tid = 1 + (uint32_t)((seed >> 20) % 3);
			t += 1 + (seed >> 50) % 3000;
			if (live[slot] != SIZE_MAX && (seed >> 13) % 3) {
				struct blk *b = &blks[live[slot]];

				tw_free(&w, t - w.bt, tid, 0x10000 + slot * 0x100);
				b->freed = t;
				live[slot] = SIZE_MAX;
			} else if (live[slot] == SIZE_MAX) {
				struct blk *b = &blks[nblk];

				b->t = t;
				b->size = 1 + (seed >> 40) % 5000;
				b->stack = 1 + (uint32_t)((seed >> 7) % 4);
				b->tid = tid;
				b->freed = NONE;
				b->id = ((uint64_t)tid << 42 | num[tid]++) + 1;
				if (!nblk)
					t_first = t;
				tw_alloc(&w, t - w.bt, tid, 0x10000 + slot * 0x100,
					 b->size, b->stack);
				live[slot] = nblk++;
			}
		}
		tw_frame(&w);
	}
	t += 100;
	tw_batch(&w, 1, t);
	tw_end(&w, 0);
	tw_frame(&w);
	end = t - t_first;
	for (i = 0; i < nblk; i++) {
		blks[i].t -= t_first;
		if (blks[i].freed != NONE)
			blks[i].freed -= t_first;
	}
	qsort(blks, nblk, sizeof(*blks), blk_order);
	assert_int_equal(kiln_heaptrace_analyse_index(w.f.data, w.f.len, NULL, NULL,
						      &h, &info, &x, &d), 0);
	assert_true(kiln_heaptrace_index_marks(x, &k) >= 32);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);

	/* Each query: the defaults (everything, a page of 10000) changed. */
	for (nq = 0; nq < 12; nq++) {
		memset(&qs[nq], 0, sizeof(qs[nq]));
		qs[nq].t1 = qs[nq].life_max = qs[nq].size_max = NONE;
		qs[nq].n = 10000;
	}
	qs[1].alive = true, qs[1].alive_at = end;		/* leaks */
	qs[2].alive = true, qs[2].alive_at = end, qs[2].life_min = end / 20;
	qs[3].alive = true, qs[3].alive_at = end * 2 / 3;
	qs[4].alive = true, qs[4].alive_at = end / 3;
	qs[4].life_min = 20000, qs[4].life_max = 400000;
	qs[5].t0 = end / 4, qs[5].t1 = end / 2;
	qs[6].t0 = end / 4, qs[6].t1 = end / 2, qs[6].life_max = 30000;
	qs[7].t0 = end / 5, qs[7].t1 = end / 3, qs[7].life_min = 100000;
	qs[8].size_min = 1000, qs[8].size_max = 2000, qs[8].site = 3;
	qs[9].t0 = end / 2, qs[9].site = 2, qs[9].life_min = 1000;
	qs[9].offset = 7, qs[9].n = 11;
	qs[10].alive = true, qs[10].alive_at = end * 9 / 10, qs[10].t0 = end / 2;
	qs[10].offset = 3, qs[10].n = 5;
	/* Decided by the allocation, a page of a few: only the page's blocks
	 * followed to their frees. */
	qs[11].t0 = end / 3, qs[11].size_max = 2500;
	qs[11].offset = 5, qs[11].n = 9;
	for (qi = 0; qi < nq; qi++) {
		const struct kiln_heaptrace_allocq *q = &qs[qi];
		struct kiln_heaptrace_allocs a[2];
		size_t ne = 0, shown, v;
		uint64_t bytes = 0;

		for (i = 0; i < nblk; i++)
			if (blk_passes(&blks[i], q, end)) {
				expect[ne++] = i;
				bytes += blks[i].size;
			}
		/* Every query has blocks that pass and blocks that do not. */
		if (!ne || (ne == nblk && qi))
			fail_msg("query %zu: %zu of %zu blocks pass", qi, ne, nblk);
		for (v = 0; v < 2; v++) {
			assert_int_equal(kiln_heaptrace_allocs(w.f.data, w.f.len,
							       v ? x : NULL, q, NULL,
							       NULL, &a[v], &d), 0);
			if (a[v].count != ne)
				fail_msg("query %zu (%s the index): %llu blocks, want %zu",
					 qi, v ? "with" : "without",
					 (unsigned long long)a[v].count, ne);
			assert_int_equal((uint64_t)a[v].bytes, bytes);
			shown = ne > q->offset ? ne - q->offset : 0;
			shown = shown < q->n ? shown : q->n;
			assert_int_equal(a[v].n, shown);
			for (i = 0; i < shown; i++) {
				const struct blk *b = &blks[expect[q->offset + i]];
				const struct kiln_heaptrace_alloc *g = &a[v].a[i];

				assert_int_equal(g->t, b->t);
				assert_int_equal(g->size, b->size);
				assert_int_equal(g->stack, b->stack);
				assert_int_equal(g->tid, b->tid);
				/* The free when it was read, else none. */
				assert_int_equal(g->freed, b->freed != NONE &&
						 b->freed <= a[v].read_to ? b->freed : NONE);
			}
		}
		/* The index reads less, never more. */
		assert_true(a[1].bytes_read <= a[0].bytes_read);
		if (qi == 1)	/* the leaks: the index's mark of the end */
			assert_int_equal(a[1].bytes_read, 0);
		if (qi == 3)	/* from the mark before, not the start */
			assert_true(a[1].bytes_read * 16 < w.f.len);
		kiln_heaptrace_allocs_release(&a[0]);
		kiln_heaptrace_allocs_release(&a[1]);
	}
	kiln_heaptrace_index_free(x);
	tw_release(&w);
	(void)state;
}

/* Sampling: every measure scaled by 1/(1-exp(-size/R)). */
static void test_sampling(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;
	struct kiln_prof *p;
	double w1 = 1 / (1 - exp(-1000.0 / 4096)), w2 = 1 / (1 - exp(-100000.0 / 4096));
	long *so;

	tw_header(&w, 4096);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_stack(&w, 2, 1, (uint64_t)0x400200);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 1, 1, 0x100, 1000, 1);
	tw_alloc(&w, 1, 1, 0x200, 100000, 2);
	tw_free(&w, 1, 1, 0x200);
	tw_frame(&w);
	h = analyse(&w, &info);
	assert_int_equal(info.sample_bytes, 4096);
	assert_true(fabs(kiln_heapprof_weight(4096, 1000) - w1) < 1e-12);
	assert_true(fabs(h->tot.calls - (w1 + w2)) < 1e-9);
	assert_true(fabs(h->tot.allocated - (1000 * w1 + 100000 * w2)) < 1e-6);
	assert_true(fabs(h->tot.peak - (1000 * w1 + 100000 * w2)) < 1e-6);
	assert_true(fabs(h->tot.leaked - 1000 * w1) < 1e-6);
	assert_true(fabs(h->tot.temporary - w2) < 1e-9);
	assert_int_equal(h->tot.reported, 2);
	p = kiln_prof_new();
	assert_int_equal(kiln_hprof_prof(h, KILN_HPROF_GO, p, &so), 0);
	assert_int_equal(p->period, 4096);
	assert_int_equal(kiln_prof_value(p, (size_t)so[1], 1), llround(1000 * w1));
	assert_int_equal(kiln_prof_value(p, (size_t)so[1], 0), llround(w1));
	assert_int_equal(kiln_prof_value(p, (size_t)so[2], 1), llround(100000 * w2));
	assert_int_equal(kiln_prof_value(p, (size_t)so[2], 3), 0);
	free(so);
	kiln_prof_free(p);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

/* Three frames, the last cut: read up to the second, and said so. */
static void test_truncated(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;
	size_t two, cut;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 5, 1, 0x100, 10, 1);
	tw_frame(&w);
	tw_batch(&w, 1, 5);
	tw_alloc(&w, 5, 1, 0x200, 20, 1);
	tw_frame(&w);
	two = w.f.len;
	tw_batch(&w, 1, 10);
	tw_alloc(&w, 5, 1, 0x300, 40, 1);
	tw_free(&w, 5, 1, 0x100);
	tw_frame(&w);
	for (cut = two + 1; cut < w.f.len; cut += 3) {
		struct kiln_diag d = { "" };

		assert_int_equal(kiln_heaptrace_analyse(w.f.data, cut, &h, &info, &d), 0);
		assert_true(info.truncated);
		assert_int_equal(info.truncated_at, two);
		assert_int_equal(info.frames, 2);
		assert_true(h->tot.calls == 2 && h->tot.leaked == 30);
		assert_false(h->tot.ended);
		kiln_hprof_free(h);
		kiln_heaptrace_info_release(&info);
	}
	h = analyse(&w, &info);
	assert_false(info.truncated);
	assert_true(h->tot.calls == 3 && h->tot.leaked == 60 && h->tot.peak == 70);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

/*
 * kiln_heaptrace_peek(): the header's fields from the first bytes of the
 * first frame (what an exec'd image reads of the trace before it), not
 * from a file that is not a trace.
 */
static void test_peek(void **state)
{
	struct kiln_heaptrace_info info = { 0 };
	char junk[64];
	struct tw w = TW_INIT;
	size_t first;

	tw_header(&w, 512);
	tw_maps(&w, "00400000-00401000 r-xp 00000000 08:01 1 /bin/prog\n");
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 5, 1, 0x100, 10, 1);
	tw_frame(&w);
	first = w.f.len;
	tw_batch(&w, 1, 10);
	tw_alloc(&w, 5, 1, 0x300, 40, 1);
	tw_frame(&w);
	assert_int_equal(kiln_heaptrace_peek(w.f.data, w.f.len, &info), 0);
	assert_int_equal(info.pid, 4242);
	assert_int_equal(info.ppid, 1);
	assert_true(info.start_realtime_ns == 1700000000000000000ull);
	assert_int_equal(info.sample_bytes, 512);
	assert_null(info.cmdline);
	memset(&info, 0, sizeof(info));
	assert_int_equal(kiln_heaptrace_peek(w.f.data, first, &info), 0);
	assert_int_equal(info.pid, 4242);
	/* Too little to tell, or not a trace. */
	assert_int_equal(kiln_heaptrace_peek(w.f.data, 4, &info), -EINVAL);
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(kiln_heaptrace_peek(junk, sizeof(junk), &info), -EINVAL);
	tw_release(&w);
}

/*
 * The encoder: two threads taking turns cost no thread records after the
 * first two ('X'), only lower-case tags; time is written once per tick;
 * a new block at a live address frees the old one; an event that reaches
 * the writer after later ones were written (its thread was preempted)
 * still comes after the events it depends on.
 */
static void test_encoder(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;
	size_t i, x = 0, t = 0, lower = 0, remote = 0, start;

	tw_header(&w, 0);
	w.enc.tick_ns = KILN_HENC_TICK_NS;
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	start = w.c.c[KILN_HCOL_TAG].len;
	/* 100 rounds of: thread 1 allocates, thread 2 frees it, 10 us apart */
	tw_batch(&w, 1, 1000000);
	for (i = 0; i < 100; i++)
		tw_alloc(&w, i ? 20000 : 0, 1, 0x1000 + 16 * i, 16, 1);
	tw_batch(&w, 2, 1000000);
	for (i = 0; i < 100; i++)
		tw_free(&w, 10000 + (i ? 10000 : 0), 2, 0x1000 + 16 * i);
	tw_emit(&w, UINT64_MAX);
	for (i = start; i < w.c.c[KILN_HCOL_TAG].len; i++) {
		unsigned char c = (unsigned char)w.c.c[KILN_HCOL_TAG].data[i];

		x += c == 'X';
		t += c == 'T';
		lower += c == 'a' || c == 'f' || c == 'r';
		remote += c == 'R' || c == 'r';
	}
	/* 2 X records, then lower-case tags; one T per 100 us of the 2 ms */
	assert_int_equal(x, 2);
	assert_true(lower >= 198);
	assert_int_equal(remote, 100);	/* frees of another thread's blocks */
	assert_true(t >= 20 && t <= 30);
	/* A block at a live address: the old one is gone. */
	tw_batch(&w, 1, 5000000);
	tw_alloc(&w, 0, 1, 0x9000, 100, 1);
	tw_alloc(&w, 10, 1, 0x9000, 200, 1);
	tw_emit(&w, UINT64_MAX);
	assert_int_equal(w.enc.reused, 1);
	/*
	 * A late event: thread 2 timed an allocation at 6000050 but put it
	 * in its ring after the writer's round 1 began (6000100).  Thread 1
	 * frees that block at 6000150: after the allocation returned, so
	 * after it was put; round 1 holds the free back, round 2 gets both.
	 */
	tw_batch(&w, 1, 6000060);
	tw_alloc(&w, 0, 1, 0x6000, 8, 1);	/* 6000060: round 1 */
	tw_free(&w, 90, 1, 0x7000);		/* 6000150: waits */
	tw_emit(&w, 6000100);
	tw_frame_only(&w);
	tw_batch(&w, 2, 6000050);
	tw_alloc(&w, 0, 2, 0x7000, 4, 1);	/* late */
	tw_frame(&w);
	h = analyse(&w, &info);
	assert_int_equal(info.threads, 2);
	assert_true(h->tot.calls == 100 + 2 + 2);
	assert_true(h->tot.leaked == 200 + 8);
	assert_true(h->tot.cross_thread == 100 + 1);
	assert_int_equal(w.enc.unknown_frees, 0);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

/* What the encoder hands its callback, in order. */
struct seen {
	struct kiln_hev ev[8];
	size_t n;
};

static void seen_event(void *arg, const struct kiln_hev *v)
{
	struct seen *s = arg;

	if (s->n < 8)
		s->ev[s->n++] = *v;
}

/* One event of thread tid into the encoder, a run of its own. */
static void enc_event(struct kiln_henc *e, uint64_t t, uint32_t tid,
		      enum kiln_hev_kind kind, uint64_t ptr, uint64_t size,
		      uint32_t stack)
{
	struct kiln_hev *v = kiln_henc_reserve(e, 1);

	assert_non_null(v);
	memset(v, 0, sizeof(*v));
	v->t = t;
	v->tid = tid;
	v->kind = kind;
	v->ptr = ptr;
	v->size = size;
	v->stack = stack;
	assert_int_equal(kiln_henc_commit(e, 1), 0);
}

/*
 * A block allocated at the address of a live one (whose free was never
 * seen) takes its entry: the callback sees the old block freed (its size
 * and stack) before the new one; the trace has the old one freed ('R':
 * another thread's block), and a later free finds the new block, of the
 * thread that made it; the table holds one block, then none.
 */
static void test_encoder_reuse(void **state)
{
	struct kiln_hcols c = { 0 };
	struct kiln_henc e;
	struct seen s = { .n = 0 };
	const char *tags;
	size_t n;

	(void)state;
	kiln_henc_init(&e);
	e.tick_ns = 1;
	enc_event(&e, 100, 1, KILN_HEV_ALLOC, 0x9000, 100, 7);
	enc_event(&e, 200, 2, KILN_HEV_ALLOC, 0x9000, 200, 8);
	enc_event(&e, 300, 1, KILN_HEV_FREE, 0x9000, 0, 0);
	assert_int_equal(kiln_henc_emit(&e, 250, &c, seen_event, &s), 0);
	assert_int_equal(e.reused, 1);
	assert_int_equal(e.live.n, 1);
	assert_int_equal(kiln_henc_emit(&e, UINT64_MAX, &c, seen_event, &s), 0);
	assert_int_equal(e.live.n, 0);
	assert_int_equal(e.unknown_frees, 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.ev[0].kind, KILN_HEV_ALLOC);
	assert_int_equal(s.ev[1].kind, KILN_HEV_FREE);	/* the old block */
	assert_int_equal(s.ev[1].size, 100);
	assert_int_equal(s.ev[1].stack, 7);
	assert_int_equal(s.ev[2].kind, KILN_HEV_ALLOC);
	assert_int_equal(s.ev[2].size, 200);
	assert_int_equal(s.ev[3].kind, KILN_HEV_FREE);	/* the new one */
	assert_int_equal(s.ev[3].size, 200);
	assert_int_equal(s.ev[3].stack, 8);
	/* Tags without the times: A, X R A (thread 2), then thread 1's
	 * free of thread 2's block: r. */
	tags = c.c[KILN_HCOL_TAG].data;
	n = c.c[KILN_HCOL_TAG].len;
	{
		char t[16];
		size_t i, k = 0;

		for (i = 0; i < n && k < sizeof(t) - 1; i++)
			if (tags[i] != 'T')
				t[k++] = tags[i];
		t[k] = '\0';
		assert_string_equal(t, "XAXRAr");
	}
	kiln_hcols_release(&c);
	kiln_henc_release(&e);
}

/*
 * The stream reader, fed the file in pieces of every size (frames cut
 * anywhere until more comes), gives what the whole-file reader gives;
 * with `final` a cut last frame is reported as truncated.
 */
static void test_stream(void **state)
{
	struct tw w = TW_INIT;
	size_t step, two = 0;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	for (int f = 0; f < 3; f++) {
		tw_batch(&w, 1, 100 * (uint64_t)f);
		tw_alloc(&w, 5, 1, 0x100 + 0x100 * (uint64_t)f, 10 << f, 1);
		if (f == 2)
			tw_free(&w, 5, 1, 0x100);
		tw_frame(&w);
		if (f == 1)
			two = w.f.len;
	}
	for (step = 1; step < w.f.len + 8; step += 7) {
		struct kiln_heaptrace_info info;
		struct kiln_diag d = { "" };
		struct kiln_heaptrace_stream *s = kiln_heaptrace_stream_new(&info, &d);
		struct kiln_buf pend = KILN_BUF_INIT;
		struct kiln_hprof *h;
		size_t at = 0, used;

		assert_non_null(s);
		while (at < w.f.len) {
			size_t n = w.f.len - at < step ? w.f.len - at : step;

			kiln_buf_add(&pend, w.f.data + at, n);
			at += n;
			assert_int_equal(kiln_heaptrace_stream_feed(s, pend.data, pend.len,
								    false, &used), 0);
			memmove(pend.data, pend.data + used, pend.len - used);
			pend.len -= used;
		}
		assert_int_equal(kiln_heaptrace_stream_feed(s, pend.data, pend.len,
							    true, &used), 0);
		assert_int_equal(used, pend.len);
		assert_int_equal(kiln_heaptrace_stream_end(s, w.f.len, &h), 0);
		assert_int_equal(info.frames, 3);
		assert_false(info.truncated);
		assert_true(h->tot.calls == 3 && h->tot.leaked == 60 && h->tot.peak == 70);
		kiln_hprof_free(h);
		kiln_heaptrace_stream_free(s);
		kiln_heaptrace_info_release(&info);
		kiln_buf_release(&pend);
	}
	/* Cut in the third frame: final reports it. */
	{
		struct kiln_heaptrace_info info;
		struct kiln_diag d = { "" };
		struct kiln_heaptrace_stream *s = kiln_heaptrace_stream_new(&info, &d);
		struct kiln_hprof *h;
		size_t used;

		assert_int_equal(kiln_heaptrace_stream_feed(s, w.f.data, two + 3, false,
							    &used), 0);
		assert_int_equal(used, two);
		assert_false(info.truncated);
		assert_int_equal(kiln_heaptrace_stream_feed(s, w.f.data + used, 3, true,
							    &used), 0);
		assert_int_equal(used, 0);
		assert_true(info.truncated);
		assert_int_equal(info.truncated_at, two);
		assert_int_equal(kiln_heaptrace_stream_end(s, two + 3, &h), 0);
		assert_true(h->tot.calls == 2);
		kiln_hprof_free(h);
		kiln_heaptrace_stream_free(s);
		kiln_heaptrace_info_release(&info);
	}
	tw_release(&w);
}

/* Expects the trace in w to be refused with a message matching want. */
static void refused(struct tw *w, const char *want)
{
	struct kiln_heaptrace_info info;
	struct kiln_diag d = { "" };
	struct kiln_hprof *h = NULL;
	int err = kiln_heaptrace_analyse(w->f.data, w->f.len, &h, &info, &d);

	kiln_heaptrace_info_release(&info);
	if (err != -EINVAL || !strstr(d.msg, want))
		fail_msg("want -EINVAL '%s', got %d '%s'", want, err, d.msg);
	assert_null(h);
	kiln_hcols_reset(&w->c);
	kiln_buf_reset(&w->f);
	w->nframes = 0;
	kiln_henc_release(&w->enc);
	w->enc_ready = false;
}

static void test_bad_data(void **state)
{
	struct tw w = TW_INIT;
	char want[96];
	size_t at;

	/* an unknown tag: the record's number in its frame */
	tw_header(&w, 0);
	tw_raw(&w, KILN_HCOL_TAG, "Z", 1);
	tw_frame(&w);
	refused(&w, "byte 0 (zstd frame 1), record 2 ('Z'): unknown record tag 0x5a");
	/* a second frame that is not zstd: its file offset */
	tw_header(&w, 0);
	tw_frame(&w);
	at = w.f.len;
	kiln_buf_adds(&w.f, "garbage!garbage!");
	snprintf(want, sizeof(want), "byte %zu (zstd frame 2): not a zstd frame", at);
	refused(&w, want);
	/* magic, version, column table */
	tw_raw_frame(&w, "KILNHEAQ\x02\x07", 10);
	refused(&w, "not a kiln heap trace: no \"KILNHEAP\" magic");
	tw_raw_frame(&w, "KILNHEAP\x03\x07", 10);
	refused(&w, "trace version 3; this kiln reads version 2");
	tw_raw_frame(&w, "KILNHEAP\x02\x03", 10);
	refused(&w, "3 columns; version 2 has 7");
	tw_raw_frame(&w, "KILNHEAP\x02\x07\x50\x00\x00\x00\x00\x00\x00", 17);
	refused(&w, "column 0 runs past the end of the frame");
	tw_raw_frame(&w, "KILNHEAP\x02\x07\x50", 11);
	refused(&w, "column length: the column table ends early");
	/* records */
	tw_raw(&w, KILN_HCOL_TAG, "S", 1);
	tw_frame(&w);
	refused(&w, "record 1 ('S'): the first record is not the header 'H'");
	tw_header(&w, 0);
	tw_stack(&w, 2, 0);
	tw_frame(&w);
	refused(&w, "stack id 2 out of sequence (expected 1)");
	tw_header(&w, 0);
	tw_raw(&w, KILN_HCOL_TAG, "XF", 2);
	tw_raw(&w, KILN_HCOL_MISC, "\x05", 1);
	tw_raw(&w, KILN_HCOL_BACK_LO, "\x00", 1);
	tw_raw(&w, KILN_HCOL_BACK_HI, "\x00", 1);
	tw_frame(&w);
	refused(&w, "a free of the block 1 allocations back in thread 5, which "
		"made only 0");
	tw_header(&w, 0);
	tw_stack(&w, 1, 0);
	tw_raw(&w, KILN_HCOL_TAG, "A", 1);
	tw_raw(&w, KILN_HCOL_SIZE_LO, "\x10", 1);
	tw_raw(&w, KILN_HCOL_SIZE_HI, "\x00", 1);
	tw_raw(&w, KILN_HCOL_STACK, "\x01", 1);
	tw_frame(&w);
	refused(&w, "an event before any thread record");
	tw_header(&w, 0);
	tw_raw(&w, KILN_HCOL_TAG, "L", 1);
	tw_raw(&w, KILN_HCOL_MISC, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 10);
	tw_frame(&w);
	refused(&w, "count: varint larger than 64 bits");
	tw_header(&w, 0);
	tw_raw(&w, KILN_HCOL_TAG, "L", 1);
	tw_raw(&w, KILN_HCOL_MISC, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11);
	tw_frame(&w);
	refused(&w, "count: varint longer than 10 bytes");
	tw_header(&w, 0);
	tw_raw(&w, KILN_HCOL_TAG, "P", 1);
	tw_raw(&w, KILN_HCOL_MISC, "\x10short", 6);
	tw_frame(&w);
	refused(&w, "maps: string of 16 bytes runs past the end of the fields column");
	tw_header(&w, 0);
	tw_stack(&w, 1, 0);
	tw_raw(&w, KILN_HCOL_TAG, "XA", 2);
	tw_raw(&w, KILN_HCOL_MISC, "\x01", 1);
	tw_raw(&w, KILN_HCOL_SIZE_LO, "\x10", 1);
	tw_raw(&w, KILN_HCOL_SIZE_HI, "\x00", 1);
	tw_frame(&w);
	refused(&w, "record 4 ('A'): stack: the stack ids column ends early");
	tw_header(&w, 0);
	tw_raw(&w, KILN_HCOL_STACK, "\x01", 1);
	tw_frame(&w);
	refused(&w, "1 bytes left over in the stack ids column");
	/* a corrupt frame body */
	tw_header(&w, 0);
	tw_maps(&w, MAPS MAPS MAPS);
	tw_frame(&w);
	w.f.data[w.f.len / 2] ^= 0x55;
	w.f.data[w.f.len / 2 + 1] ^= 0x55;
	{
		struct kiln_heaptrace_info info;
		struct kiln_diag d = { "" };
		struct kiln_hprof *h = NULL;
		int err = kiln_heaptrace_analyse(w.f.data, w.f.len, &h, &info, &d);

		/* Either zstd notices, or the records come out garbled. */
		kiln_heaptrace_info_release(&info);
		if (!err)
			kiln_hprof_free(h);
		else
			assert_true(strstr(d.msg, "byte ") == d.msg);
	}
	tw_release(&w);
}

/* kiln_read_profile() takes a trace file: the five measures, symbolized. */
static void __attribute__((noinline)) alloc_site_alpha(void)
{
	__asm__ volatile("");
}

static void test_read_profile(void **state)
{
	struct tw w = TW_INIT;
	char path[] = "/tmp/test-heaptrace.XXXXXX", maps[65536];
	struct kiln_diag d = { "" };
	struct kiln_prof *p = NULL;
	enum kiln_fmt fmt;
	struct kiln_frame *fr = NULL;
	size_t cap = 0;
	char zpprof[64];
	size_t zn;
	FILE *f;
	size_t n;
	int fd, t;
	long nf;

	/* zstd, but not a trace */
	zn = ZSTD_compress(zpprof, sizeof(zpprof), "\x0a\x04\x08\x01\x10\x02pprof", 11, 3);
	assert_false(ZSTD_isError(zn));

	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	n = fread(maps, 1, sizeof(maps) - 1, f);
	fclose(f);
	maps[n] = '\0';
	tw_header(&w, 0);
	tw_maps(&w, maps);
	/* a return address just past the start of alloc_site_alpha */
	tw_stack(&w, 1, 1, (uint64_t)(uintptr_t)alloc_site_alpha + 1);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 1, 1, 0x100, 4096, 1);
	tw_alloc(&w, 1, 1, 0x200, 8192, 1);
	tw_frame(&w);
	tw_batch(&w, 1, 2);
	tw_free(&w, 1, 1, 0x100);
	tw_frame(&w);
	assert_true(kiln_heaptrace_detect(w.f.data, w.f.len));
	assert_false(kiln_heaptrace_detect(zpprof, zn));
	assert_int_equal(kiln_fmt_detect(w.f.data, w.f.len), KILN_FMT_HEAPTRACE);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, w.f.data, w.f.len), (ssize_t)w.f.len);
	close(fd);
	if (kiln_read_profile(path, &p, &fmt, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(fmt, KILN_FMT_HEAPTRACE);
	assert_int_equal(p->ntypes, 5);
	assert_int_equal(p->nsamples, 1);
	t = kiln_prof_type_index(p, NULL, &d);
	assert_string_equal(kiln_prof_str(p, p->types[t].type), "allocated");
	assert_int_equal(kiln_prof_value(p, 0, kiln_prof_type_index(p, "allocated", &d)), 12288);
	assert_int_equal(kiln_prof_value(p, 0, kiln_prof_type_index(p, "calls", &d)), 2);
	assert_int_equal(kiln_prof_value(p, 0, kiln_prof_type_index(p, "peak", &d)), 12288);
	assert_int_equal(kiln_prof_value(p, 0, kiln_prof_type_index(p, "leaked", &d)), 8192);
	assert_int_equal(kiln_prof_value(p, 0, kiln_prof_type_index(p, "temporary", &d)), 0);
	nf = kiln_prof_frames(p, &p->samples[0], &fr, &cap);
	assert_int_equal(nf, 1);
	assert_string_equal(kiln_prof_str(p, fr[0].name), "alloc_site_alpha");
	assert_string_equal(kiln_prof_str(p, p->comments[0]), "prog --flag");
	free(fr);
	kiln_prof_free(p);
	/* cut short: still read, with a note */
	assert_int_equal(truncate(path, (off_t)w.f.len - 3), 0);
	if (kiln_read_profile(path, &p, &fmt, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(p->ncomments, 2);
	assert_non_null(strstr(kiln_prof_str(p, p->comments[1]), "cut after byte"));
	assert_int_equal(kiln_prof_value(p, 0, kiln_prof_type_index(p, "leaked", &d)), 12288);
	kiln_prof_free(p);
	/* garbage after the magic: the file name and format in the message */
	assert_int_equal(truncate(path, 30), 0);
	assert_int_equal(kiln_read_profile(path, &p, &fmt, &d), -EINVAL);
	if (!strstr(d.msg, "read as heap-trace: byte 30: the file ends inside zstd frame 1 "
		    "(which starts at byte 0), before the header record"))
		fail_msg("%s", d.msg);
	unlink(path);
	tw_release(&w);
}

/* A trace naming path as the file of the code at 0x7f0000001000 (a
 * return address: looked up, and named, at 0xfff). */
static void trace_naming(struct tw *w, const char *path)
{
	char maps[4200];

	snprintf(maps, sizeof(maps),
		 "7f0000000000-7f0000100000 r-xp 00000000 00:00 1 %s\n", path);
	tw_header(w, 0);
	tw_maps(w, maps);
	tw_stack(w, 1, 1, (uint64_t)0x7f0000001000);
	tw_batch(w, 1, 0);
	tw_alloc(w, 1, 1, 0x100, 4096, 1);
	tw_frame(w);
}

static void on_alarm(int sig)
{
	static const char msg[] = "the reader blocked on a FIFO the trace names\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * A trace that names a FIFO (or anything but a regular file) as a
 * library: read without opening it for reading, so without blocking
 * (open(2) of a FIFO waits for a writer); the frame stays unsymbolized.
 */
static void test_fifo_in_maps(void **state)
{
	struct tw w = TW_INIT;
	char dir[] = "/tmp/test-heaptrace-fifo.XXXXXX", fifo[128];
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_frame *fr = NULL;
	size_t cap = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/libfifo.so", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	trace_naming(&w, fifo);
	signal(SIGALRM, on_alarm);
	alarm(60);	/* a hang, however loaded the machine */
	if (kiln_heaptrace_read(p, w.f.data, w.f.len, &d))
		fail_msg("%s", d.msg);
	alarm(0);
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(kiln_prof_frames(p, &p->samples[0], &fr, &cap), 1);
	assert_string_equal(kiln_prof_str(p, fr[0].name), "[libfifo.so]");
	free(fr);
	kiln_prof_free(p);
	unlink(fifo);
	rmdir(dir);
	tw_release(&w);
}

/*
 * kiln_sym_set_no_local(): the code of this very test program, named by
 * the trace, stays unnamed: "[test-heaptrace]" (no file of the machine is
 * opened), its address kept in the location.
 */
static void test_no_local_symbols(void **state)
{
	struct tw w = TW_INIT;
	char maps[65536];
	struct kiln_diag d = { "" };
	struct kiln_prof *p;
	struct kiln_frame *fr = NULL;
	size_t cap = 0, n;
	FILE *f = fopen("/proc/self/maps", "r");
	int pass;

	assert_non_null(f);
	n = fread(maps, 1, sizeof(maps) - 1, f);
	fclose(f);
	maps[n] = '\0';
	tw_header(&w, 0);
	tw_maps(&w, maps);
	tw_stack(&w, 1, 1, (uint64_t)(uintptr_t)alloc_site_alpha + 1);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 1, 1, 0x100, 4096, 1);
	tw_frame(&w);
	for (pass = 0; pass < 2; pass++) {
		kiln_sym_set_no_local(pass == 1);
		p = kiln_prof_new();
		if (kiln_heaptrace_read(p, w.f.data, w.f.len, &d))
			fail_msg("%s", d.msg);
		assert_int_equal(kiln_prof_frames(p, &p->samples[0], &fr, &cap), 1);
		if (pass == 0)
			assert_string_equal(kiln_prof_str(p, fr[0].name),
					    "alloc_site_alpha");
		else {
			assert_string_equal(kiln_prof_str(p, fr[0].name),
					    "[test-heaptrace]");
			/* The return address, or the call before it. */
			assert_in_range(p->locations[fr[0].location].address,
					(uint64_t)(uintptr_t)alloc_site_alpha,
					(uint64_t)(uintptr_t)alloc_site_alpha + 1);
		}
		kiln_prof_free(p);
	}
	kiln_sym_set_no_local(false);
	free(fr);
	tw_release(&w);
}

/*
 * The limit on decompressed input: a frame that inflates past it is
 * refused with the limit named, where the default takes it.
 */
static void test_input_limit(void **state)
{
	struct tw w = TW_INIT;
	struct kiln_diag d = { "" };
	struct kiln_prof *p;

	trace_naming(&w, "/nonexistent/lib.so");
	p = kiln_prof_new();
	assert_int_equal(kiln_heaptrace_read(p, w.f.data, w.f.len, &d), 0);
	kiln_prof_free(p);
	kiln_input_set_limit(16);
	p = kiln_prof_new();
	assert_int_equal(kiln_heaptrace_read(p, w.f.data, w.f.len, &d), -EINVAL);
	if (!strstr(d.msg, "byte 0 (zstd frame 1): the frame inflates to more "
		    "than 16 bytes"))
		fail_msg("%s", d.msg);
	kiln_prof_free(p);
	kiln_input_set_limit(KILN_INPUT_LIMIT_DEFAULT);
	tw_release(&w);
}

/*
 * Memory over time: a run of 10 s with a 1 MB spike at 5 s: 512 to 1024
 * buckets, the spike in total_max, the site series carried forward.
 */
static void test_timeline(void **state)
{
	struct kiln_heaptrace_info info;
	struct tw w = TW_INIT;
	struct kiln_hprof *h;
	double *series, *sum, mx = 0;
	uint32_t i, spike;
	int k;

	tw_header(&w, 0);
	tw_stack(&w, 1, 1, (uint64_t)0x400100);
	tw_stack(&w, 2, 1, (uint64_t)0x400200);
	tw_batch(&w, 1, 0);
	tw_alloc(&w, 0, 1, 0x10, 1000, 1);		/* t0: 1000 for good */
	tw_alloc(&w, 5000000000ull, 1, 0x20, 1000000, 2); /* t5s spike */
	tw_free(&w, 1000, 1, 0x20);
	for (k = 0; k < 100; k++)	/* then 50 ms apart, 100 bytes each */
		tw_alloc(&w, 50000000, 1, 0x1000 + 16 * (uint64_t)k, 100, 1);
	tw_frame(&w);
	h = analyse(&w, &info);
	assert_true(h->nbuckets >= 512 && h->nbuckets <= 1024);
	assert_true((uint64_t)h->nbuckets * h->bucket_ns > 10000000000ull);
	spike = (uint32_t)(5000000000ull / h->bucket_ns);
	for (i = 0; i < h->nbuckets; i++)
		if (h->total_max[i] > mx)
			mx = h->total_max[i];
	assert_true(mx == 1001000);
	assert_true(h->total_max[spike] == 1001000);
	assert_true(h->total_end[spike] == 1000);
	assert_true(h->total_end[h->nbuckets - 1] == 11000);
	series = calloc(h->nbuckets, sizeof(*series));
	kiln_hprof_site_series(h, 1, series);
	assert_true(series[0] == 1000 && series[spike] == 1000);
	assert_true(series[h->nbuckets - 1] == 11000);
	/* the spike's block, allocated and freed within one bucket, shows
	 * at the bucket's maximum */
	kiln_hprof_site_series(h, 2, series);
	assert_true(series[spike] == 1000000 && series[h->nbuckets - 1] == 0);
	assert_true(series[spike - 1] == 0 && series[spike + 1] == 0);
	/* the stacks add up to the largest size in every bucket */
	sum = calloc(h->nbuckets, sizeof(*sum));
	for (k = 1; k <= 2; k++) {
		kiln_hprof_site_series(h, (uint32_t)k, series);
		for (i = 0; i < h->nbuckets; i++)
			sum[i] += series[i];
	}
	for (i = 0; i < h->nbuckets; i++)
		if (sum[i] != h->total_max[i])
			fail_msg("bucket %u: stacks %f, max %f", i, sum[i], h->total_max[i]);
	free(sum);
	free(series);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	tw_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_thread),
		cmocka_unit_test(test_cross_thread),
		cmocka_unit_test(test_cross_thread_frames),
		cmocka_unit_test(test_temporary),
		cmocka_unit_test(test_peak_per_stack),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_sampling),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_encoder),
		cmocka_unit_test(test_encoder_reuse),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_bad_data),
		cmocka_unit_test(test_read_profile),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_index_shared),
		cmocka_unit_test(test_allocs),
		cmocka_unit_test(test_fifo_in_maps),
		cmocka_unit_test(test_no_local_symbols),
		cmocka_unit_test(test_input_limit),
		cmocka_unit_test(test_event_cols),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
