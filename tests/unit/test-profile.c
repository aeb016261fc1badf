/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the profile model: interning, samples, merge, filter, top. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/top.h"
#include "util/diag.h"

/* Builds a location for function `name` (no mapping). */
static uint32_t loc(struct kiln_prof *p, const char *name)
{
	struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, name),
						  0, 0, 0), 0 };

	return kiln_prof_location(p, 0, 0, &l, 1);
}

/* Adds "root;...;leaf" (root first, as written) with value v. */
static void add(struct kiln_prof *p, const char *stack, int64_t v)
{
	uint32_t locs[32], n = 0;
	char buf[256], *save, *tok;
	int64_t vals[2] = { v, v * 10 };

	strcpy(buf, stack);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc(p, tok);
	/* leaf first */
	for (uint32_t i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, n, vals, 0) >= 0);
}

static struct kiln_prof *make(void)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	add(p, "main;run;a", 6);
	add(p, "main;run;b", 3);
	add(p, "main;run;a", 4);
	add(p, "main;c", 1);
	add(p, "main;rec;rec;rec", 2);
	return p;
}

static void test_strings(void **state)
{
	struct kiln_prof *p = kiln_prof_new();
	uint32_t a, b;

	assert_int_equal(kiln_prof_interns(p, ""), 0);
	assert_string_equal(kiln_prof_str(p, 0), "");
	a = kiln_prof_interns(p, "hello");
	b = kiln_prof_intern(p, "hello world", 5);
	assert_int_equal(a, b);
	assert_int_not_equal(a, kiln_prof_interns(p, "world"));
	assert_string_equal(kiln_prof_str(p, a), "hello");
	assert_int_equal(kiln_prof_find_str(p, "world", 5), kiln_prof_interns(p, "world"));
	assert_int_equal(kiln_prof_find_str(p, "nope", 4), 0);
	/* Many strings force the index to grow. */
	for (int i = 0; i < 10000; i++) {
		char s[32];

		snprintf(s, sizeof(s), "s%d", i);
		assert_int_equal(kiln_prof_interns(p, s), kiln_prof_interns(p, s));
	}
	assert_int_equal(p->nstrs, 10000 + 3);
	kiln_prof_free(p);
}

static void test_samples_interned(void **state)
{
	struct kiln_prof *p = make();

	/* main;run;a twice -> one sample with 10. */
	assert_int_equal(p->nsamples, 4);
	assert_int_equal(kiln_prof_total(p, 0), 16);
	assert_int_equal(kiln_prof_total(p, 1), 160);
	assert_int_equal(p->nfunctions, 6);
	assert_int_equal(p->nlocations, 6);
	kiln_prof_free(p);
}

static void test_type_index(void **state)
{
	struct kiln_prof *p = make();
	struct kiln_diag d;

	assert_int_equal(kiln_prof_type_index(p, NULL, &d), 1);
	assert_int_equal(kiln_prof_type_index(p, "samples", &d), 0);
	assert_int_equal(kiln_prof_type_index(p, "cpu/nanoseconds", &d), 1);
	assert_int_equal(kiln_prof_type_index(p, "0", &d), 0);
	assert_int_equal(kiln_prof_type_index(p, "alloc_space", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "samples, cpu"));
	p->default_type = kiln_prof_interns(p, "samples");
	assert_int_equal(kiln_prof_type_index(p, NULL, &d), 0);
	kiln_prof_free(p);
}

static int64_t row(const struct kiln_top *t, struct kiln_prof *p,
		   const char *name, bool cum)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(kiln_prof_str(p, t->rows[i].name), name))
			return cum ? t->rows[i].cum : t->rows[i].flat;
	return -1;
}

static void test_top(void **state)
{
	struct kiln_prof *p = make();
	struct kiln_top t;

	assert_int_equal(kiln_top_build(&t, p, 0, KILN_TOP_FUNCTIONS, false), 0);
	assert_int_equal(t.total, 16);
	assert_string_equal(kiln_prof_str(p, t.rows[0].name), "a");
	assert_int_equal(row(&t, p, "a", false), 10);
	assert_int_equal(row(&t, p, "b", false), 3);
	assert_int_equal(row(&t, p, "run", false), 0);
	assert_int_equal(row(&t, p, "run", true), 13);
	assert_int_equal(row(&t, p, "main", true), 16);
	/* Recursion counts a sample once. */
	assert_int_equal(row(&t, p, "rec", true), 2);
	assert_int_equal(row(&t, p, "rec", false), 2);
	kiln_top_release(&t);
	assert_int_equal(kiln_top_build(&t, p, 1, KILN_TOP_FUNCTIONS, true), 0);
	assert_string_equal(kiln_prof_str(p, t.rows[0].name), "main");
	kiln_top_release(&t);
	kiln_prof_free(p);
}

