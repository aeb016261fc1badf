/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the collapsed-stacks reader and writer (format stage).
 * tests/fixtures/collapsed/shares.collapsed was folded from
 * tests/fixtures/perfscript/shares-g.perf by the awk script in the
 * fixtures README, independently of kiln: kiln's writer must print the
 * same text from the perf script file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

static char *slurp(const char *name, size_t *len)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[1024];
	FILE *f;
	char *data;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t)n + 1);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	data[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return data;
}

static struct kiln_prof *read_text(const char *text, size_t len)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err;

	assert_non_null(p);
	err = kiln_collapsed_read(p, text, len, &d);
	if (err)
		fprintf(stderr, "read error %d: %s\n", err, d.msg);
	assert_int_equal(err, 0);
	return p;
}

static void expect_error(const char *text, const char *want)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err = kiln_collapsed_read(p, text, strlen(text), &d);

	if (err != -EINVAL || !strstr(d.msg, want))
		fprintf(stderr, "got %d '%s', want '%s'\n", err, d.msg, want);
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(d.msg, want));
	kiln_prof_free(p);
}

static int64_t leaf_value(struct kiln_prof *p, const char *name)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	int64_t sum = 0;

	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap);

		if (n > 0 && !strcmp(kiln_prof_str(p, f[0].name), name))
			sum += kiln_prof_value(p, i, 0);
	}
	free(f);
	return sum;
}

static void test_read_fixture(void **state)
{
	size_t len;
	char *text = slurp("collapsed/shares.collapsed", &len);
	struct kiln_prof *p = read_text(text, len);
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	long n;

	assert_int_equal(p->ntypes, 1);
	assert_string_equal(kiln_prof_str(p, p->types[0].type), "samples");
	assert_string_equal(kiln_prof_str(p, p->types[0].unit), "count");
	assert_int_equal(kiln_prof_total(p, 0), 40);
	assert_int_equal(leaf_value(p, "burn_a"), 20);
	assert_int_equal(leaf_value(p, "burn_b"), 10);
	assert_int_equal(leaf_value(p, "_raw_spin_unlock_irqrestore"), 4);
	/* "_[k]" is stripped and becomes a kernel mapping. */
	assert_int_equal(kiln_prof_find_str(p, "common_interrupt_[k]", 20), 0);
	for (i = 0; i < p->nsamples; i++) {
		n = kiln_prof_frames(p, &p->samples[i], &f, &cap);
		assert_true(n >= 4);
		/* Leaf first in the model, root first in the text. */
		assert_true(!strcmp(kiln_prof_str(p, f[n - 1].name),
				    "__libc_start_call_main") ||
			    !strcmp(kiln_prof_str(p, f[n - 1].name),
				    "_dl_start_user"));
		if (!strcmp(kiln_prof_str(p, f[0].name), "handle_softirqs"))
			assert_int_equal(kiln_prof_loc_kind(p, f[0].location),
					 KILN_KIND_KERNEL);
		if (!strcmp(kiln_prof_str(p, f[0].name), "burn_a"))
			assert_int_not_equal(kiln_prof_loc_kind(p, f[0].location),
					     KILN_KIND_KERNEL);
	}
	free(f);
	free(text);
	kiln_prof_free(p);
}

static void test_read_forms(void **state)
{
	static const char text[] =
		"# made by hand\r\n"
		"\r\n"
		"main;std::vector<int, std::allocator<int> >::push_back(int const&);operator new(unsigned long) 9000000000000\r\n"
		"  main;(anonymous namespace)::f 3\r\n"
		"main;Interpreter_[j];helper_[i] 2\n"
		"main;(anonymous namespace)::f 4\n"
		"main 1";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);
	struct kiln_frame *f = NULL;
	size_t cap = 0;
	long n;

	assert_int_equal(kiln_prof_total(p, 0), 9000000000000LL + 10);
	assert_int_equal(leaf_value(p, "operator new(unsigned long)"), 9000000000000LL);
	/* Equal stacks merge. */
	assert_int_equal(leaf_value(p, "(anonymous namespace)::f"), 7);
	assert_int_equal(leaf_value(p, "helper"), 2);
	assert_int_equal(leaf_value(p, "main"), 1);
	assert_int_equal(p->nsamples, 4);
	n = kiln_prof_frames(p, &p->samples[2], &f, &cap);
	assert_int_equal(n, 3);
	assert_string_equal(kiln_prof_str(p, f[1].name), "Interpreter");
	assert_int_equal(kiln_prof_loc_kind(p, f[1].location), KILN_KIND_OTHER);
	free(f);
	kiln_prof_free(p);
}

