/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the heap trace's reading on two threads
 * (src/format/heaptrace-pipe.c, src/profile/hbatch.c): a trace of many
 * frames, with three threads freeing each other's blocks, stacks and a
 * maps record defined between the events, lost events and an end, is
 * analysed in one thread (kiln_workers_set(1)) and with the
 * analysis on a second thread (2): the second reading really used two
 * threads, and every measure, per stack and over time, is the same to
 * the bit.  With a time index (kiln serve's reading) too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "profile/hprof.h"
#include "hprof-same.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/limit.h"
#include "util/workers.h"

#define EVENTS 300000
#define FRAME_EVENTS 20000	/* several batches a frame, 15 frames */
#define NTHREADS 3
#define KEEP 512		/* blocks each thread keeps live */
#define MAPS "00400000-00500000 r-xp 00000000 08:01 42 /opt/t/prog\n"

struct trace {
	struct kiln_hcols c;
	struct kiln_henc enc;
	struct kiln_buf file, raw;
	size_t frames;
};

static void frame(struct trace *w)
{
	const struct kiln_hcols *parts[1] = { &w->c };
	size_t cap, n;

	kiln_buf_reset(&w->raw);
	assert_int_equal(kiln_hcols_frame(parts, 1, w->frames == 0, &w->raw), 0);
	cap = ZSTD_compressBound(w->raw.len);
	assert_int_equal(kiln_buf_grow(&w->file, cap + 1), 0);
	n = ZSTD_compress(w->file.data + w->file.len, cap, w->raw.data,
			  w->raw.len, 1);
	assert_false(ZSTD_isError(n));
	w->file.len += n;
	w->frames++;
	kiln_hcols_reset(&w->c);
}

static void emit(struct trace *w, const struct kiln_hev *ev)
{
	struct kiln_hev *e = kiln_henc_reserve(&w->enc, 1);

	assert_non_null(e);
	*e = *ev;
	assert_int_equal(kiln_henc_commit(&w->enc, 1), 0);
	assert_int_equal(kiln_henc_emit(&w->enc, UINT64_MAX, &w->c, NULL, NULL), 0);
}

/* The trace: a new stack every 97 events, frees of another thread's
 * blocks, a second maps record half way, a lost record, an end. */
static void make_trace(struct trace *w)
{
	static uint64_t ring[NTHREADS][KEEP];
	uint64_t i, ptr = 0x1000, pcs[3], nstacks = 0;
	struct kiln_hev ev;

	memset(ring, 0, sizeof(ring));
	kiln_henc_init(&w->enc);
	assert_int_equal(kiln_hcols_header(&w->c, 77, 1, 1700000000000000000ull,
					   0, "prog\0", 5), 0);
	assert_int_equal(kiln_hcols_maps(&w->c, MAPS, strlen(MAPS)), 0);
	for (i = 0; i < EVENTS; i++) {
		uint32_t tid = 100 + (uint32_t)(i % NTHREADS);
		uint64_t *slot = &ring[(i / 7) % NTHREADS][(i * 31) % KEEP];

		if (i % 97 == 0) {
			nstacks++;
			pcs[0] = 0x401000 + nstacks * 16;
			pcs[1] = 0x402000 + (nstacks % 5) * 16;
			pcs[2] = 0x403000;
			assert_int_equal(kiln_hcols_stack(&w->c, nstacks, pcs, 3), 0);
		}
		if (i == EVENTS / 2) {
			assert_int_equal(kiln_hcols_maps(&w->c, MAPS, strlen(MAPS)), 0);
			assert_int_equal(kiln_hcols_lost(&w->c, 5), 0);
		}
		memset(&ev, 0, sizeof(ev));
		/* Irregular steps: buckets open, close and coarsen. */
		ev.t = 1000000000ull + i * 1000 + (i % 13) * 50;
		ev.tid = tid;
		if (*slot && i % 3) {
			ev.kind = KILN_HEV_FREE;
			ev.ptr = *slot;
			*slot = 0;
		} else {
			if (*slot)	/* kept for good: a leak */
				*slot = 0;
			ev.kind = KILN_HEV_ALLOC;
			ev.ptr = ptr;
			ev.size = 16 + (i * 37) % 5000;
			ev.stack = (uint32_t)(1 + (i * 7) % nstacks);
			ptr += 0x10000;
			*slot = ev.ptr;
		}
		emit(w, &ev);
		if (i % FRAME_EVENTS == FRAME_EVENTS - 1)
			frame(w);
	}
	memset(&ev, 0, sizeof(ev));
	ev.t = 1000000000ull + EVENTS * 1000ull + 1000;
	ev.tid = 100;
	ev.kind = KILN_HEV_END;
	emit(w, &ev);
	frame(w);
	kiln_henc_release(&w->enc);
	kiln_hcols_release(&w->c);
	kiln_buf_release(&w->raw);
}

static void test_two_threads_same(void **state)
{
	struct trace w;
	struct kiln_hprof *h1 = NULL, *h2 = NULL, *h3 = NULL;
	struct kiln_heaptrace_info i1, i2, i3;
	struct kiln_heaptrace_index *x = NULL;
	struct kiln_diag d = { 0 };
	size_t bytes;

	(void)state;
	memset(&w, 0, sizeof(w));
	make_trace(&w);
	assert_true(w.frames >= 10);

	kiln_workers_set(1);
	assert_int_equal(kiln_heaptrace_analyse(w.file.data, w.file.len, &h1, &i1,
						&d), 0);
	assert_int_equal(i1.read_threads, 1);

	kiln_workers_set(2);
	assert_int_equal(kiln_heaptrace_analyse(w.file.data, w.file.len, &h2, &i2,
						&d), 0);
	assert_int_equal(i2.read_threads, 2);
	assert_int_equal(i2.frames, i1.frames);
	assert_int_equal(i2.threads, NTHREADS);
	/* The trace has what the test is about. */
	assert_true(h1->tot.cross_thread > 0 && h1->tot.leaked_objs > 0);
	assert_int_equal(h1->tot.lost, 5);
	assert_true(h1->tot.ended);
	assert_int_equal(h1->nmaps, 2);
	hprof_same(h1, h2);

	/* kiln serve's reading: the index's marks wait for the thread. */
	assert_int_equal(kiln_heaptrace_analyse_index(w.file.data, w.file.len, NULL,
						      NULL, &h3, &i3, &x, &d), 0);
	assert_int_equal(i3.read_threads, 2);
	assert_true(kiln_heaptrace_index_marks(x, &bytes) > 1);
	hprof_same(h1, h3);

	kiln_workers_set(0);
	kiln_heaptrace_index_free(x);
	kiln_hprof_free(h1);
	kiln_hprof_free(h2);
	kiln_hprof_free(h3);
	kiln_heaptrace_info_release(&i1);
	kiln_heaptrace_info_release(&i2);
	kiln_heaptrace_info_release(&i3);
	kiln_buf_release(&w.file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_threads_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