/* A profile of n functions of one sample each: names decide the order;
 * interned in steps of step (prime to n), so ids differ between two. */
static struct kiln_prof *flat_names(char first, int n, int step)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();
	char name[16];

	int i;

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	for (i = 0; i < n; i++) {
		/* Interned in an order other than the names': ids differ. */
		snprintf(name, sizeof(name), "%c%04d", first, (i * step) % n);
		add(p, name, 1);
	}
	return p;
}

struct top_job {
	struct kiln_prof *p;
	int wrong;
};

/* Builds p's table again and again: its rows in name order each time. */
static void *top_again(void *arg)
{
	struct top_job *j = arg;
	struct kiln_top t;
	size_t i, k;

	for (k = 0; k < 40; k++) {
		if (kiln_top_build(&t, j->p, 0, KILN_TOP_FUNCTIONS, false)) {
			j->wrong++;
			continue;
		}
		for (i = 1; i < t.n; i++)
			j->wrong += strcmp(kiln_prof_str(j->p, t.rows[i - 1].name),
					   kiln_prof_str(j->p, t.rows[i].name)) > 0;
		kiln_top_release(&t);
	}
	return NULL;
}

/* Tables of two profiles built at once (kiln serve's request threads):
 * each sorted by its own profile's names -- the order's context was a
 * global, and one thread sorted with the other's strings (a crash in
 * t963 once in 40 runs). */
