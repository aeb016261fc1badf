/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the time column (profile stage, src/profile/events.c):
 * samples of one stack merge whatever their times, the events keep the
 * times, and every operation that rebuilds the samples (merge, hide,
 * filter, keep_labels, group_by, keep_time) carries the column along.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

/*
 * n samples of `perf script` text, 1 ms apart on one thread, cycling over
 * three stacks (leaf_a, leaf_b, leaf_c under main), each of 250000 ns.
 */
static void gen(struct kiln_buf *b, size_t n)
{
	static const char *const stacks[3] = {
		"\t 1104 leaf_a+0x4 (/usr/bin/prog)\n"
		"\t 1410 mid+0x10 (/usr/bin/prog)\n"
		"\t 151f main+0x1f (/usr/bin/prog)\n",
		"\t 1208 leaf_b+0x8 (/usr/bin/prog)\n"
		"\t 1414 mid+0x14 (/usr/bin/prog)\n"
		"\t 151f main+0x1f (/usr/bin/prog)\n",
		"\t 130c leaf_c+0xc (/usr/bin/prog)\n"
		"\t 1523 main+0x23 (/usr/bin/prog)\n",
	};
	size_t i;

	for (i = 0; i < n; i++) {
		/* 1000.000000 s + i ms */
		assert_int_equal(kiln_buf_addf(b, "prog 100/100 %zu.%06zu: "
					       "250000 cpu-clock:pppH: \n%s\n",
					       1000 + i / 1000,
					       i % 1000 * 1000,
					       stacks[(i * 7 + i / 13) % 3]), 0);
	}
}

static struct kiln_prof *read_gen(size_t n)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	gen(&b, n);
	assert_int_equal(kiln_perfscript_read(p, b.data, b.len, &d), 0);
	kiln_buf_release(&b);
	return p;
}

/* The sum of type t over the events, and checks the column's shape. */
static int64_t events_total(const struct kiln_prof *p, size_t t)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < p->nevents; i++) {
		assert_true(p->events[i].sample < p->nsamples);
		assert_int_equal(p->events[i].time % KILN_PROF_TIME_BUCKET_NS, 0);
		sum += kiln_prof_event_values(p, i)[t];
	}
	return sum;
}

/* The case: 10,000 samples of 3 stacks are 3 samples with
 * 10,000 times; no "time" label; the column in time order. */
static void test_ten_thousand(void **state)
{
	struct kiln_prof *p = read_gen(10000);
	struct kiln_prof_events it;
	const struct kiln_prof_event *e;
	int64_t last = -1;
	size_t i, ev, n = 0;

	(void)state;
	assert_int_equal(p->nsamples, 3);
	assert_int_equal(p->nevents, 10000);
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_labelset *ls = &p->labelsets[p->samples[i].labels];
		size_t j;

		for (j = 0; j < ls->n; j++)
			assert_string_not_equal(kiln_prof_str(p,
				p->labels[ls->first + j].key), "time");
	}
	assert_int_equal(events_total(p, 0), 10000);
	assert_int_equal(events_total(p, 0), kiln_prof_total(p, 0));
	assert_int_equal(events_total(p, 1), kiln_prof_total(p, 1));
	assert_int_equal(kiln_prof_total(p, 1), 10000 * 250000ll);
	assert_int_equal(kiln_prof_events_begin(&it, p), 0);
	while ((e = kiln_prof_events_next(&it, &ev))) {
		/* Sample k at k ms, its stack (k*7 + k/13) % 3. */
		assert_int_equal(e->time, (int64_t)n * 1000000);
		assert_true(e->time > last);
		assert_int_equal(kiln_prof_event_values(p, ev)[0], 1);
		last = e->time;
		n++;
	}
	kiln_prof_events_end(&it);
	assert_int_equal(n, 10000);
	kiln_prof_free(p);
}

/* Events of one sample within one bucket add up; out of order ones are
 * tidied into the first; the iterator gives time order. */
