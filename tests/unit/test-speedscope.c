/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the speedscope JSON writer and reader (format stage): a
 * small profile built here is compared with the exact JSON expected, a
 * real perf script fixture is checked for frames, samples and weights;
 * speedscope's own sample files (tests/fixtures/speedscope, MIT) are read,
 * and kiln's output reads back with the same totals.
 */
#include <errno.h>
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

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay++;
	}
	return n;
}

/* main -> work (work.c:10, inlined helper at 12), plus an unknown frame. */
static struct kiln_prof *small_profile(const char *type)
{
	struct kiln_prof *p = kiln_prof_new();
	const char *types[] = { "samples/count", type };
	struct kiln_mapping m = { 0 };
	struct kiln_line l[2];
	uint32_t fmain, fwork, fhelp, map, lwork, lmain, lunk, st[3];
	int64_t v[2];

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	m.file = kiln_prof_interns(p, "/bin/prog");
	map = kiln_prof_mapping(p, &m);
	fmain = kiln_prof_function(p, kiln_prof_interns(p, "main"), 0,
				   kiln_prof_interns(p, "main.c"), 3);
	fwork = kiln_prof_function(p, kiln_prof_interns(p, "work"), 0,
				   kiln_prof_interns(p, "work.c"), 10);
	fhelp = kiln_prof_function(p, kiln_prof_interns(p, "helper \"x\""), 0,
				   kiln_prof_interns(p, "work.c"), 0);
	l[0].function = fhelp;
	l[0].line = 12;
	l[1].function = fwork;
	l[1].line = 11;
	lwork = kiln_prof_location(p, map, 0x10, l, 2);
	l[0].function = fmain;
	l[0].line = 5;
	lmain = kiln_prof_location(p, map, 0x20, l, 1);
	lunk = kiln_prof_location(p, map, 0x30, NULL, 0);
	st[0] = lwork;
	st[1] = lmain;
	v[0] = 3;
	v[1] = 3000;
	kiln_prof_add_sample(p, st, 2, v, 0);
	st[0] = lunk;
	st[1] = lwork;
	st[2] = lmain;
	v[0] = 1;
	v[1] = 1000;
	kiln_prof_add_sample(p, st, 3, v, 0);
	st[0] = lmain;
	v[0] = 0;
	v[1] = 0;
	kiln_prof_add_sample(p, st, 1, v, 0);	/* zero: not written */
	assert_int_equal(kiln_prof_error(p), 0);
	return p;
}