static void test_top_threads(void **state)
{
	struct top_job a = { flat_names('a', 2000, 37), 0 };
	struct top_job b = { flat_names('z', 2000, 1999), 0 };
	pthread_t ta, tb;

	assert_int_equal(pthread_create(&ta, NULL, top_again, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, top_again, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.wrong, 0);
	assert_int_equal(b.wrong, 0);
	kiln_prof_free(a.p);
	kiln_prof_free(b.p);
	(void)state;
}

static void test_merge(void **state)
{
	struct kiln_prof *a = make(), *b = make(), *e = kiln_prof_new();
	struct kiln_diag d;

	assert_int_equal(kiln_prof_merge(a, b, &d), 0);
	assert_int_equal(a->nsamples, 4);
	assert_int_equal(kiln_prof_total(a, 0), 32);
	/* Into an empty profile: types are taken over. */
	assert_int_equal(kiln_prof_merge(e, b, &d), 0);
	assert_int_equal(e->ntypes, 2);
	assert_int_equal(kiln_prof_total(e, 1), 160);
	/* Different types are refused. */
	{
		static const char *const t[] = { "alloc_space/bytes" };
		struct kiln_prof *h = kiln_prof_new();

		kiln_prof_set_types_str(h, t, 1);
		assert_int_equal(kiln_prof_merge(h, a, &d), -EINVAL);
		assert_non_null(strstr(d.msg, "different sample types"));
		kiln_prof_free(h);
	}
	kiln_prof_free(a);
	kiln_prof_free(b);
	kiln_prof_free(e);
}

/* A copy into an empty profile appends its samples without looking for
 * equals: later samples still find theirs, and two samples that become
 * one in the copy (their locations equal there) are merged. */
static void test_merge_fresh(void **state)
{
	struct kiln_prof *b = make(), *e = kiln_prof_new(), *f = kiln_prof_new();
	struct kiln_line l = { kiln_prof_function(b, kiln_prof_interns(b, "x"),
						  0, 0, 0), 0 };
	int64_t v[2] = { 5, 50 };
	uint32_t l1, l2;
	struct kiln_diag d;

	assert_int_equal(kiln_prof_merge(e, b, &d), 0);
	assert_int_equal(e->nsamples, 4);
	add(e, "main;run;a", 1);	/* an equal: found, not a fifth */
	assert_int_equal(e->nsamples, 4);
	assert_int_equal(kiln_prof_total(e, 0), 17);
	/* l1 gets its lines after it was made: equal to l2 in content, a
	 * second id in b, one location of the copy. */
	l1 = kiln_prof_location(b, 0, 0x10, NULL, 0);
	l2 = kiln_prof_location(b, 0, 0x10, &l, 1);
	assert_int_not_equal(l1, l2);
	assert_int_equal(kiln_prof_set_lines(b, l1, &l, 1), 0);
	assert_true(kiln_prof_add_sample(b, &l1, 1, v, 0) >= 0);
	assert_true(kiln_prof_add_sample(b, &l2, 1, v, 0) >= 0);
	assert_int_equal(b->nsamples, 6);
	assert_int_equal(kiln_prof_merge(f, b, &d), 0);
	assert_int_equal(f->nsamples, 5);
	assert_int_equal(kiln_prof_total(f, 0), 26);
	assert_int_equal(kiln_prof_total(f, 1), 260);
	kiln_prof_free(b);
	kiln_prof_free(e);
	kiln_prof_free(f);
}

static void test_filter(void **state)
{
	struct kiln_prof *p = make();
	struct kiln_diag d;

	assert_int_equal(kiln_prof_filter(p, "^run$", NULL, &d), 0);
	assert_int_equal(kiln_prof_total(p, 0), 13);
	assert_int_equal(kiln_prof_filter(p, NULL, "^b", &d), 0);
	assert_int_equal(kiln_prof_total(p, 0), 10);
	assert_int_equal(p->nsamples, 1);
	/* Samples stay interned after a filter. */
	add(p, "main;run;a", 1);
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(kiln_prof_filter(p, "(", NULL, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "focus"));
	kiln_prof_free(p);
}

/* hide: frames go, samples stay and merge where their stacks now agree;
 * an inline chain keeps its other frames. */
static void test_hide(void **state)
{
	struct kiln_prof *p = make();
	struct kiln_mapping m = { 0x400000, 0x500000, 0x1000,
				  kiln_prof_interns(p, "/usr/bin/prog") };
	uint32_t mid = kiln_prof_mapping(p, &m);
	struct kiln_line lines[2] = {
		{ kiln_prof_function(p, kiln_prof_interns(p, "helper"), 0, 0, 0), 10 },
		{ kiln_prof_function(p, kiln_prof_interns(p, "outer"), 0, 0, 0), 20 },
	};
	uint32_t l2 = kiln_prof_location(p, mid, 0x401234, lines, 2);
	struct kiln_frame *f = NULL;
	struct kiln_diag d;
	size_t cap = 0, i;
	int64_t total = kiln_prof_total(p, 0), v[2] = { 7, 7 };
	long n;

	assert_true(kiln_prof_add_sample(p, &l2, 1, v, 0) >= 0);
	total += 7;
	assert_int_equal(kiln_prof_hide(p, "^(a|b|helper)$", &d), 0);
	/* Every value stays. */
	assert_int_equal(kiln_prof_total(p, 0), total);
	for (i = 0; i < p->nsamples; i++) {
		long j;

		n = kiln_prof_frames(p, &p->samples[i], &f, &cap);
		assert_true(n >= 0);
		for (j = 0; j < n; j++) {
			const char *name = kiln_prof_str(p, f[j].name);

			assert_string_not_equal(name, "a");
			assert_string_not_equal(name, "b");
			assert_string_not_equal(name, "helper");
		}
		/* The inline chain kept outer, at its line. */
		if (n == 1 && !strcmp(kiln_prof_str(p, f[0].name), "outer"))
			assert_int_equal(f[0].line, 20);
	}
	/* main;run;a and main;run;b now both end in run: one sample. */
	{
		size_t runs = 0;

		for (i = 0; i < p->nsamples; i++) {
			n = kiln_prof_frames(p, &p->samples[i], &f, &cap);
			if (n == 2 && !strcmp(kiln_prof_str(p, f[0].name), "run"))
				runs++;
		}
		assert_int_equal(runs, 1);
	}
	/* Nothing to hide; a bad regex. */
	assert_int_equal(kiln_prof_hide(p, NULL, &d), 0);
	assert_int_equal(kiln_prof_hide(p, "", &d), 0);
	assert_int_equal(kiln_prof_hide(p, "(", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "hide"));
	free(f);
	kiln_prof_free(p);
	(void)state;
}

/* A second address of loc's mapping names alike: 1 if so. */
static int fallback_twice(struct kiln_prof *p, uint32_t loc)
{
	const struct kiln_location *l = &p->locations[loc];
	uint32_t other = kiln_prof_location(p, l->mapping, l->address + 0x40,
					    NULL, 0);
	struct kiln_frame *f = NULL;
	size_t cap = 0;
	uint32_t n1, n2;
	int64_t v = 1;
	long i;

	assert_int_not_equal(other, loc);
	assert_true(kiln_prof_add_sample(p, &loc, 1, &v, 0) >= 0);
	assert_true(kiln_prof_add_sample(p, &other, 1, &v, 0) >= 0);
	i = kiln_prof_frames(p, &p->samples[p->nsamples - 2], &f, &cap);
	assert_int_equal(i, 1);
	n1 = f[0].name;
	i = kiln_prof_frames(p, &p->samples[p->nsamples - 1], &f, &cap);
	assert_int_equal(i, 1);
	n2 = f[0].name;
	free(f);
	return n1 == n2;
}

static void test_inline_and_fallback(void **state)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_mapping m = { 0x400000, 0x500000, 0x1000,
				  kiln_prof_interns(p, "/usr/bin/prog") };
	uint32_t mid = kiln_prof_mapping(p, &m);
	struct kiln_line lines[2] = {
		{ kiln_prof_function(p, kiln_prof_interns(p, "inner"), 0, 0, 0), 10 },
		{ kiln_prof_function(p, kiln_prof_interns(p, "outer"), 0, 0, 0), 20 },
	};
	uint32_t locs[2];
	int64_t v = 1;
	struct kiln_frame *f = NULL;
	size_t cap = 0;
	long n;

	kiln_prof_set_types_str(p, (const char *const[]){ "samples/count" }, 1);
	locs[0] = kiln_prof_location(p, mid, 0x401234, lines, 2);
	locs[1] = kiln_prof_location(p, mid, 0x402000, NULL, 0);
	assert_int_equal(kiln_prof_location(p, mid, 0x401234, lines, 2), locs[0]);
	assert_true(kiln_prof_add_sample(p, locs, 2, &v, 0) >= 0);
	n = kiln_prof_frames(p, &p->samples[0], &f, &cap);
	assert_int_equal(n, 3);
	assert_string_equal(kiln_prof_str(p, f[0].name), "inner");
	assert_int_equal(f[0].line, 10);
	assert_string_equal(kiln_prof_str(p, f[1].name), "outer");
	/* No symbol: named by the module, as FlameGraph and perf do, so
	 * that a flame graph shows one frame per module; the address stays. */
	assert_string_equal(kiln_prof_str(p, f[2].name), "[prog]");
	assert_int_equal(p->locations[f[2].location].address, 0x402000);
	assert_int_equal(kiln_prof_loc_kind(p, locs[0]), KILN_KIND_USER);
	{
		struct kiln_mapping vd = { 0x7fff0000, 0x7fff2000, 0,
					   kiln_prof_interns(p, "[vdso]") };
		struct kiln_mapping jit = { 0, 0, 0,
					    kiln_prof_interns(p, "/tmp/perf-1234.map") };
		struct kiln_mapping unk = { 0, 0, 0, kiln_prof_interns(p, "[unknown]") };
		uint32_t l4[4];
		static const char *const want[4] = {
			"[vdso]", "[perf-1234.map]", "[unknown]", "[unknown]",
		};
		int i;

		l4[0] = kiln_prof_location(p, kiln_prof_mapping(p, &vd), 0x7fff0100,
					   NULL, 0);
		l4[1] = kiln_prof_location(p, kiln_prof_mapping(p, &jit), 0x1234,
					   NULL, 0);
		l4[2] = kiln_prof_location(p, kiln_prof_mapping(p, &unk), 0x99,
					   NULL, 0);
		l4[3] = kiln_prof_location(p, 0, 0x42, NULL, 0);
		assert_true(kiln_prof_add_sample(p, l4, 4, &v, 0) >= 0);
		n = kiln_prof_frames(p, &p->samples[1], &f, &cap);
		assert_int_equal(n, 4);
		for (i = 0; i < 4; i++)
			assert_string_equal(kiln_prof_str(p, f[i].name), want[i]);
		/* Two addresses of one JIT map: one name, two locations. */
		assert_int_equal(fallback_twice(p, l4[1]), 1);
	}
	free(f);
	kiln_prof_free(p);
}