static void test_errors(void **state)
{
	expect_error("main;f 1\nmain;g\n", "line 2: no count at the end of the line");
	expect_error("main;f 1\n\nmain;g x12\n", "line 3: no count at the end of the line: 'x12' is not a number");
	expect_error("a;b 99999999999999999999\n", "line 1: the count '99999999999999999999' is too large");
	expect_error("# nothing\n\n", "no stacks");
	expect_error("", "no stacks");
	expect_error("   12\n", "line 1: no count at the end");
}

static struct kiln_prof *read_perf_fixture(const char *name)
{
	size_t len;
	char *text = slurp(name, &len);
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };

	assert_int_equal(kiln_perfscript_read(p, text, len, &d), 0);
	free(text);
	return p;
}

/* kiln's output equals what the independent awk folding made. */
static void test_write_golden(void **state)
{
	struct kiln_prof *p = read_perf_fixture("perfscript/shares-g.perf");
	struct kiln_buf out = KILN_BUF_INIT;
	size_t len;
	char *want = slurp("collapsed/shares.collapsed", &len);

	assert_int_equal(kiln_collapsed_write(p, 0, &out), 0);
	assert_string_equal(out.data, want);
	/* The cpu type writes nanoseconds, same stacks. */
	kiln_buf_reset(&out);
	assert_int_equal(kiln_collapsed_write(p, 1, &out), 0);
	assert_non_null(strstr(out.data, "__libc_start_call_main;main;run;burn_a 20020020\n"));
	assert_int_equal(kiln_collapsed_write(p, 2, &out), -EINVAL);
	kiln_buf_release(&out);
	free(want);
	kiln_prof_free(p);
}

/*
 * A profile whose only sample has no frames (a pprof sample without
 * locations): no stack was ever stored, so the stack array is NULL, and
 * finding the sample's frames must not compute NULL + 0 (UBSan: "applying
 * zero offset to null pointer", seen via kiln_collapsed_write).
 */
static void test_write_empty_stack(void **state)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_buf out = KILN_BUF_INIT;
	int64_t v = 7;

	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	assert_true(kiln_prof_add_sample(p, NULL, 0, &v, 0) >= 0);
	assert_null(p->stacks);
	assert_int_equal(kiln_collapsed_write(p, 0, &out), 0);
	assert_int_equal(out.len, 0);
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

