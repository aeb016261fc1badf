/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the format table and the read-any-file entry point
 * (format stage): names, other names and extensions; detection of each
 * format; text decoding (kiln_text_utf8); and the refusal of a file no
 * reader takes, which lists the formats tried and why the likeliest two
 * refused it, never saying it was "read as" a format it plainly is not.
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

static void test_names(void **state)
{
	assert_int_equal(kiln_fmt_parse("pprof"), KILN_FMT_PPROF);
	assert_int_equal(kiln_fmt_parse("folded"), KILN_FMT_COLLAPSED);
	assert_int_equal(kiln_fmt_parse("perf"), KILN_FMT_PERF_SCRIPT);
	assert_int_equal(kiln_fmt_parse("perfscript"), KILN_FMT_PERF_SCRIPT);
	assert_int_equal(kiln_fmt_parse("chrome"), KILN_FMT_CPUPROFILE);
	assert_int_equal(kiln_fmt_parse("legacy-java"), KILN_FMT_LEGACY_JAVA);
	assert_int_equal(kiln_fmt_parse("nonsense"), KILN_FMT_UNKNOWN);
	assert_string_equal(kiln_fmt_name(KILN_FMT_CPUPROFILE), "cpuprofile");
	assert_string_equal(kiln_fmt_name(KILN_FMT_PERF_DATA), "perf.data");
	assert_string_equal(kiln_fmt_name(KILN_FMT_UNKNOWN), "unknown");
	assert_int_equal(kiln_fmt_from_ext("a.pb.gz"), KILN_FMT_PPROF);
	assert_int_equal(kiln_fmt_from_ext("a.pb"), KILN_FMT_PPROF);
	assert_int_equal(kiln_fmt_from_ext("a.txt"), KILN_FMT_COLLAPSED);
	assert_int_equal(kiln_fmt_from_ext("a.folded"), KILN_FMT_COLLAPSED);
	assert_int_equal(kiln_fmt_from_ext("a.speedscope.json"), KILN_FMT_SPEEDSCOPE);
	assert_int_equal(kiln_fmt_from_ext("a.json"), KILN_FMT_SPEEDSCOPE);
	assert_int_equal(kiln_fmt_from_ext("CPU.cpuprofile"), KILN_FMT_CPUPROFILE);
	assert_int_equal(kiln_fmt_from_ext("a.script"), KILN_FMT_PERF_SCRIPT);
	assert_int_equal(kiln_fmt_from_ext("a.growth"), KILN_FMT_LEGACY_HEAP);
	assert_int_equal(kiln_fmt_from_ext("a.contention"), KILN_FMT_LEGACY_CONTENTION);
	assert_int_equal(kiln_fmt_from_ext("a.svg"), KILN_FMT_UNKNOWN);
	assert_true(kiln_fmt_reader_of(KILN_FMT_SPEEDSCOPE) == kiln_speedscope_read);
	assert_true(kiln_fmt_reader_of(KILN_FMT_LEGACY_COUNT) == kiln_legacy_read);
	assert_null(kiln_fmt_reader_of(KILN_FMT_UNKNOWN));
}

static void test_detect(void **state)
{
	static const struct { const char *text; enum kiln_fmt fmt; } t[] = {
		{ "main;f 3\n", KILN_FMT_COLLAPSED },
		{ "# c\n// c\nmain;f 3\n", KILN_FMT_COLLAPSED },
		{ "prog 12 1.000001: 1001001 cpu-clock: \n\t 11aa f (/bin/p)\n",
		  KILN_FMT_PERF_SCRIPT },
		{ "prog 12 cpu-clock:\n\t 11aa f (/bin/p)\n", KILN_FMT_PERF_SCRIPT },
		{ "\t 11aa f (/bin/p)\n", KILN_FMT_PERF_SCRIPT },
		{ "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"}",
		  KILN_FMT_SPEEDSCOPE },
		{ "{\"shared\":{\"frames\":[]},\"profiles\":[]}", KILN_FMT_SPEEDSCOPE },
		{ "{\"nodes\":[],\"samples\":[],\"timeDeltas\":[]}", KILN_FMT_CPUPROFILE },
		{ "[{\"name\":\"ProfileChunk\"}]", KILN_FMT_CPUPROFILE },
		{ "{\"traceEvents\":[]}", KILN_FMT_CPUPROFILE },
		{ "--- threadz 1 ---\n", KILN_FMT_LEGACY_THREAD },
		/* A guess only: collapsed, the likeliest text. */
		{ "hello world\n", KILN_FMT_COLLAPSED },
		{ "{\"a\": [1, 2]}", KILN_FMT_SPEEDSCOPE },
		{ "\x01\x02\x03\x04", KILN_FMT_UNKNOWN },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (kiln_fmt_detect(t[i].text, strlen(t[i].text)) != t[i].fmt)
			fail_msg("'%s' detected as %s, not %s", t[i].text,
				 kiln_fmt_name(kiln_fmt_detect(t[i].text,
							       strlen(t[i].text))),
				 kiln_fmt_name(t[i].fmt));
}

