/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Other tools' heap files (format/massif.c, format/heaptrack.c): the
 * hand-made fixtures of tests/fixtures/heapothers/ read with their known
 * figures, detection, and refusals with their line numbers.
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
#include <zstd.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

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

/* The value of type t summed over samples whose leaf is name. */
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

static void test_massif(void **state)
{
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();
	size_t len;
	char *text = slurp("heapothers/small.massif", &len);

	(void)state;
	assert_true(kiln_massif_detect(text, len));
	assert_int_equal(kiln_fmt_detect(text, len), KILN_FMT_MASSIF);
	assert_int_equal(kiln_massif_read(p, text, len, &d), 0);
	assert_int_equal(p->ntypes, 1);
	assert_string_equal(kiln_prof_str(p, p->types[0].type), "space");
	assert_int_equal(kiln_prof_total(p, 0), 1500);
	assert_int_equal(leaf_value(p, "make_a", 0), 1000);
	assert_int_equal(leaf_value(p, "std::vector<int>::grow(unsigned long)", 0), 400);
	assert_int_equal(leaf_value(p, "(below massif's threshold)", 0), 100);
	assert_string_equal(d.warn, "");
	kiln_prof_free(p);
	free(text);
}

static void test_heaptrack(void **state)
{
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();
	size_t len;
	char *text = slurp("heapothers/small.heaptrack", &len);

	(void)state;
	assert_int_equal(kiln_fmt_detect(text, len), KILN_FMT_HEAPTRACK);
	assert_int_equal(kiln_heaptrack_read(p, text, len, &d), 0);
	assert_int_equal(p->ntypes, 5);
	/* allocated, calls, peak, leaked, temporary */
	assert_int_equal(kiln_prof_total(p, 0), 4396);
	assert_int_equal(kiln_prof_total(p, 1), 4);
	assert_int_equal(kiln_prof_total(p, 2), 4196);
	assert_int_equal(kiln_prof_total(p, 3), 200);
	assert_int_equal(kiln_prof_total(p, 4), 2);
	assert_int_equal(leaf_value(p, "make_a", 2), 100);
	assert_int_equal(leaf_value(p, "main", 2), 4096);
	assert_int_equal(leaf_value(p, "make_a", 3), 200);
	kiln_prof_free(p);
	free(text);
}

/* operator new at the start of a trace is left out, as heaptrack_print
 * leaves it; a version-2 file has strings to the end of the line. */
static void test_heaptrack_opnew(void **state)
{
	static const char text[] =
		"v 10000 2\n"
		"s ./x\n"
		"s make\n"
		"s operator new(unsigned long)\n"
		"i 10 1 2\n"
		"t 1 0\n"
		"i 20 1 3\n"
		"t 2 1\n"
		"a 8 2\n"
		"+ 0\n"
		"# a comment\n"
		"+ 0\n";
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();

	(void)state;
	assert_int_equal(kiln_heaptrack_read(p, text, strlen(text), &d), 0);
	assert_int_equal(leaf_value(p, "make", 1), 2);
	assert_int_equal(leaf_value(p, "operator new(unsigned long)", 1), 0);
	assert_int_equal(kiln_prof_total(p, 3), 16);
	assert_int_equal(kiln_prof_total(p, 2), 16);
	assert_int_equal(kiln_prof_total(p, 4), 0);
	kiln_prof_free(p);
}

/* A malformed line among good ones: read, one warning with its line. */
static void test_heaptrack_skip(void **state)
{
	static const char text[] =
		"v 10400 3\ns 4 main\ni 10 0 1\nt 1 0\na 8 1\n+ 0\n+ 9\n- 0\n";
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();

	(void)state;
	assert_int_equal(kiln_heaptrack_read(p, text, strlen(text), &d), 0);
	if (!strstr(d.warn, "line 7"))
		fail_msg("warning '%s' lacks line 7", d.warn);
	assert_int_equal(kiln_prof_total(p, 1), 1);
	assert_int_equal(kiln_prof_total(p, 4), 1);
	kiln_prof_free(p);
}

/* Through kiln_read_profile(): a file, its format, the profile. */
static int read_path(const void *data, size_t len, struct kiln_prof **p,
		     enum kiln_fmt *fmt, struct kiln_diag *d)
{
	char path[] = "/tmp/kiln-test-heapothers.XXXXXX";
	int fd = mkstemp(path), err;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	err = kiln_read_profile(path, p, fmt, d);
	unlink(path);
	return err;
}

