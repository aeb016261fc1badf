/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the profile comparison (profile/diff.c): shares and
 * changes of flat and cum columns (recursion counted once), identical
 * profiles called unchanged, a large change called grown with its interval
 * around it, the regression gate, repeated profiles resampled, the same
 * seed giving the same numbers, counts read from the count type, and bad
 * arguments. */
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

#include "profile/diff.h"
#include "profile/profile.h"

static uint32_t loc_of(struct kiln_prof *p, const char *name)
{
	struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, name),
						  0, 0, 0), 0 };

	return kiln_prof_location(p, 0, 0x1000 + kiln_prof_interns(p, name), &l, 1);
}

/* Adds "root;...;leaf" with n samples (cpu: n * 10 ms). */
static void add(struct kiln_prof *p, const char *stack, int64_t n)
{
	uint32_t locs[64], k = 0, i;
	char buf[512], *save, *tok;
	int64_t vals[2] = { n, n * 10000000 };

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		locs[k++] = loc_of(p, tok);
	for (i = 0; i < k / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[k - 1 - i];
		locs[k - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, k, vals, 0) >= 0);
}

static struct kiln_prof *prof(int64_t a, int64_t b, int64_t c)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	add(p, "main;work;a", a);
	add(p, "main;work;b", b);
	add(p, "main;rec;rec;c", c);
	return p;
}

static const struct kiln_diff_row *row(const struct kiln_diff *d,
				       const char *name)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->rows[i].name, name))
			return &d->rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

static void test_identical(void **state)
{
	struct kiln_prof *b = prof(500, 300, 200), *n = prof(500, 300, 200);
	struct kiln_diff_opts o = KILN_DIFF_OPTS_INIT;
	struct kiln_diff d;
	int t = 1;
	const struct kiln_diff_row *r;

	(void)state;
	o.fail_on = 5;
	assert_int_equal(kiln_diff_build(&d, &b, &t, 1, &n, &t, 1, &o), 0);
	assert_int_equal(d.nregressions, 0);
	assert_false(d.by_profiles);
	assert_true(d.crit > 1.5 && d.crit < 5);
	r = row(&d, "a");
	assert_true(fabs(r->flat.base - 50) < 1e-9);
	assert_true(fabs(r->flat.delta) < 1e-9);
	assert_int_equal(r->flat.verdict, KILN_DIFF_SAME);
	assert_true(r->flat.lo < 0 && r->flat.hi > 0);
	assert_true(r->flat.base_samples == 500);
	/* rec twice in one stack: its cum counts the sample once. */
	r = row(&d, "rec");
	assert_true(fabs(r->cum.base - 20) < 1e-9);
	assert_true(fabs(r->flat.base) < 1e-9);
	/* main holds every sample: no spread, nothing to test. */
	assert_int_equal(row(&d, "main")->cum.verdict, KILN_DIFF_UNTESTED);
	kiln_diff_release(&d);
	kiln_prof_free(b);
	kiln_prof_free(n);
}

static void test_grew_and_gate(void **state)
{
	struct kiln_prof *b = prof(500, 300, 200), *n = prof(400, 200, 400);
	struct kiln_diff_opts o = KILN_DIFF_OPTS_INIT;
	struct kiln_diff d, d2;
	int t = 1;
	const struct kiln_diff_row *r;

	(void)state;
	o.fail_on = 5;
	assert_int_equal(kiln_diff_build(&d, &b, &t, 1, &n, &t, 1, &o), 0);
	r = row(&d, "c");
	assert_true(fabs(r->flat.delta - 20) < 1e-9);
	assert_int_equal(r->flat.verdict, KILN_DIFF_GREW);
	assert_true(r->flat.lo > 0 && r->flat.lo < 20 && r->flat.hi > 20);
	assert_true(r->flat.regression && r->cum.regression);
	/* Regressions sort first: c, and its callers' cum (rec). */
	assert_true(d.rows[0].flat.regression || d.rows[0].cum.regression);
	assert_int_equal(row(&d, "a")->flat.verdict, KILN_DIFF_SHRANK);
	assert_false(row(&d, "a")->flat.regression);
	/* A threshold above what the data allows: no regression. */
	o.fail_on = 40;
	assert_int_equal(kiln_diff_build(&d2, &b, &t, 1, &n, &t, 1, &o), 0);
	assert_int_equal(d2.nregressions, 0);
	assert_int_equal(row(&d2, "c")->flat.verdict, KILN_DIFF_GREW);
	/* The same seed, the same interval. */
	assert_true(row(&d2, "c")->flat.lo == r->flat.lo);
	kiln_diff_release(&d2);
	kiln_diff_release(&d);
	kiln_prof_free(b);
	kiln_prof_free(n);
}

static void test_profiles_resampled(void **state)
{
	struct kiln_prof *b[2] = { prof(500, 300, 200), prof(480, 320, 200) };
	struct kiln_prof *n[3] = { prof(500, 300, 200), prof(510, 290, 200),
				   prof(490, 310, 200) };
	int t[3] = { 1, 1, 1 };
	struct kiln_diff d;
	size_t i;

	(void)state;
	assert_int_equal(kiln_diff_build(&d, b, t, 2, n, t, 3, NULL), 0);
	assert_true(d.by_profiles);
	assert_int_equal(d.nbase, 2);
	assert_int_equal(d.nnew, 3);
	assert_true(d.base_samples == 2000 && d.new_samples == 3000);
	/* The mean of the profiles' shares: a (50 + 48) / 2. */
	assert_true(fabs(row(&d, "a")->flat.base - 49) < 1e-9);
	assert_int_equal(d.nregressions, 0);
	kiln_diff_release(&d);
	for (i = 0; i < 2; i++)
		kiln_prof_free(b[i]);
	for (i = 0; i < 3; i++)
		kiln_prof_free(n[i]);
}

static void test_bad_args(void **state)
{
	struct kiln_prof *b = prof(5, 3, 2);
	struct kiln_diff_opts o = KILN_DIFF_OPTS_INIT;
	struct kiln_diff d;
	int t = 1, bad = 7;

	(void)state;
	assert_int_equal(kiln_diff_build(&d, &b, &t, 0, &b, &t, 1, NULL), -EINVAL);
	assert_int_equal(kiln_diff_build(&d, &b, &bad, 1, &b, &t, 1, NULL), -EINVAL);
	o.confidence = 1.5;
	assert_int_equal(kiln_diff_build(&d, &b, &t, 1, &b, &t, 1, &o), -EINVAL);
	kiln_prof_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical),
		cmocka_unit_test(test_grew_and_gate),
		cmocka_unit_test(test_profiles_resampled),
		cmocka_unit_test(test_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
