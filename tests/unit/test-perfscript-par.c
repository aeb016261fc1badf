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

/* Every table of a and b the same, in the same order (field by field:
 * the structs have padding). */
static void assert_same(const struct kiln_prof *a, const struct kiln_prof *b)
{
	size_t i;

	assert_int_equal(a->nstrs, b->nstrs);
	for (i = 0; i < a->nstrs; i++)
		assert_string_equal(kiln_prof_str(a, (uint32_t)i),
				    kiln_prof_str(b, (uint32_t)i));
	assert_int_equal(a->nfunctions, b->nfunctions);
	for (i = 1; i <= a->nfunctions; i++) {
		const struct kiln_function *x = &a->functions[i], *y = &b->functions[i];

		assert_int_equal(x->name, y->name);
		assert_int_equal(x->system_name, y->system_name);
		assert_int_equal(x->filename, y->filename);
		assert_int_equal(x->start_line, y->start_line);
	}
	assert_int_equal(a->nmappings, b->nmappings);
	for (i = 1; i <= a->nmappings; i++) {
		const struct kiln_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		assert_int_equal(x->file, y->file);
		assert_int_equal(x->start, y->start);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->has_functions, y->has_functions);
		assert_int_equal(x->has_filenames, y->has_filenames);
	}
	assert_int_equal(a->nlocations, b->nlocations);
	for (i = 1; i <= a->nlocations; i++) {
		const struct kiln_location *x = &a->locations[i], *y = &b->locations[i];

		assert_int_equal(x->address, y->address);
		assert_int_equal(x->mapping, y->mapping);
		assert_int_equal(x->line0, y->line0);
		assert_int_equal(x->nlines, y->nlines);
	}
	assert_int_equal(a->nlines, b->nlines);
	for (i = 0; i < a->nlines; i++) {
		assert_int_equal(a->lines[i].function, b->lines[i].function);
		assert_int_equal(a->lines[i].line, b->lines[i].line);
	}
	assert_int_equal(a->nlabelsets, b->nlabelsets);
	for (i = 1; i <= a->nlabelsets; i++) {
		assert_int_equal(a->labelsets[i].first, b->labelsets[i].first);
		assert_int_equal(a->labelsets[i].n, b->labelsets[i].n);
	}
	assert_int_equal(a->nlabels, b->nlabels);
	for (i = 0; i < a->nlabels; i++) {
		assert_int_equal(a->labels[i].key, b->labels[i].key);
		assert_int_equal(a->labels[i].str, b->labels[i].str);
		assert_int_equal(a->labels[i].num, b->labels[i].num);
	}
	assert_int_equal(a->ntypes, b->ntypes);
	for (i = 0; i < a->ntypes; i++) {
		assert_int_equal(a->types[i].type, b->types[i].type);
		assert_int_equal(a->types[i].unit, b->types[i].unit);
	}
	assert_int_equal(a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples; i++) {
		assert_int_equal(a->samples[i].stack, b->samples[i].stack);
		assert_int_equal(a->samples[i].depth, b->samples[i].depth);
		assert_int_equal(a->samples[i].labels, b->samples[i].labels);
	}
	for (i = 0; i < a->nsamples * a->ntypes; i++)
		assert_int_equal(a->values[i], b->values[i]);
	assert_int_equal(a->nstacks, b->nstacks);
	for (i = 0; i < a->nstacks; i++)
		assert_int_equal(a->stacks[i], b->stacks[i]);
	assert_int_equal(a->nevents, b->nevents);
	for (i = 0; i < a->nevents; i++) {
		assert_int_equal(a->events[i].time, b->events[i].time);
		assert_int_equal(a->events[i].sample, b->events[i].sample);
	}
	for (i = 0; i < a->nevents * a->ntypes; i++)
		assert_int_equal(a->ev_values[i], b->ev_values[i]);
	assert_int_equal(a->period, b->period);
	assert_int_equal(a->period_type.type, b->period_type.type);
	assert_int_equal(a->default_type, b->default_type);
	assert_int_equal(a->time_nanos, b->time_nanos);
	assert_int_equal(a->duration_nanos, b->duration_nanos);
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
	assert_same(p1, p3);
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
	assert_same(p1, p4);
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
	assert_same(p1, p3);
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
	assert_same(p1, p3);
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
		assert_same(p1, p3);
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
