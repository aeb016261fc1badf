/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the heap trace encoder's clock (src/format/heapenc.c,
 * kiln_henc_clock()): event times in a raw clock (the TSC) are written as
 * CLOCK_MONOTONIC ns on the line through the writer's readings of both
 * clocks; the times stay continuous and monotonic from one line to the
 * next, a moved anchor keeps the slope, and by default times are ns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "format/heapenc.h"
#include "util/varint.h"

static void test_identity(void **state)
{
	struct kiln_henc e;

	(void)state;
	kiln_henc_init(&e);
	assert_int_equal(kiln_henc_ns(&e, 0), 0);
	assert_int_equal(kiln_henc_ns(&e, 123456789012345ull), 123456789012345ull);
	/* The monotonic clock: both readings the same number. */
	kiln_henc_clock(&e, 1000, 1000, 5000, 5000);
	assert_int_equal(kiln_henc_ns(&e, 4321), 4321);
	assert_int_equal(kiln_henc_ns(&e, 999999999999ull), 999999999999ull);
	kiln_henc_release(&e);
}

static void test_lines(void **state)
{
	struct kiln_henc e;
	uint64_t t, prev = 0, r0 = 7000000000ull, n0 = 50000000000ull;

	(void)state;
	kiln_henc_init(&e);
	/* 2.5 counts per ns over 100 ms. */
	kiln_henc_clock(&e, r0, n0, r0 + 250000000, n0 + 100000000);
	assert_int_equal(kiln_henc_ns(&e, r0), n0);
	assert_int_equal(kiln_henc_ns(&e, r0 + 2500), n0 + 1000);
	assert_in_range(kiln_henc_ns(&e, r0 + 250000000), n0 + 99999999, n0 + 100000000);
	/* An event put late, before the line's start: the same line. */
	assert_int_equal(kiln_henc_ns(&e, r0 - 25000), n0 - 10000);
	for (t = r0; t < r0 + 250000000; t += 999983) {
		assert_true(kiln_henc_ns(&e, t) >= prev);
		prev = kiln_henc_ns(&e, t);
	}
	/* The next line, a little steeper (the kernel's correction), from
	 * the last reading: continuous, and monotonic across. */
	kiln_henc_clock(&e, r0 + 250000000, n0 + 100000000,
			r0 + 500000000, n0 + 200000100);
	assert_int_equal(kiln_henc_ns(&e, r0 + 250000000), n0 + 100000000);
	for (t = r0 + 250000000; t < r0 + 500000000; t += 999983) {
		assert_true(kiln_henc_ns(&e, t) >= prev);
		prev = kiln_henc_ns(&e, t);
	}
	assert_in_range(kiln_henc_ns(&e, r0 + 500000000), n0 + 200000099, n0 + 200000100);
	/* A loose reading is not used: the anchor moves along the line. */
	kiln_henc_clock_at(&e, r0 + 750000000);
	assert_in_range(kiln_henc_ns(&e, r0 + 750000000), n0 + 300000199, n0 + 300000200);
	assert_true(kiln_henc_ns(&e, r0 + 750002500) - kiln_henc_ns(&e, r0 + 750000000) >= 999);
	/* Readings that cross (ns going back a little): flat, never back. */
	prev = kiln_henc_ns(&e, r0 + 750000000);
	kiln_henc_clock(&e, r0 + 750000000, prev, r0 + 750001000, prev - 5);
	assert_true(kiln_henc_ns(&e, r0 + 750000500) >= prev);
	kiln_henc_release(&e);
}