/* Inline frames expand; stacks with the same names merge; sorted. */
static void test_write_inline_merge(void **state)
{
	struct kiln_prof *p = kiln_prof_new();
	static const char *const types[] = { "samples/count" };
	struct kiln_line lines[2];
	struct kiln_mapping m = { 0 };
	struct kiln_buf out = KILN_BUF_INIT;
	uint32_t fmain, finl, fouter, l1, l2, lmain, stack[2];
	int64_t v;

	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	m.file = kiln_prof_interns(p, "/bin/prog");
	m.start = 0x1000;
	m.limit = 0x9000;
	fmain = kiln_prof_function(p, kiln_prof_interns(p, "main"), 0, 0, 0);
	finl = kiln_prof_function(p, kiln_prof_interns(p, "inl;ined"), 0, 0, 0);
	fouter = kiln_prof_function(p, kiln_prof_interns(p, "outer"), 0, 0, 0);
	lines[0].function = finl;	/* innermost first */
	lines[0].line = 3;
	lines[1].function = fouter;
	lines[1].line = 9;
	l1 = kiln_prof_location(p, kiln_prof_mapping(p, &m), 0x1100, lines, 2);
	/* A second address in the same functions: same names, merged. */
	lines[0].line = 4;
	l2 = kiln_prof_location(p, kiln_prof_mapping(p, &m), 0x1104, lines, 2);
	lines[0].function = fmain;
	lines[0].line = 1;
	lmain = kiln_prof_location(p, kiln_prof_mapping(p, &m), 0x1200, lines, 1);
	stack[1] = lmain;
	stack[0] = l1;
	v = 5;
	kiln_prof_add_sample(p, stack, 2, &v, 0);
	stack[0] = l2;
	v = 7;
	kiln_prof_add_sample(p, stack, 2, &v, 0);
	stack[0] = lmain;
	v = 1;
	kiln_prof_add_sample(p, stack, 1, &v, 0);
	/* An unsymbolized address: named by its module (docs/symbols.md). */
	stack[0] = kiln_prof_location(p, kiln_prof_mapping(p, &m), 0x1300, NULL, 0);
	v = 2;
	kiln_prof_add_sample(p, stack, 2, &v, 0);
	assert_int_equal(kiln_prof_error(p), 0);
	assert_int_equal(kiln_collapsed_write(p, 0, &out), 0);
	assert_string_equal(out.data,
			    "main 1\n"
			    "main;[prog] 2\n"
			    "main;outer;inl:ined 12\n");
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

static void test_roundtrip(void **state)
{
	size_t len;
	char *text = slurp("collapsed/shares.collapsed", &len);
	struct kiln_prof *p = read_text(text, len);
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(kiln_collapsed_write(p, 0, &out), 0);
	assert_string_equal(out.data, text);
	kiln_buf_release(&out);
	free(text);
	kiln_prof_free(p);
}

/* Reads text through kiln_read_profile() (from a file, as the CLI reads),
 * so that the decoding done before detection is part of it. */
static struct kiln_prof *read_file(const char *text, size_t len,
				   struct kiln_diag *d, int *errp)
{
	char path[] = "/tmp/kiln-test-collapsed.XXXXXX";
	int fd = mkstemp(path);
	struct kiln_prof *p = NULL;
	enum kiln_fmt fmt = KILN_FMT_UNKNOWN;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	*errp = kiln_read_profile(path, &p, &fmt, d);
	unlink(path);
	if (!*errp)
		assert_int_equal(fmt, KILN_FMT_COLLAPSED);
	return p;
}

/* Byte order marks: UTF-8 (read directly and from a file), UTF-16 LE and
 * BE (converted where the file is loaded), with CRLF line ends. */
static void test_bom(void **state)
{
	static const char utf8[] = "\xef\xbb\xbf" "main;f 3\r\nmain;g 2\r\n";
	/* "main;é 3\r\n" in UTF-16: é is U+00E9, a surrogate pair U+1F525. */
	static const char le[] = "\xff\xfe" "m\0a\0i\0n\0;\0\xe9\0 \0" "3\0\r\0\n\0"
				 "m\0;\0\x3d\xd8\x25\xdd \0" "4\0";
	static const char be[] = "\xfe\xff" "\0m\0a\0i\0n\0;\0\xe9\0 \0" "3\0\r\0\n"
				 "\0m\0;\xd8\x3d\xdd\x25\0 \0" "4";
	const char *texts[] = { le, be };
	const size_t lens[] = { sizeof(le) - 1, sizeof(be) - 1 };
	struct kiln_diag d = { "" };
	struct kiln_prof *p;
	size_t i;
	int err;

	p = read_text(utf8, sizeof(utf8) - 1);
	assert_int_equal(leaf_value(p, "f"), 3);
	assert_int_not_equal(kiln_prof_find_str(p, "main", 4), 0);
	kiln_prof_free(p);
	p = read_file(utf8, sizeof(utf8) - 1, &d, &err);
	assert_int_equal(err, 0);
	assert_int_not_equal(kiln_prof_find_str(p, "main", 4), 0);
	kiln_prof_free(p);
	for (i = 0; i < 2; i++) {
		p = read_file(texts[i], lens[i], &d, &err);
		if (err)
			fail_msg("UTF-16 %s: %s", i ? "BE" : "LE", d.msg);
		assert_int_equal(kiln_prof_total(p, 0), 7);
		assert_int_equal(leaf_value(p, "\xc3\xa9"), 3);
		assert_int_equal(leaf_value(p, "\xf0\x9f\x94\xa5"), 4);
		assert_string_equal(d.warn, "");
		kiln_prof_free(p);
	}
}

/* speedscope's own samples: UTF-16 both ways, CRLF, comments. */
static void test_speedscope_samples(void **state)
{
	static const char *const names[] = {
		"speedscope/simple-utf16-le.txt", "speedscope/simple-utf16-be.txt",
		"speedscope/simple-crlf.txt", "speedscope/simple-with-invalids.txt",
	};
	struct kiln_diag d = { "" };
	size_t i, len;
	int err;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *text = slurp(names[i], &len);
		struct kiln_prof *p = read_file(text, len, &d, &err);

		if (err)
			fail_msg("%s: %s", names[i], d.msg);
		assert_int_equal(kiln_prof_total(p, 0), 14);
		assert_int_equal(leaf_value(p, "c"), 5);
		assert_int_equal(leaf_value(p, "d"), 4);
		assert_int_equal(leaf_value(p, "b"), 5);
		if (i == 3)
			assert_non_null(strstr(d.warn, "': skipped 1 malformed line, "
					       "first at line 8: no count at the end"));
		else
			assert_string_equal(d.warn, "");
		kiln_prof_free(p);
		free(text);
	}
}

