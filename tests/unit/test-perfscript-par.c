/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the perf script reader on several threads
 * (format/perfscript-par.c): an input of about 26 MB written here with
 * what perf prints on some machines only (CRLF samples, frame lines
 * longer than 64 bytes or ending in blanks, blank-only tab lines inside
 * a sample, samples without a callchain and without blank lines, bad
 * frame lines, two events, times out of order) is read on one thread
 * and on three, and the two models must be the same, table for table,
 * with the same warning (its line number counted across the chunks).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format/format.h"
#include "format/perfscriptint.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/workers.h"

#include "prof-same.h"

/* Inputs: now and then bad lines; one event, times in order (what the
 * single pass's guess covers). */
enum { BAD = 1, ONE = 2 };

/* Appends one sample, the i-th, to b (how: BAD, ONE). */
static void add_sample(struct kiln_buf *b, unsigned i, int how)
{
	bool bad = how & BAD, one = how & ONE;
	const char *nl = i % 97 == 5 ? "\r\n" : "\n";
	unsigned depth = 3 + (i * 7) % 29, j;
	char line[512];

	if (i % 61 == 3) {
		/* perf script without -g: the header holds the frame and no
		 * blank line follows. */
		snprintf(line, sizeof(line), "  prog %u/%u [001] %u.%06u: 1000 "
			 "cpu-clock:pppH: %x leaf_%u+0x1 (/bin/prog)%s",
			 100 + i % 3, 100 + i % 3, 50 + i / 1000, i % 1000 * 997,
			 0x4000 + i % 13, i % 13, nl);
		kiln_buf_adds(b, line);
		return;
	}
	/* Times mostly in order, now and then one from the past. */
	snprintf(line, sizeof(line), "%s %u/%u [000] %u.%06u: %u %s: %s",
		 i % 5 ? "worker thread" : "main", 100 + i % 5, 200 + i % 11,
		 50 + (i % 53 == 0 && !one ? 0 : i / 1000), i % 1000 * 997,
		 1000 + i % 3, i % 7 || one ? "cpu-clock:pppH" : "page-faults",
		 nl);
	kiln_buf_adds(b, line);
	for (j = 0; j < depth; j++) {
		unsigned f = (i * 31 + j * 17) % (40 + j);

		if (bad && i % 83 == 7 && j == depth / 2) {
			/* A tab line of blanks: the sample ends there, and
			 * the rest are frames before any header (skipped). */
			kiln_buf_adds(b, "\t  ");
			kiln_buf_adds(b, nl);
			continue;
		}
		if (bad && i % 79 == 11 && j == 1) {
			kiln_buf_adds(b, "\tthis is not a frame");
			kiln_buf_adds(b, nl);
			continue;
		}
		snprintf(line, sizeof(line),
			 "\t%12x %s_%u%s+0x%x (%s)%s%s", 0x1000 + f * 64 + j,
			 j % 3 ? "fn" : "std::vector<std::pair<int, long>>::"
				       "emplace_back_with_a_long_name", f,
			 j % 4 ? "" : "(int, char const*)", j,
			 j % 5 ? "/usr/lib/libx.so" : "[kernel.kallsyms]",
			 i % 89 == 13 && j == 2 ? "  " : "", nl);
		kiln_buf_adds(b, line);
	}
	kiln_buf_adds(b, nl);
	if (i % 101 == 9)
		kiln_buf_adds(b, nl);	/* two blank lines */
}

static void read_with(const char *data, size_t len, size_t threads,
		      struct kiln_prof **out, struct kiln_diag *d)
{
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	memset(d, 0, sizeof(*d));
	kiln_workers_set(threads);
	assert_int_equal(kiln_perfscript_read(p, data, len, d), 0);
	kiln_workers_set(0);
	*out = p;
}

static void test_same_model(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p1, *p3;
	struct kiln_diag d1, d3;
	unsigned i;

	(void)state;
	for (i = 0; b.len < (26u << 20); i++)
		add_sample(&b, i, BAD);
	read_with(b.data, b.len, 1, &p1, &d1);
	read_with(b.data, b.len, 3, &p3, &d3);
	/* The bad lines are warned about, at the same first line. */
	assert_non_null(strstr(d1.warn, "malformed lines, first at line"));
	assert_string_equal(d1.warn, d3.warn);
	assert_true(p1->nsamples > 1000);
	assert_int_equal(p1->ntypes, 3);	/* samples, two events */
	prof_same(p1, p3);
	kiln_prof_free(p1);
	kiln_prof_free(p3);
	kiln_buf_release(&b);
}

/* The first bad line in the last chunk, its number across the chunks. */
static void test_late_error(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p1, *p4;
	struct kiln_diag d1, d4;
	size_t lines = 0, k;
	unsigned i;
	char want[64];

	(void)state;
	for (i = 0; b.len < (40u << 20); i++)
		add_sample(&b, i, 0);
	for (k = 0; k < b.len; k++)
		lines += b.data[k] == '\n';
	kiln_buf_adds(&b, "prog 1/1 [000] 99999.000000: 1000 cpu-clock:pppH: \n"
		      "\tnot a frame at all\n\t 4000 main+0x1 (/bin/prog)\n\n");
	read_with(b.data, b.len, 1, &p1, &d1);
	read_with(b.data, b.len, 4, &p4, &d4);
	snprintf(want, sizeof(want), "1 malformed line, first at line %zu:",
		 lines + 2);
	if (!strstr(d1.warn, want))
		fail_msg("want '%s' in '%s'", want, d1.warn);
	assert_string_equal(d1.warn, d4.warn);
	prof_same(p1, p4);
	kiln_prof_free(p1);
	kiln_prof_free(p4);
	kiln_buf_release(&b);
}

