/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the recorder's counting mode (session/record.c,
 * kiln_rec_opts.carry_lost, docs/kiln-record.md "Counting events lose
 * nothing"): the events of a LOST record go half to the stack of the
 * sample before it and half to the one after it, kiln_rec_carry() adds
 * to the last sample's stack, the samples column keeps the records, and
 * without carry_lost a LOST record changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "session/record.h"
#include "util/perfevent.h"

__attribute__((noinline)) int carry_fn_a(int n)
{
	volatile int x = n;

	return x + 1;
}

__attribute__((noinline)) int carry_fn_b(int n)
{
	volatile int x = n;

	return x * 2;
}

/* Maps this program's executable mapping holding addr for pid 100. */
static void map_self(struct kiln_rec *r, uintptr_t addr)
{
	char line[512], file[400];
	struct kiln_perf_event ev;
	unsigned long lo, hi, off;
	FILE *f = fopen("/proc/self/maps", "r");
	char perms[8];
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%lx-%lx %7s %lx %*s %*s %399s", &lo, &hi,
			       perms, &off, file) == 5 && addr >= lo && addr < hi;
	fclose(f);
	assert_true(found);
	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_MMAP;
	ev.mmap.pid = ev.mmap.tid = 100;
	ev.mmap.start = lo;
	ev.mmap.len = hi - lo;
	ev.mmap.pgoff = off;
	ev.mmap.prot = 4;	/* PROT_EXEC */
	ev.mmap.filename = file;
	ev.mmap.open_path = file;
	kiln_rec_event(r, &ev);
}

static void sample(struct kiln_rec *r, uintptr_t ip, uint64_t time)
{
	struct kiln_perf_event ev;
	uint64_t ips[2] = { (uint64_t)PERF_CONTEXT_USER, ip };

	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_SAMPLE;
	ev.time = time;
	ev.sample.pid = ev.sample.tid = 100;
	ev.sample.time = time;
	ev.sample.period = 1;
	ev.sample.ip = ip;
	ev.sample.nr = 2;
	ev.sample.ips = ips;
	ev.sample.user = true;
	kiln_rec_event(r, &ev);
}

static void lost(struct kiln_rec *r, uint64_t n, uint64_t time)
{
	struct kiln_perf_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_LOST;
	ev.time = time;
	ev.lost.lost = n;
	kiln_rec_event(r, &ev);
}

/* The sum of value column type over the samples whose leaf is `name`. */
static int64_t value_of(const struct kiln_prof *p, const char *name, size_t type)
{
	int64_t v = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *locs = kiln_prof_sample_locs(p, &p->samples[i]);
		const struct kiln_location *l;

		if (!locs)
			continue;
		l = &p->locations[locs[0]];
		if (l->nlines && !strcmp(kiln_prof_str(p, p->functions[
				p->lines[l->line0].function].name), name))
			v += kiln_prof_value(p, i, type);
	}
	return v;
}

/* A, A, LOST 10, B, LOST 4, then 6 more carried (lost at the end). */
static struct kiln_prof *run(bool carry)
{
	struct kiln_rec_opts o = { .callgraph = KILN_CG_FP, .offline = true,
				   .event = "syscalls:sys_enter_getrandom",
				   .period_ns = 1, .carry_lost = carry };
	uintptr_t a = (uintptr_t)carry_fn_a, b = (uintptr_t)carry_fn_b;
	struct kiln_rec *r = kiln_rec_new(&o);
	struct kiln_prof *p;

	assert_non_null(r);
	map_self(r, a);
	sample(r, a, 1);
	sample(r, a, 2);
	lost(r, 10, 3);
	sample(r, b, 3);
	lost(r, 4, 4);
	if (carry) {
		/* 5 before, 5 after the first loss; 2 before the second,
		 * 2 pending with no sample after them. */
		assert_int_equal(kiln_rec_event_total(r), 3 + 5 + 5 + 2);
		assert_int_equal(kiln_rec_carried(r), 12);
		assert_int_equal(kiln_rec_carry(r, 6), 0);
		assert_int_equal(kiln_rec_event_total(r), 21);
		assert_int_equal(kiln_rec_carried(r), 18);
	}
	p = kiln_rec_detach(r);
	assert_non_null(p);
	kiln_rec_free(r);
	return p;
}

static void test_carry(void **state)
{
	struct kiln_prof *p = run(true);

	(void)state;
	/* Column 0: samples/count, the records; 1: the event's values. */
	assert_int_equal(value_of(p, "carry_fn_a", 0), 2);
	assert_int_equal(value_of(p, "carry_fn_b", 0), 1);
	assert_int_equal(value_of(p, "carry_fn_a", 1), 2 + 5);
	assert_int_equal(value_of(p, "carry_fn_b", 1), 1 + 5 + 2 + 6);
	kiln_prof_free(p);
}

static void test_no_carry(void **state)
{
	struct kiln_prof *p = run(false);

	(void)state;
	assert_int_equal(value_of(p, "carry_fn_a", 1), 2);
	assert_int_equal(value_of(p, "carry_fn_b", 1), 1);
	kiln_prof_free(p);
}

static void test_carry_without_sample(void **state)
{
	struct kiln_rec_opts o = { .callgraph = KILN_CG_FP, .offline = true,
				   .event = "x", .period_ns = 1, .carry_lost = true };
	struct kiln_rec *r = kiln_rec_new(&o);

	(void)state;
	assert_non_null(r);
	lost(r, 3, 1);
	assert_int_equal(kiln_rec_carry(r, 3), -ENOENT);
	assert_int_equal(kiln_rec_carry(r, 0), 0);
	assert_int_equal(kiln_rec_carried(r), 0);
	kiln_rec_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_carry),
		cmocka_unit_test(test_no_carry),
		cmocka_unit_test(test_carry_without_sample),
	};

	(void)carry_fn_a(1);
	(void)carry_fn_b(1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