static void test_golden(void **state)
{
	struct kiln_prof *p = small_profile("cpu/nanoseconds");
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(kiln_speedscope_write(p, 1, "prog", &out), 0);
	assert_string_equal(out.data,
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
		"\"shared\":{\"frames\":[\n"
		"{\"name\":\"main\",\"file\":\"main.c\",\"line\":3},\n"
		"{\"name\":\"work\",\"file\":\"work.c\",\"line\":10},\n"
		"{\"name\":\"helper \\\"x\\\"\",\"file\":\"work.c\"},\n"
		"{\"name\":\"[prog]\"}]},\n"
		"\"profiles\":[{\"type\":\"sampled\",\"name\":\"prog cpu\","
		"\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":4000,\n"
		"\"samples\":[[0,1,2],[0,1,2,3]],\n"
		"\"weights\":[3000,1000]}],\n"
		"\"name\":\"prog\",\"activeProfileIndex\":0,\"exporter\":\"kiln\"}\n");
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

static void test_units(void **state)
{
	struct kiln_prof *p = small_profile("alloc_space/bytes");
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(kiln_speedscope_write(p, 1, NULL, &out), 0);
	assert_non_null(strstr(out.data, "\"unit\":\"bytes\""));
	assert_non_null(strstr(out.data, "\"name\":\"kiln profile\""));
	kiln_buf_reset(&out);
	assert_int_equal(kiln_speedscope_write(p, 0, NULL, &out), 0);
	assert_non_null(strstr(out.data, "\"unit\":\"none\""));
	assert_non_null(strstr(out.data, "\"weights\":[3,1]"));
	assert_int_equal(kiln_speedscope_write(p, 5, NULL, &out), -EINVAL);
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

static void test_perf_fixture(void **state)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[1024];
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_buf in = KILN_BUF_INIT, out = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	char chunk[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/perfscript/shares-g.perf",
		 dir ? dir : "tests/fixtures");
	f = fopen(path, "rb");
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		kiln_buf_add(&in, chunk, n);
	fclose(f);
	assert_int_equal(kiln_perfscript_read(p, in.data, in.len, &d), 0);
	assert_int_equal(kiln_speedscope_write(p, 1, "shares", &out), 0);
	/* 40 samples of 1001001 ns, a weight per distinct stack and time
	 * bucket: per event of the time column, in time order. */
	assert_non_null(strstr(out.data, "\"endValue\":40040040,"));
	assert_int_equal(count(out.data, "{\"name\":\"burn_a\"}"), 1);
	{
		const char *w = strstr(out.data, "\"weights\":[");
		size_t commas = 0;

		assert_non_null(w);
		for (; *w != ']'; w++)
			commas += *w == ',';
		assert_int_equal(commas, p->nevents - 1);
	}
	assert_int_equal(count(strstr(out.data, "\"samples\":"), "["),
			 p->nevents + 1 + count(strstr(out.data, "\"weights\":"), "["));
	kiln_buf_release(&in);
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

static char *slurp(const char *name, size_t *len)
{
	const char *dir = getenv("KILN_FIXTURES");
	struct kiln_buf b = KILN_BUF_INIT;
	char path[1024], chunk[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		assert_int_equal(kiln_buf_add(&b, chunk, n), 0);
	fclose(f);
	return kiln_buf_detach(&b, len);
}

/* The value of the samples whose leaf is name, in type t. */
static int64_t leaf_value(struct kiln_prof *p, const char *name, size_t t)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	int64_t sum = 0;

	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap);

		if (n > 0 && !strcmp(kiln_prof_str(p, f[0].name), name))
			sum += kiln_prof_value(p, i, t);
	}
	free(f);
	return sum;
}

static struct kiln_prof *read_json(const char *text, size_t len)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err;

	assert_non_null(p);
	assert_int_equal(kiln_fmt_detect(text, len), KILN_FMT_SPEEDSCOPE);
	err = kiln_speedscope_read(p, text, len, &d);
	if (err)
		fail_msg("read error %d: %s", err, d.msg);
	return p;
}

static void read_error(const char *text, const char *want)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err = kiln_speedscope_read(p, text, strlen(text), &d);

	if (err != -EINVAL || !strstr(d.msg, want))
		fail_msg("got %d '%s', want '%s'", err, d.msg, want);
	kiln_prof_free(p);
}

/* speedscope's samples: sampled (seconds), evented (none), two profiles. */
static void test_read_samples(void **state)
{
	static const struct { const char *file, *type; int64_t unit; size_t nprof; } t[] = {
		{ "speedscope/simple-sampled.speedscope.json", "time", 1000000000, 1 },
		{ "speedscope/simple-evented.speedscope.json", "samples", 1, 1 },
		{ "speedscope/two-sampled.speedscope.json", "time", 1000000000, 2 },
	};
	size_t i, len;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *text = slurp(t[i].file, &len);
		struct kiln_prof *p = read_json(text, len);
		int64_t u = t[i].unit * (int64_t)t[i].nprof;

		assert_int_equal(p->ntypes, 1);
		assert_string_equal(kiln_prof_str(p, p->types[0].type), t[i].type);
		assert_int_equal(kiln_prof_total(p, 0), 14 * u);
		assert_int_equal(leaf_value(p, "c", 0), 5 * u);
		assert_int_equal(leaf_value(p, "d", 0), 4 * u);
		assert_int_equal(leaf_value(p, "b", 0), 5 * u);
		/* Two profiles: two labels, by their names. */
		if (t[i].nprof == 2) {
			uint32_t k = kiln_prof_find_str(p, "thread_name", 11);

			assert_int_not_equal(k, 0);
			assert_int_not_equal(kiln_prof_find_str(p, "one", 3), 0);
			assert_int_not_equal(kiln_prof_find_str(p, "two", 3), 0);
			assert_int_equal(p->nsamples, 6);
		} else {
			assert_int_equal(p->nsamples, 3);
		}
		kiln_prof_free(p);
		free(text);
	}
}