static void test_buckets_and_order(void **state)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_line ln = { 0, 0 };
	struct kiln_prof_events it;
	const struct kiln_prof_event *e;
	int64_t one = 1, times[] = { 5000000, 5999999, 3000000, 5000001, 1 };
	uint32_t loc;
	size_t i, ev;

	(void)state;
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	ln.function = kiln_prof_function(p, kiln_prof_interns(p, "f"), 0, 0, 0);
	loc = kiln_prof_location(p, 0, 0, &ln, 1);
	for (i = 0; i < 5; i++)
		assert_int_equal(kiln_prof_add_timed(p, &loc, 1, &one, 0, times[i]), 0);
	/* 5 ms (twice), 3 ms, 5 ms again (out of order), 0 ms */
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(p->nevents, 4);
	assert_int_equal(kiln_prof_events_tidy(p), 0);
	assert_int_equal(p->nevents, 3);
	assert_int_equal(p->events[0].time, 5000000);
	assert_int_equal(kiln_prof_event_values(p, 0)[0], 3);
	assert_int_equal(p->events[1].time, 3000000);
	assert_int_equal(p->events[2].time, 0);
	assert_int_equal(kiln_prof_events_begin(&it, p), 0);
	e = kiln_prof_events_next(&it, &ev);
	assert_int_equal(e->time, 0);
	assert_int_equal(ev, 2);
	assert_int_equal(kiln_prof_events_next(&it, NULL)->time, 3000000);
	assert_int_equal(kiln_prof_events_next(&it, NULL)->time, 5000000);
	assert_null(kiln_prof_events_next(&it, NULL));
	kiln_prof_events_end(&it);
	/* A later 5 ms event still finds the first. */
	assert_int_equal(kiln_prof_add_timed(p, &loc, 1, &one, 0, 5500000), 0);
	assert_int_equal(kiln_prof_events_tidy(p), 0);
	assert_int_equal(p->nevents, 3);
	assert_int_equal(kiln_prof_event_values(p, 0)[0], 4);
	kiln_prof_free(p);
}

/* Tidying many samples' events in random order: each (sample, bucket)
 * once, at its first event's place, with the group's values summed --
 * against the column as it was before, read the slow way. */
static void test_tidy_random(void **state)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_line ln = { 0, 0 };
	struct kiln_prof_event *ev0;
	int64_t *v0, *want;
	uint32_t locs[7];
	uint64_t seed = 7;
	size_t i, j, n, k;

	(void)state;
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	for (i = 0; i < 7; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%zu", i);
		ln.function = kiln_prof_function(p, kiln_prof_interns(p, name), 0, 0, 0);
		locs[i] = kiln_prof_location(p, 0, 0, &ln, 1);
	}
	for (i = 0; i < 5000; i++) {
		int64_t val;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		val = 1 + (int64_t)((seed >> 20) % 9);
		assert_true(kiln_prof_add_timed(p, &locs[(seed >> 33) % 7], 1, &val, 0,
						(int64_t)((seed >> 40) % 60) * 1000000 +
						(int64_t)((seed >> 10) % 1000)) >= 0);
	}
	n = p->nevents;
	ev0 = malloc(n * sizeof(*ev0));
	v0 = malloc(n * sizeof(*v0));
	want = calloc(n, sizeof(*want));
	assert_non_null(ev0);
	assert_non_null(v0);
	assert_non_null(want);
	memcpy(ev0, p->events, n * sizeof(*ev0));
	memcpy(v0, p->ev_values, n * sizeof(*v0));
	assert_int_equal(kiln_prof_events_tidy(p), 0);
	for (i = k = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (ev0[j].sample == ev0[i].sample && ev0[j].time == ev0[i].time)
				break;
		if (j < i)
			continue;	/* not the group's first */
		for (j = i; j < n; j++)
			if (ev0[j].sample == ev0[i].sample && ev0[j].time == ev0[i].time)
				want[k] += v0[j];
		assert_true(k < p->nevents);
		assert_int_equal(p->events[k].sample, ev0[i].sample);
		assert_int_equal(p->events[k].time, ev0[i].time);
		assert_int_equal(kiln_prof_event_values(p, k)[0], want[k]);
		k++;
	}
	assert_int_equal(p->nevents, k);
	assert_true(k > 7 * 20 && k < n);
	free(ev0);
	free(v0);
	free(want);
	kiln_prof_free(p);
}

