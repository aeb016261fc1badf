/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the heap analysis's batch loop (profile/hprof.c): the
 * same events one at a time (kiln_hprof_event(), the general code) and
 * in batches (kiln_hprof_events(), which runs a copy of the per-event
 * code for an analysis neither windowed nor sampled) give the same
 * analysis to the bit: totals, per-stack measures and history, memory
 * over time, size classes and the live blocks.  A stream with every
 * kind of event, frees of unknown blocks, blocks handed out twice, late
 * events and enough time for the buckets to coarsen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/hprof.h"
#include "hprof-same.h"

#define NSTACK 7
#define NEV 60000
#define NPTR 500

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A stream of n events of every kind, from seed. */
static struct kiln_hprof_ev *stream(uint64_t seed, size_t n)
{
	struct kiln_hprof_ev *ev = calloc(n, sizeof(*ev));
	uint64_t t = 1000000, r;
	size_t i;

	assert_non_null(ev);
	for (i = 0; i < n; i++) {
		r = rng(&seed);
		t += r % 5000;
		if (i > n / 2)
			t += r % 200000;	/* later: the buckets coarsen */
		ev[i].t = r % 97 ? t : t - 3000;	/* a few late ones */
		ev[i].tid = 1 + (uint32_t)(r >> 20) % 3;
		ev[i].ptr = 1 + (r >> 24) % NPTR;
		switch ((r >> 40) % 16) {
		case 0:
			ev[i].kind = KILN_HPROF_MMAP;
			ev[i].size = 4096 * (1 + (r >> 50) % 8);
			ev[i].stack = 1 + (uint32_t)(r >> 12) % NSTACK;
			break;
		case 1:
			ev[i].kind = KILN_HPROF_MUNMAP;
			ev[i].size = 4096 * (1 + (r >> 50) % 4);
			break;
		case 2:
			/* the allocation just before, freed at once */
			ev[i].kind = KILN_HPROF_FREE;
			if (i)
				ev[i].ptr = ev[i - 1].ptr;
			break;
		case 3:
			ev[i].kind = KILN_HPROF_FREE;
			ev[i].ptr = r % 5 ? ev[i].ptr : 0;
			break;
		default:
			ev[i].kind = (r >> 40) % 16 < 10 ? KILN_HPROF_ALLOC :
				     KILN_HPROF_FREE;
			ev[i].size = (r >> 30) % 3000;
			ev[i].stack = 1 + (uint32_t)(r >> 12) % NSTACK;
			if (ev[i].kind == KILN_HPROF_ALLOC && !(r % 41))
				ev[i].ptr = 0;	/* a failed allocation */
			break;
		}
	}
	ev[n - 1].kind = KILN_HPROF_END;
	ev[n - 1].ptr = 0;
	return ev;
}

static struct kiln_hprof *analysis(uint64_t sample_bytes)
{
	struct kiln_hprof *h = kiln_hprof_new(sample_bytes);
	uint64_t pcs[3];
	uint32_t i;

	assert_non_null(h);
	for (i = 1; i <= NSTACK; i++) {
		pcs[0] = 0x1000 * i;
		pcs[1] = 0x2000;
		pcs[2] = 0x3000;
		assert_int_equal(kiln_hprof_add_stack(h, i, pcs, 1 + i % 3), 0);
	}
	return h;
}

/* a and b hold the same analysis, bit for bit. */
static void same(const struct kiln_hprof *a, const struct kiln_hprof *b)
{
	struct kiln_hprof_block *la, *lb;
	size_t na, nb;

	hprof_same(a, b);
	assert_int_equal(kiln_hprof_live_blocks(a, &la, &na), 0);
	assert_int_equal(kiln_hprof_live_blocks(b, &lb, &nb), 0);
	assert_int_equal(na, nb);
	/* The same blocks in the same slots: in the same order. */
	if (na)
		assert_memory_equal(la, lb, na * sizeof(*la));
	free(la);
	free(lb);
}

/* The stream one event at a time and in batches of sizes from 1 up. */
static void one_by_one_and_batched(uint64_t sample_bytes, uint64_t seed)
{
	struct kiln_hprof_ev *ev = stream(seed, NEV);
	struct kiln_hprof *a = analysis(sample_bytes), *b = analysis(sample_bytes);
	size_t i, n, step = 1;

	for (i = 0; i < NEV; i++)
		assert_int_equal(kiln_hprof_event(a, &ev[i]), 0);
	for (i = 0; i < NEV; i += n) {
		n = NEV - i < step ? NEV - i : step;
		assert_int_equal(kiln_hprof_events(b, &ev[i], n), 0);
		step = step * 3 % 1021 + 1;
	}
	/* Before the end too: the live values as they are. */
	same(a, b);
	kiln_hprof_finish(a);
	kiln_hprof_finish(b);
	same(a, b);
	assert_true(a->tot.late > 0);
	assert_true(a->tot.unknown_frees > 0);
	assert_true(a->tot.temporary > 0);
	assert_true(a->tot.cross_thread > 0);
	assert_true(a->tot.ended);
	assert_true(a->bucket_ns > 1000);	/* coarsened */
	/* Finished: no more events, batched or not. */
	assert_int_equal(kiln_hprof_events(b, ev, 1), -EINVAL);
	assert_int_equal(kiln_hprof_events(b, ev, 0), 0);
	kiln_hprof_free(a);
	kiln_hprof_free(b);
	free(ev);
}

static void test_plain(void **state)
{
	one_by_one_and_batched(0, 88172645463325252ull);
	one_by_one_and_batched(0, 0x9e3779b97f4a7c15ull);
	(void)state;
}

/* Sampled: both take the general code; still the same. */
static void test_sampled(void **state)
{
	one_by_one_and_batched(1024, 88172645463325252ull);
	(void)state;
}

/* A stack the analysis was not given is refused in a batch too. */
static void test_bad_stack(void **state)
{
	struct kiln_hprof *h = analysis(0);
	struct kiln_hprof_ev ev[3] = {
		{ .t = 1, .ptr = 1, .size = 8, .tid = 1, .stack = 1, .kind = KILN_HPROF_ALLOC },
		{ .t = 2, .ptr = 2, .size = 8, .tid = 1, .stack = 2, .kind = KILN_HPROF_ALLOC },
		{ .t = 3, .ptr = 3, .size = 8, .tid = 1, .stack = NSTACK + 1,
		  .kind = KILN_HPROF_ALLOC },
	};

	assert_int_equal(kiln_hprof_events(h, ev, 3), -EINVAL);
	assert_int_equal(h->tot.reported, 2);
	kiln_hprof_free(h);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_sampled),
		cmocka_unit_test(test_bad_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