/* heaptrack's .zst and .gz are undone before detection; a cut .zst is
 * refused with where it ends (a first zstd block cut before any byte
 * comes out cannot be told from a cut kiln heap trace: either message). */
static void test_compressed(void **state)
{
	struct kiln_buf gz = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	struct kiln_prof *p = NULL;
	enum kiln_fmt fmt = KILN_FMT_UNKNOWN;
	size_t len, zl;
	char *text = slurp("heapothers/small.heaptrack", &len), *z;

	(void)state;
	z = malloc(ZSTD_compressBound(len));
	assert_non_null(z);
	zl = ZSTD_compress(z, ZSTD_compressBound(len), text, len, 3);
	assert_false(ZSTD_isError(zl));
	assert_int_equal(read_path(z, zl, &p, &fmt, &d), 0);
	assert_int_equal(fmt, KILN_FMT_HEAPTRACK);
	assert_int_equal(kiln_prof_total(p, 1), 4);
	kiln_prof_free(p);
	p = NULL;

	assert_int_equal(read_path(z, zl - 6, &p, &fmt, &d), -EINVAL);
	if (!strstr(d.msg, "byte") || (!strstr(d.msg, "truncated") &&
					!strstr(d.msg, "the file ends")))
		fail_msg("'%s'", d.msg);
	assert_null(p);

	assert_int_equal(kiln_gzip(text, len, 6, &gz), 0);
	assert_int_equal(read_path(gz.data, gz.len, &p, &fmt, &d), 0);
	assert_int_equal(fmt, KILN_FMT_HEAPTRACK);
	assert_int_equal(kiln_prof_total(p, 3), 200);
	kiln_prof_free(p);
	p = NULL;
	free(text);

	text = slurp("heapothers/small.massif", &len);
	assert_int_equal(read_path(text, len, &p, &fmt, &d), 0);
	assert_int_equal(fmt, KILN_FMT_MASSIF);
	assert_string_equal(kiln_fmt_name(fmt), "massif");
	assert_int_equal(kiln_fmt_parse("valgrind"), KILN_FMT_MASSIF);
	kiln_prof_free(p);
	kiln_buf_release(&gz);
	free(text);
	free(z);
}

static void refuse(kiln_fmt_reader r, const char *text, const char *want)
{
	struct kiln_diag d = { "" };
	struct kiln_prof *p = kiln_prof_new();

	assert_int_equal(r(p, text, strlen(text), &d), -EINVAL);
	if (!strstr(d.msg, want))
		fail_msg("'%s' lacks '%s'", d.msg, want);
	kiln_prof_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	refuse(kiln_massif_read, "cmd: x\n", "line 1: \"desc:\" expected");
	refuse(kiln_massif_read, "desc: x\ncmd: y\ntime_unit: i\n",
	       "no snapshot");
	refuse(kiln_massif_read, "desc: x\nsnapshot=0\nmem_heap_B=0\nheap_tree=empty\n",
	       "line 4: no snapshot with a heap tree");
	refuse(kiln_massif_read, "desc: x\nsnapshot=0\nheap_tree=peak\n"
	       "n1: 10 (heap allocation functions)\n   n0: 10 0x1: f (a.c:1)\n",
	       "line 5: indented 3");
	refuse(kiln_massif_read, "desc: x\nsnapshot=0\nheap_tree=peak\nn1: x\n",
	       "line 4: a byte count expected");
	refuse(kiln_massif_read, "desc: x\nsnapshot=0\nbogus\n",
	       "line 3: unknown line");
	refuse(kiln_heaptrack_read, "v 10400 9\n", "line 1: file format version 9");
	refuse(kiln_heaptrack_read, "v 10400 3\nm 1 /lib/x.so 0 1000\n",
	       "line 2: a raw trace");
	refuse(kiln_heaptrack_read, "v 10400 3\ns 9 main\n",
	       "line 2: a string's length");
	/* bad records among few good ones: mostly not heaptrack */
	refuse(kiln_heaptrack_read, "v 10400 3\n+ 5\n- 7\n",
	       "line 2: not a heaptrack record");
	refuse(kiln_heaptrack_read, "hello\n", "line 1: \"v VERSION");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_massif),
		cmocka_unit_test(test_heaptrack),
		cmocka_unit_test(test_heaptrack_opnew),
		cmocka_unit_test(test_heaptrack_skip),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