/* The operations that rebuild the samples keep the column right. */
static void test_operations(void **state)
{
	struct kiln_prof *p = read_gen(3000), *m = kiln_prof_new();
	struct kiln_label_cond c = { "thread", "100", false };
	struct kiln_diag d = { "" };

	(void)state;
	/* Merge of a profile with itself: same samples, values and events
	 * doubled. */
	assert_int_equal(kiln_prof_merge(m, p, &d), 0);
	assert_int_equal(kiln_prof_merge(m, p, &d), 0);
	assert_int_equal(m->nsamples, 3);
	assert_int_equal(m->nevents, 3000);
	assert_int_equal(events_total(m, 0), 6000);
	assert_int_equal(kiln_prof_total(m, 0), 6000);
	/* Hide mid and leaf_a: two stacks become one (main and main). */
	assert_int_equal(kiln_prof_hide(m, "^(mid|leaf_.)$", &d), 0);
	assert_int_equal(m->nsamples, 2);	/* main+0x1f and main+0x23 */
	assert_int_equal(m->nevents, 3000);
	assert_int_equal(events_total(m, 0), 6000);
	/* Label filters and group-by keep the events. */
	assert_int_equal(kiln_prof_keep_labels(m, &c, 1), 0);
	assert_int_equal(m->nevents, 3000);
	assert_int_equal(kiln_prof_group_by_label(m, "thread"), 0);
	assert_int_equal(m->nevents, 3000);
	assert_int_equal(events_total(m, 1), kiln_prof_total(m, 1));
	/* 1 s to 2 s: 1000 samples. */
	assert_int_equal(kiln_prof_keep_time(m, 1000000000, 2000000000), 0);
	assert_int_equal(m->nevents, 1000);
	assert_int_equal(kiln_prof_total(m, 0), 2000);
	assert_int_equal(events_total(m, 0), 2000);
	/* A range with nothing in it leaves nothing (and no samples to
	 * index the column by). */
	assert_int_equal(kiln_prof_keep_time(m, 100000000000, 200000000000), 0);
	assert_int_equal(m->nsamples, 0);
	assert_int_equal(m->nevents, 0);
	/* Focus on leaf_b in the original: its third of the events. */
	assert_int_equal(kiln_prof_filter(p, "^leaf_b$", NULL, &d), 0);
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(p->nevents, (size_t)kiln_prof_total(p, 0));
	assert_int_equal(events_total(p, 0), kiln_prof_total(p, 0));
	kiln_prof_free(p);
	kiln_prof_free(m);
}

/* pprof: times written as labels (one pprof sample per event) and read
 * back into the column; without times, one pprof sample per sample. */
static void test_pprof(void **state)
{
	struct kiln_prof *p = read_gen(2000), *q = kiln_prof_new(),
		*r = kiln_prof_new();
	struct kiln_buf a = KILN_BUF_INIT, b = KILN_BUF_INIT, c = KILN_BUF_INIT;
	struct kiln_diag d = { "" };

	(void)state;
	assert_int_equal(kiln_pprof_write(p, &a, false), 0);
	assert_int_equal(kiln_pprof_read(q, a.data, a.len, &d), 0);
	assert_int_equal(q->nsamples, 3);
	assert_int_equal(q->nevents, 2000);
	assert_int_equal(kiln_prof_find_str(q, "time", 4) != 0, 1);
	assert_int_equal(kiln_pprof_write(q, &b, false), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	assert_int_equal(kiln_pprof_write_times(p, &c, false, false), 0);
	assert_true(c.len < a.len / 10);
	assert_int_equal(kiln_pprof_read(r, c.data, c.len, &d), 0);
	assert_int_equal(r->nsamples, 3);
	assert_int_equal(r->nevents, 0);
	assert_int_equal(kiln_prof_total(r, 1), kiln_prof_total(p, 1));
	kiln_buf_release(&a);
	kiln_buf_release(&b);
	kiln_buf_release(&c);
	kiln_prof_free(p);
	kiln_prof_free(q);
	kiln_prof_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ten_thousand),
		cmocka_unit_test(test_buckets_and_order),
		cmocka_unit_test(test_tidy_random),
		cmocka_unit_test(test_operations),
		cmocka_unit_test(test_pprof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