/* The encoder writes its T records in ns from raw event times. */
static void test_records(void **state)
{
	struct kiln_henc e;
	struct kiln_hcols out = { 0 };
	struct kiln_hev *v;

	(void)state;
	kiln_henc_init(&e);
	kiln_henc_clock(&e, 1000000, 2000000000, 3500000, 2001000000);
	v = kiln_henc_reserve(&e, 2);
	assert_non_null(v);
	v[0] = (struct kiln_hev){ .t = 1000000, .ptr = 0x1000, .size = 16,
				  .stack = 1, .tid = 7, .kind = KILN_HEV_ALLOC };
	/* 2.5 raw counts per ns: 500 us later. */
	v[1] = (struct kiln_hev){ .t = 2250000, .ptr = 0x1000, .tid = 7,
				  .kind = KILN_HEV_FREE };
	assert_int_equal(kiln_henc_commit(&e, 2), 0);
	assert_int_equal(kiln_henc_emit(&e, UINT64_MAX, &out, NULL, NULL), 0);
	/* Columns: tags T X A T F; fields: the two T's dt, the tid. */
	assert_int_equal(out.c[KILN_HCOL_TAG].len, 5);
	assert_memory_equal(out.c[KILN_HCOL_TAG].data, "TXATF", 5);
	{
		const unsigned char *p = (const unsigned char *)out.c[KILN_HCOL_MISC].data;
		uint64_t a, b, tid;

		p = kiln_varint_get_own(p, &a);
		p = kiln_varint_get_own(p, &tid);
		p = kiln_varint_get_own(p, &b);
		assert_int_equal(a, 2000000000);
		assert_int_equal(tid, 7);
		assert_int_equal(b, 500000);
	}
	kiln_hcols_release(&out);
	kiln_henc_release(&e);
}

/*
 * The T records of many events over two lines (about 2.5 counts per ns,
 * events 0 to 60 us apart) are those of converting every event's time:
 * the encoder's shortcut (no conversion before the next tick can be
 * reached) misses none.
 */
static void test_ticks(void **state)
{
	struct kiln_henc e, ref;
	struct kiln_hcols out = { 0 };
	struct kiln_hev *v;
	uint64_t raw = 5000000, mark = 0, x = 88172645463325252ull;
	uint64_t want[4096], n_want = 0, n = 0, i;
	const unsigned char *p, *end;

	(void)state;
	kiln_henc_init(&e);
	kiln_henc_init(&ref);
	kiln_henc_clock(&e, raw, 1000000000, raw + 250000000, 1100000000);
	ref = e;
	v = kiln_henc_reserve(&e, 2000);
	assert_non_null(v);
	for (i = 0; i < 2000; i++) {
		uint64_t ns;

		if (i == 1000) {
			/* A second line, from the end of the first. */
			assert_int_equal(kiln_henc_commit(&e, 1000), 0);
			assert_int_equal(kiln_henc_emit(&e, UINT64_MAX, &out, NULL, NULL), 0);
			kiln_henc_clock(&e, raw, kiln_henc_ns(&e, raw), raw + 250000000,
					kiln_henc_ns(&e, raw) + 100000007);
			ref.c_raw = e.c_raw;
			ref.c_ns = e.c_ns;
			ref.c_mult = e.c_mult;
			v = kiln_henc_reserve(&e, 1000);
			assert_non_null(v);
		}
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		raw += x % 150000;
		v[i % 1000] = (struct kiln_hev){ .t = raw, .ptr = 0x1000 + 16 * i,
						 .size = 16, .stack = 1, .tid = 7,
						 .kind = KILN_HEV_ALLOC };
		ns = kiln_henc_ns(&ref, raw);
		if (!mark || ns >= mark + KILN_HENC_TICK_NS) {
			want[n_want++] = ns - mark;
			mark = ns;
		}
	}
	assert_int_equal(kiln_henc_commit(&e, 1000), 0);
	assert_int_equal(kiln_henc_emit(&e, UINT64_MAX, &out, NULL, NULL), 0);
	/* Fields: each T's dt, and the thread of the first event. */
	p = (const unsigned char *)out.c[KILN_HCOL_MISC].data;
	end = p + out.c[KILN_HCOL_MISC].len;
	for (i = 0; i < out.c[KILN_HCOL_TAG].len; i++) {
		uint64_t dt;

		if (out.c[KILN_HCOL_TAG].data[i] == 'X') {
			p = kiln_varint_get_own(p, &dt);
			continue;
		}
		if (out.c[KILN_HCOL_TAG].data[i] != 'T')
			continue;
		assert_true(p < end);
		p = kiln_varint_get_own(p, &dt);
		assert_true(n < n_want);
		assert_int_equal(dt, want[n]);
		n++;
	}
	assert_int_equal(n, n_want);
	assert_true(n_want > 300);
	kiln_hcols_release(&out);
	kiln_henc_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_ticks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