/* Adds leaf f with value v and labels pid=pid (numeric) and who=who
 * (a string; NULL: no labels at all). */
static void add_labelled(struct kiln_prof *p, const char *f, int64_t pid,
			 const char *who, int64_t v)
{
	struct kiln_label l[2] = {
		{ kiln_prof_interns(p, "pid"), 0, pid, 0 },
		{ kiln_prof_interns(p, "who"), who ? kiln_prof_interns(p, who) : 0, 0, 0 },
	};
	uint32_t locs[2] = { loc(p, f), loc(p, "main") };
	int64_t vals[2] = { v, v };

	assert_true(kiln_prof_add_sample(p, locs, 2, vals,
					 who ? kiln_prof_labelset(p, l, 2) : 0) >= 0);
}

static struct kiln_prof *make_labelled(void)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	add_labelled(p, "a", 1, "x", 1);
	add_labelled(p, "b", 2, "y", 10);
	add_labelled(p, "c", 3, "x", 100);
	add_labelled(p, "d", 0, NULL, 1000);
	return p;
}

static void test_labels(void **state)
{
	const struct kiln_label_cond pid12[] = {
		{ "pid", "1", false }, { "pid", "2", false },
	};
	const struct kiln_label_cond pid12_x[] = {
		{ "pid", "1", false }, { "pid", "2", false }, { "who", "x", false },
	};
	const struct kiln_label_cond not_x[] = { { "who", "x", true } };
	const struct kiln_label_cond nokey[] = { { "nokey", "1", false } };
	struct kiln_frame *f = NULL;
	struct kiln_prof *p;
	size_t cap = 0, i;
	char buf[32];

	/* Two values of one key: either; with another key: both. */
	p = make_labelled();
	assert_int_equal(kiln_prof_keep_labels(p, pid12, 2), 0);
	assert_int_equal(kiln_prof_total(p, 0), 11);
	assert_int_equal(kiln_prof_keep_labels(p, pid12_x, 3), 0);
	assert_int_equal(kiln_prof_total(p, 0), 1);
	kiln_prof_free(p);
	/* Exclude keeps the samples without the label. */
	p = make_labelled();
	assert_int_equal(kiln_prof_keep_labels(p, not_x, 1), 0);
	assert_int_equal(kiln_prof_total(p, 0), 1010);
	assert_int_equal(kiln_prof_keep_labels(p, NULL, 0), 0);
	assert_int_equal(kiln_prof_total(p, 0), 1010);
	/* A key nobody has keeps nothing. */
	assert_int_equal(kiln_prof_keep_labels(p, nokey, 1), 0);
	assert_int_equal(kiln_prof_total(p, 0), 0);
	kiln_prof_free(p);
	/* Group: the outermost frame names the value. */
	p = make_labelled();
	assert_int_equal(kiln_prof_group_by_label(p, "who"), 0);
	assert_int_equal(kiln_prof_total(p, 0), 1111);
	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap);
		const struct kiln_label *l = kiln_prof_label(p, p->samples[i].labels,
			kiln_prof_find_str(p, "who", 3));

		assert_int_equal(n, 3);
		assert_string_equal(kiln_prof_str(p, f[1].name), "main");
		snprintf(buf, sizeof(buf), "who=%s", l ? kiln_prof_str(p, l->str) : "(none)");
		assert_string_equal(kiln_prof_str(p, f[2].name), buf);
	}
	{
		const struct kiln_label num = { 0, 0, -42, 0 };

		assert_string_equal(kiln_prof_label_text(p, &num, buf, sizeof(buf)), "-42");
	}
	free(f);
	kiln_prof_free(p);
}