static void test_utf8(void **state)
{
	/* "a\n" LE, an unpaired high surrogate, an odd last byte. */
	static const char le[] = "\xff\xfe" "a\0\n\0\x00\xd8" "b\0" "c";
	static const char plain[] = "main;f 1\n";
	struct kiln_buf conv = KILN_BUF_INIT;
	const char *data = le;
	size_t len = sizeof(le) - 1;

	assert_int_equal(kiln_text_utf8(&data, &len, &conv), 0);
	assert_int_equal(len, 2 + 3 + 1 + 3);
	assert_memory_equal(data, "a\n\xef\xbf\xbd" "b\xef\xbf\xbd", len);
	data = plain;
	len = sizeof(plain) - 1;
	assert_int_equal(kiln_text_utf8(&data, &len, &conv), 0);
	assert_ptr_equal(data, plain);
	data = "\xef\xbb\xbfx";
	len = 4;
	assert_int_equal(kiln_text_utf8(&data, &len, &conv), 0);
	assert_int_equal(len, 1);
	assert_int_equal(data[0], 'x');
	kiln_buf_release(&conv);
}

static int read_file(const char *text, size_t len, struct kiln_diag *d,
		     enum kiln_fmt *fmt)
{
	char path[] = "/tmp/kiln-test-format.XXXXXX";
	struct kiln_prof *p = NULL;
	int fd = mkstemp(path), err;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	err = kiln_read_profile(path, &p, fmt, d);
	unlink(path);
	kiln_prof_free(p);
	return err;
}

/* Nothing takes it: every format tried, the likeliest two's reasons. */
static void test_refusal(void **state)
{
	static const char *const formats[] = {
		"perf.data", "gperftools", "heap-trace", "pprof", "legacy text",
		"speedscope", "cpuprofile", "perf-script", "collapsed",
	};
	struct kiln_diag d = { "" };
	enum kiln_fmt fmt;
	size_t i;

	assert_int_equal(read_file("hello world\nsecond line\n", 24, &d, &fmt),
			 -EINVAL);
	assert_non_null(strstr(d.msg, "': no reader accepts it (formats tried: "));
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strstr(d.msg, formats[i]))
			fail_msg("'%s' not in: %s", formats[i], d.msg);
	assert_non_null(strstr(d.msg, "; not collapsed: line 1: no count at "
			       "the end of the line: 'world' is not a number"));
	assert_non_null(strstr(d.msg, "; not perf-script: line 1: "));
	assert_null(strstr(d.msg, "read as"));
	/* Binary data of no format: said so. */
	assert_int_equal(read_file("\x01\x02\x03\x04\x05", 5, &d, &fmt), -EINVAL);
	assert_non_null(strstr(d.msg, "no reader accepts it"));
	assert_non_null(strstr(d.msg, "binary data (first byte 0x01)"));
	/* A file plainly of one format: "read as" it, where it broke. */
	assert_int_equal(read_file("main;f 1\nmain;g\n", 16, &d, &fmt), -EINVAL);
	assert_non_null(strstr(d.msg, "': read as collapsed: line 2: no count"));
	/* speedscope without its schema's address: told by its keys. */
	{
		static const char js[] = "{\"profiles\":[{\"type\":\"sampled\","
			"\"samples\":[[0]],\"weights\":[2]}],\"shared\":"
			"{\"frames\":[{\"name\":\"f\"}]}}";

		assert_int_equal(read_file(js, sizeof(js) - 1, &d, &fmt), 0);
	}
	assert_int_equal(fmt, KILN_FMT_SPEEDSCOPE);
	/* A guess that works is taken, with the reader's warning. */
	assert_int_equal(read_file("junk first\nmain;f 1\nmain;g 2\n", 29, &d,
				   &fmt), 0);
	assert_int_equal(fmt, KILN_FMT_COLLAPSED);
	assert_non_null(strstr(d.warn, "': skipped 1 malformed line, first at "
			       "line 1: "));
	/* UTF-16 perf script: decoded before detection, for every reader. */
	{
		static const char ps[] = "prog 12 1.000001: 1001001 cpu-clock: \n"
					 "\t 11aa burn (/bin/p)\n\n";
		char u16[256];
		size_t n = 0;

		u16[n++] = (char)0xff;
		u16[n++] = (char)0xfe;
		for (i = 0; i < sizeof(ps) - 1; i++) {
			u16[n++] = ps[i];
			u16[n++] = 0;
		}
		assert_int_equal(read_file(u16, n, &d, &fmt), 0);
		assert_int_equal(fmt, KILN_FMT_PERF_SCRIPT);
	}
}