/* Comments ('#', '//') are neither stacks nor malformed lines. */
static void test_comments(void **state)
{
	static const char text[] = "# perf 6.1\n// exported by a tool\n"
				   "  # indented\nmain;f 2\n\t// again\nmain;g 1\n";
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };

	assert_int_equal(kiln_collapsed_read(p, text, sizeof(text) - 1, &d), 0);
	assert_int_equal(kiln_prof_total(p, 0), 3);
	assert_string_equal(d.warn, "");
	kiln_prof_free(p);
}

/* A malformed line among good ones: skipped, counted in one warning;
 * as many bad lines as good ones: refused with the first. */
static void test_skipped_lines(void **state)
{
	static const char some[] = "main;f 3\nmain;g 2\nmain;h 1\n"
				   "main;x\nmain;f 4\n12 \nmain;y 1x\nmain;g 1\n";
	static const char most[] = "main;f 3\nnot a stack\nmain;g\n";
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err;

	assert_int_equal(kiln_collapsed_read(p, some, sizeof(some) - 1, &d), 0);
	assert_int_equal(kiln_prof_total(p, 0), 11);
	assert_string_equal(d.warn, "skipped 3 malformed lines, first at line 4: "
			    "no count at the end of the line (expected "
			    "'frame;frame;... COUNT')");
	kiln_prof_free(p);
	expect_error(most, "line 2: no count at the end of the line: 'stack' "
		     "is not a number");
	/* Through kiln_read_profile(): the file's name first. */
	p = read_file(some, sizeof(some) - 1, &d, &err);
	assert_int_equal(err, 0);
	assert_non_null(strstr(d.warn, "/tmp/kiln-test-collapsed."));
	assert_non_null(strstr(d.warn, "': skipped 3 malformed lines, first at "
			       "line 4: "));
	kiln_prof_free(p);
	p = read_file(most, sizeof(most) - 1, &d, &err);
	assert_int_equal(err, -EINVAL);
	assert_null(p);
	assert_non_null(strstr(d.msg, "': read as collapsed: line 2: no count"));
}

/* Counts with decimals (flamegraph.pl takes them): values become whole
 * at the most decimals seen, shares exact; more than six decimals round;
 * the scaling is said in a warning and the profile's comments. */
static void test_decimal_counts(void **state)
{
	static const char text[] = "main;a 1.5\nmain;b 2\nmain;c 0.25\n"
				   "main;a 0.0000015\n# 1.5 in a comment\nmain;d 1.\n";
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };

	(void)state;
	assert_int_equal(kiln_collapsed_read(p, text, sizeof(text) - 1, &d), 0);
	/* a: 1.5 + 0.000002 (rounded), b 2, c 0.25, d 1: at 10^6. */
	assert_int_equal(leaf_value(p, "a"), 1500002);
	assert_int_equal(leaf_value(p, "b"), 2000000);
	assert_int_equal(leaf_value(p, "c"), 250000);
	assert_int_equal(leaf_value(p, "d"), 1000000);
	assert_string_equal(d.warn, "counts with decimals, scaled by 1000000 to "
			    "whole numbers (shares unchanged)");
	assert_int_equal(p->ncomments, 1);
	kiln_prof_free(p);
	expect_error("main;a 1.2.3\nmain;b 1..\n", "line 1: no count at the end "
		     "of the line: '1.2.3' is not a number");
	expect_error("main;a .\n", "is not a number");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_fixture),
		cmocka_unit_test(test_read_forms),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_write_golden),
		cmocka_unit_test(test_write_empty_stack),
		cmocka_unit_test(test_write_inline_merge),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bom),
		cmocka_unit_test(test_speedscope_samples),
		cmocka_unit_test(test_comments),
		cmocka_unit_test(test_skipped_lines),
		cmocka_unit_test(test_decimal_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