static void test_read_errors(void **state)
{
	size_t len;
	char *text = slurp("speedscope/invalid-out-of-order-events.json", &len);

	read_error(text, "profile 0, event 6: closes frame 1, which is not the "
		   "innermost open frame");
	free(text);
	read_error("{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\n\"profiles\":"
		   "[{\"type\":\"sampled\",\"samples\":[[0,1]],\"weights\":[1]}]}",
		   "profile 0, sample 0: frame index out of range (1 frames)");
	read_error("{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\n\"profiles\":"
		   "[{\"type\":\"sampled\",\"samples\":[[0]],\"weights\":[-1]}]}",
		   "profile 0, sample 0: the weight is not a number");
	read_error("{\"shared\":{\"frames\":[]},\"profiles\":[{\"type\":\"x\"}]}",
		   "profile 0: type 'x' is neither");
	read_error("{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\n\"profiles\":"
		   "[{\"type\":\"evented\",\"events\":[{\"type\":\"O\",\"frame\":0,"
		   "\"at\":5},{\"type\":\"C\",\"frame\":0,\"at\":4}]}]}",
		   "profile 0, event 1: out of order");
	read_error("{\"profiles\": [\n  {\"type\": \"sampled\",,",
		   "line 2, column 22: not JSON: ");
	read_error("[1, 2]", "not speedscope's format");
}

/* File and line of frames are kept; units scale to nanoseconds. */
static void test_read_frames(void **state)
{
	static const char text[] =
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		"\"shared\":{\"frames\":[{\"name\":\"main\",\"file\":\"m.c\",\"line\":3},"
		"{\"name\":\"work\",\"file\":\"w.c\",\"line\":10,\"col\":2}]},"
		"\"profiles\":[{\"type\":\"sampled\",\"unit\":\"milliseconds\","
		"\"startValue\":0,\"endValue\":3,\"samples\":[[0,1],[0]],"
		"\"weights\":[2.5,0.5]}]}";
	struct kiln_prof *p = read_json(text, sizeof(text) - 1);
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;

	assert_string_equal(kiln_prof_str(p, p->types[0].unit), "nanoseconds");
	assert_int_equal(kiln_prof_total(p, 0), 3000000);
	assert_int_equal(leaf_value(p, "work", 0), 2500000);
	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap);

		assert_true(n > 0);
		assert_string_equal(kiln_prof_str(p, f[n - 1].name), "main");
		assert_string_equal(kiln_prof_str(p,
				p->functions[f[n - 1].function].filename), "m.c");
		assert_int_equal(f[n - 1].line, 3);
		if (n == 2) {
			assert_string_equal(kiln_prof_str(p,
					p->functions[f[0].function].filename), "w.c");
			assert_int_equal(f[0].line, 10);
		}
	}
	free(f);
	kiln_prof_free(p);
}

/* What kiln writes, kiln reads back: the same totals and leaves. */
static void test_roundtrip(void **state)
{
	size_t len, t;
	char *text = slurp("perfscript/shares-g.perf", &len);
	struct kiln_prof *p = kiln_prof_new(), *q;
	struct kiln_buf out = KILN_BUF_INIT;
	struct kiln_diag d = { "" };

	assert_int_equal(kiln_perfscript_read(p, text, len, &d), 0);
	for (t = 0; t < p->ntypes; t++) {
		kiln_buf_reset(&out);
		assert_int_equal(kiln_speedscope_write(p, (int)t, "shares", &out), 0);
		q = read_json(out.data, out.len);
		assert_int_equal(kiln_prof_total(q, 0), kiln_prof_total(p, t));
		assert_int_equal(leaf_value(q, "burn_a", 0), leaf_value(p, "burn_a", t));
		assert_int_equal(leaf_value(q, "burn_b", 0), leaf_value(p, "burn_b", t));
		kiln_prof_free(q);
	}
	kiln_buf_release(&out);
	kiln_prof_free(p);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_perf_fixture),
		cmocka_unit_test(test_read_samples),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_read_frames),
		cmocka_unit_test(test_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