/*
 * One event, times in order: the single pass (no read of the input
 * before the samples), the model and the warning as the serial two
 * passes give them, the bad lines' numbers counted across the chunks.
 */
static void test_single_pass(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p1, *p3;
	struct kiln_diag d1, d3;
	unsigned long twice;
	size_t lines = 0, k;
	unsigned i;
	char want[80];

	(void)state;
	for (i = 0; b.len < (26u << 20); i++)
		add_sample(&b, i, BAD | ONE);
	for (k = 0; k < b.len; k++)
		lines += b.data[k] == '\n';
	kiln_buf_adds(&b, "prog 1/1 [000] 99999.000000: 1000 cpu-clock:pppH: \n"
		      "\tnot a frame at all\n\t 4000 main+0x1 (/bin/prog)\n\n");
	read_with(b.data, b.len, 1, &p1, &d1);
	twice = kiln_perfscript_par_twice();
	read_with(b.data, b.len, 3, &p3, &d3);
	assert_int_equal(kiln_perfscript_par_twice(), twice);
	assert_non_null(strstr(d1.warn, "malformed lines, first at line"));
	assert_string_equal(d1.warn, d3.warn);
	assert_int_equal(p1->ntypes, 2);	/* samples, cpu */
	prof_same(p1, p3);
	kiln_prof_free(p1);
	kiln_prof_free(p3);
	/* Only bad lines in the last chunk: the first of them there. */
	kiln_buf_release(&b);
	for (i = 0; b.len < (26u << 20); i++)
		add_sample(&b, i, ONE);
	for (k = 0, lines = 0; k < b.len; k++)
		lines += b.data[k] == '\n';
	kiln_buf_adds(&b, "prog 1/1 [000] 99999.000000: 1000 cpu-clock:pppH: \n"
		      "\tnot a frame at all\n\t 4000 main+0x1 (/bin/prog)\n\n");
	read_with(b.data, b.len, 1, &p1, &d1);
	read_with(b.data, b.len, 3, &p3, &d3);
	assert_int_equal(kiln_perfscript_par_twice(), twice);
	snprintf(want, sizeof(want), "1 malformed line, first at line %zu: not "
		 "a stack frame", lines + 2);
	if (!strstr(d3.warn, want))
		fail_msg("want '%s' in '%s'", want, d3.warn);
	assert_string_equal(d1.warn, d3.warn);
	prof_same(p1, p3);
	kiln_prof_free(p1);
	kiln_prof_free(p3);
	kiln_buf_release(&b);
}

/* What the single pass's guess does not cover, each in the last chunk
 * only (another event, a period where the first samples had none, a
 * time before the first): read again in two passes, the model the
 * serial reader's. */
static void test_guess_wrong(void **state)
{
	static const char *const tails[] = {
		"prog 1/1 [000] 99999.000000: 7 page-faults: \n"
		"\t 4000 main+0x1 (/bin/prog)\n\n",
		"prog 1/1 [000] 49.000000: 1000 cpu-clock:pppH: \n"
		"\t 4000 main+0x1 (/bin/prog)\n\n",
		"prog 1/1 [000] 99999.000000: 77 cpu-clock:pppH: \n"
		"\t 4000 main+0x1 (/bin/prog)\n\n",
	};
	size_t t;

	(void)state;
	for (t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
		struct kiln_buf b = KILN_BUF_INIT;
		struct kiln_prof *p1, *p3;
		struct kiln_diag d1, d3;
		unsigned long twice;
		unsigned i;

		/* The third: the first samples without a period. */
		if (t == 2)
			kiln_buf_adds(&b, "prog 1/1 [000] 10.000000: cpu-clock:pppH: "
				      "\n\t 4000 main+0x1 (/bin/prog)\n\n");
		for (i = 0; b.len < (20u << 20); i++)
			add_sample(&b, i, ONE);
		kiln_buf_adds(&b, tails[t]);
		read_with(b.data, b.len, 1, &p1, &d1);
		twice = kiln_perfscript_par_twice();
		read_with(b.data, b.len, 3, &p3, &d3);
		assert_int_equal(kiln_perfscript_par_twice(), twice + 1);
		prof_same(p1, p3);
		kiln_prof_free(p1);
		kiln_prof_free(p3);
		kiln_buf_release(&b);
	}
}

/* A NUL byte in the last chunk: refused as serially, same message. */
static void test_binary(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p;
	struct kiln_diag d1, d3;
	unsigned i;

	(void)state;
	for (i = 0; b.len < (20u << 20); i++)
		add_sample(&b, i, ONE);
	b.data[b.len - 100] = '\0';
	memset(&d1, 0, sizeof(d1));
	memset(&d3, 0, sizeof(d3));
	p = kiln_prof_new();
	kiln_workers_set(1);
	assert_int_equal(kiln_perfscript_read(p, b.data, b.len, &d1), -EINVAL);
	kiln_prof_free(p);
	p = kiln_prof_new();
	kiln_workers_set(3);
	assert_int_equal(kiln_perfscript_read(p, b.data, b.len, &d3), -EINVAL);
	kiln_workers_set(0);
	kiln_prof_free(p);
	assert_true(d1.msg[0]);
	assert_string_equal(d1.msg, d3.msg);
	kiln_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_model),
		cmocka_unit_test(test_late_error),
		cmocka_unit_test(test_single_pass),
		cmocka_unit_test(test_guess_wrong),
		cmocka_unit_test(test_binary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
