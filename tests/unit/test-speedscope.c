/*
 * Unit tests of the speedscope JSON writer (format stage): a small
 * profile built here is compared with the exact JSON expected, and a real
 * perf script fixture is checked for frames, samples and weights.
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
	/* 40 samples of 1001001 ns, in as many weights as distinct stacks. */
	assert_non_null(strstr(out.data, "\"endValue\":40040040,"));
	assert_int_equal(count(out.data, "{\"name\":\"burn_a\"}"), 1);
	{
		const char *w = strstr(out.data, "\"weights\":[");
		size_t commas = 0;

		assert_non_null(w);
		for (; *w != ']'; w++)
			commas += *w == ',';
		assert_int_equal(commas, p->nsamples - 1);
	}
	assert_int_equal(count(strstr(out.data, "\"samples\":"), "["),
			 p->nsamples + 1 + count(strstr(out.data, "\"weights\":"), "["));
	kiln_buf_release(&in);
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_perf_fixture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