/* Values added up past INT64_MAX by magnitude (however they fall into
 * samples): -EOVERFLOW, never a wrapped total; samples taken out and
 * added again are counted again from zero. */
static void test_overflow(void **state)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	const int64_t big[2] = { 1, 5000000000000000000ll };
	const int64_t neg[2] = { 1, -5000000000000000000ll };
	uint32_t a, b;
	struct kiln_prof *p;
	struct kiln_prof_samples o;
	int round;

	(void)state;
	for (round = 0; round < 3; round++) {
		p = kiln_prof_new();
		assert_non_null(p);
		assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
		a = kiln_prof_location(p, 0, 0x10, NULL, 0);
		b = kiln_prof_location(p, 0, 0x20, NULL, 0);
		assert_true(kiln_prof_add_sample(p, &a, 1, big, 0) >= 0);
		assert_int_equal(kiln_prof_error(p), 0);
		/* the same sample, another one, or one that cancels out by
		 * value (magnitudes add up) */
		kiln_prof_add_sample(p, round == 1 ? &b : &a, 1,
				     round == 2 ? neg : big, 0);
		assert_int_equal(kiln_prof_error(p), -EOVERFLOW);
		kiln_prof_free(p);
	}
	p = kiln_prof_new();
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	a = kiln_prof_location(p, 0, 0x10, NULL, 0);
	assert_true(kiln_prof_add_sample(p, &a, 1, big, 0) >= 0);
	o = kiln_prof_take_samples(p);
	kiln_prof_readd(p, &o, 0, &a, 1, big, 0);
	kiln_prof_samples_free(p, &o);
	assert_int_equal(kiln_prof_error(p), 0);
	assert_int_equal(kiln_prof_value(p, 0, 1), big[1]);
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_samples_interned),
		cmocka_unit_test(test_type_index),
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_top_threads),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_fresh),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_hide),
		cmocka_unit_test(test_inline_and_fallback),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