/*
 * The one table of formats (format/formats.def): every extension of a row
 * maps back to that row, every name and alias parses to it, written
 * formats have a writer, a place in the lists, a note and a content type,
 * and the lists say each of them.
 */
static void test_registry(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	const struct kiln_fmt_info *e;
	size_t i, nwritten = 0;

	(void)state;
	for (i = 0; (e = kiln_fmt_row(i)); i++) {
		const char *x = e->exts;

		assert_ptr_equal(kiln_fmt_info(e->fmt), e);
		assert_string_equal(kiln_fmt_name(e->fmt), e->name);
		assert_int_equal(kiln_fmt_parse(e->name), e->fmt);
		/* Every row is read, or written (firefox: written only). */
		assert_true(kiln_fmt_reader_of(e->fmt) || e->write);
		while (x && *x) {
			size_t n = strcspn(x, " ");
			char path[64];

			assert_true(x[0] == '.' && n < 40);
			snprintf(path, sizeof(path), "dir.pb/profile%.*s", (int)n, x);
			if (kiln_fmt_from_ext(path) != e->fmt)
				fail_msg("'%s' is %s, not %s", path,
					 kiln_fmt_name(kiln_fmt_from_ext(path)),
					 e->name);
			x += n;
			x += strspn(x, " ");
		}
		if (e->aliases) {
			const char *a = e->aliases;

			while (*a) {
				size_t n = strcspn(a, " ");
				char name[32];

				snprintf(name, sizeof(name), "%.*s", (int)n, a);
				assert_int_equal(kiln_fmt_parse(name), e->fmt);
				a += n;
				a += strspn(a, " ");
			}
		}
		assert_true((e->write != NULL) == (e->written > 0));
		if (e->write) {
			nwritten++;
			assert_ptr_equal(kiln_fmt_written((size_t)e->written - 1), e);
			assert_non_null(e->exts);
			assert_non_null(e->note);
			assert_non_null(e->mime);
		}
	}
	assert_true(i > 10);
	assert_null(kiln_fmt_written(nwritten));
	assert_int_equal(kiln_fmt_from_ext("profile.unknownext"), KILN_FMT_UNKNOWN);
	assert_null(kiln_fmt_info(KILN_FMT_UNKNOWN));

	/* The lists: every written format, in its place. */
	assert_int_equal(kiln_fmt_list_writable(&b, ", ", " or "), 0);
	assert_string_equal(b.data, "pprof, collapsed, speedscope, perf-script or firefox");
	kiln_buf_reset(&b);
	assert_int_equal(kiln_fmt_list_help(&b), 0);
	for (i = 0; (e = kiln_fmt_written(i)); i++) {
		char line[128];

		snprintf(line, sizeof(line), "  %s ", e->name);
		assert_non_null(strstr(b.data, line));
		assert_non_null(strstr(b.data, e->exts));
		assert_non_null(strstr(b.data, e->note));
	}
	kiln_buf_release(&b);
}

/* The refusal names every format kiln reads: a row without words of its
 * own shares its reader with one that has them. */
static void test_refusal_lists_all(void **state)
{
	const struct kiln_fmt_info *e, *o;
	struct kiln_diag d = { "" };
	enum kiln_fmt fmt;
	char list[512];
	size_t i, j;

	(void)state;
	assert_int_equal(read_file("hello world\nsecond line\n", 24, &d, &fmt),
			 -EINVAL);
	kiln_fmt_list_tried(list, sizeof(list));
	assert_non_null(strstr(d.msg, list));
	for (i = 0; (e = kiln_fmt_row(i)); i++) {
		if (!kiln_fmt_reader_of(e->fmt))
			continue;
		if (e->tried) {
			if (!strstr(d.msg, e->tried))
				fail_msg("'%s' not in: %s", e->tried, d.msg);
			continue;
		}
		for (j = 0; (o = kiln_fmt_row(j)); j++)
			if (o->tried && kiln_fmt_reader_of(o->fmt) ==
					kiln_fmt_reader_of(e->fmt))
				break;
		if (!o)
			fail_msg("%s is not said in the refusal", e->name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_refusal),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_refusal_lists_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
