/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the perf script reader and writer (format stage), on real
 * `perf script` output in tests/fixtures/perfscript/ and on small texts
 * written here for the cases perf makes only on some machines.
 *
 * With KILN_BENCH=1 in the environment, test_speed reads about 200 MB of
 * generated `perf script` text and prints the MB/s (it always runs, on
 * a few MB, without a time limit); KILN_BENCH_FILE=PATH reads that
 * file instead (a -g recording whose samples all have a period).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "format/format.h"
#include "profile/profile.h"
#include "profile/top.h"
#include "util/buf.h"
#include "util/diag.h"

static char *slurp(const char *name, size_t *len)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[1024];
	FILE *f;
	char *data;
	long n;

	snprintf(path, sizeof(path), "%s/perfscript/%s",
		 dir ? dir : "tests/fixtures", name);
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
	err = kiln_perfscript_read(p, text, len, &d);
	if (err)
		fprintf(stderr, "read error %d: %s\n", err, d.msg);
	assert_int_equal(err, 0);
	return p;
}

static struct kiln_prof *read_fixture(const char *name)
{
	size_t len;
	char *data = slurp(name, &len);
	struct kiln_prof *p = read_text(data, len);

	free(data);
	return p;
}

/* Expects the reader to fail with a message that contains want. */
static void expect_error(const char *text, const char *want)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err = kiln_perfscript_read(p, text, strlen(text), &d);

	if (err != -EINVAL || !strstr(d.msg, want))
		fprintf(stderr, "got %d '%s', want '%s'\n", err, d.msg, want);
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(d.msg, want));
	kiln_prof_free(p);
}

static const char *type_str(const struct kiln_prof *p, size_t i)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", kiln_prof_str(p, p->types[i].type),
		 kiln_prof_str(p, p->types[i].unit));
	return buf;
}

/* Sum of type t over samples whose leaf frame is named name. */
static int64_t leaf_value(struct kiln_prof *p, const char *name, size_t t)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	int64_t sum = 0;

	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap);

		assert_true(n >= 0);
		if (n > 0 && !strcmp(kiln_prof_str(p, f[0].name), name))
			sum += kiln_prof_value(p, i, t);
	}
	free(f);
	return sum;
}

/* Sum of type t over samples with a frame named name anywhere. */
static int64_t cum_value(struct kiln_prof *p, const char *name, size_t t)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	int64_t sum = 0;
	long j;

	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap);

		for (j = 0; j < n; j++) {
			if (!strcmp(kiln_prof_str(p, f[j].name), name)) {
				sum += kiln_prof_value(p, i, t);
				break;
			}
		}
	}
	free(f);
	return sum;
}

/* The numeric or string value of label key on sample i; -1 if absent. */
static int64_t label_num(const struct kiln_prof *p, size_t i, const char *key)
{
	uint32_t ls = p->samples[i].labels, k;

	if (!ls)
		return -1;
	for (k = 0; k < p->labelsets[ls].n; k++) {
		const struct kiln_label *l = &p->labels[p->labelsets[ls].first + k];

		if (!strcmp(kiln_prof_str(p, l->key), key))
			return l->num;
	}
	return -1;
}

static const char *label_str(const struct kiln_prof *p, size_t i,
			     const char *key)
{
	uint32_t ls = p->samples[i].labels, k;

	if (!ls)
		return NULL;
	for (k = 0; k < p->labelsets[ls].n; k++) {
		const struct kiln_label *l = &p->labels[p->labelsets[ls].first + k];

		if (!strcmp(kiln_prof_str(p, l->key), key))
			return kiln_prof_str(p, l->str);
	}
	return NULL;
}

static void test_callgraph(void **state)
{
	struct kiln_prof *p = read_fixture("shares-g.perf");
	size_t i, kernel = 0;

	assert_int_equal(p->ntypes, 2);
	assert_string_equal(type_str(p, 0), "samples/count");
	assert_string_equal(type_str(p, 1), "cpu/nanoseconds");
	assert_string_equal(kiln_prof_str(p, p->period_type.type), "cpu");
	assert_string_equal(kiln_prof_str(p, p->period_type.unit), "nanoseconds");
	assert_int_equal(p->period, 1001001);
	assert_int_equal(kiln_prof_total(p, 0), 40);
	assert_int_equal(kiln_prof_total(p, 1), 40 * 1001001LL);
	/* Leaf counts as `awk` finds them in the fixture (see README). */
	assert_int_equal(leaf_value(p, "burn_a", 0), 20);
	assert_int_equal(leaf_value(p, "burn_b", 0), 10);
	assert_int_equal(leaf_value(p, "burn_c", 0), 2);
	assert_int_equal(leaf_value(p, "burn_a", 1), 20 * 1001001LL);
	assert_true(cum_value(p, "main", 0) >= 32);
	/* Offsets are not part of names. */
	assert_int_equal(kiln_prof_find_str(p, "burn_a+0x29", 11), 0);
	for (i = 1; i <= p->nlocations; i++) {
		const struct kiln_location *l = &p->locations[i];

		if (kiln_prof_loc_kind(p, (uint32_t)i) != KILN_KIND_KERNEL)
			continue;
		kernel++;
		assert_string_equal(kiln_prof_str(p, p->mappings[l->mapping].file),
				    "[kernel.kallsyms]");
	}
	assert_true(kernel > 10);
	/* Default fields: tid and comm, no pid. */
	for (i = 0; i < p->nsamples; i++) {
		assert_int_equal(label_num(p, i, "thread"), 5746);
		assert_string_equal(label_str(p, i, "thread_name"), "shares");
		assert_int_equal(label_num(p, i, "pid"), -1);
	}
	/* One mapping per dso, located by address in it. */
	{
		uint32_t f = kiln_prof_find_str(p, "/tmp/build-text/workloads/shares",
						 32);
		size_t m, n = 0;

		assert_true(f != 0);
		for (m = 1; m <= p->nmappings; m++)
			n += p->mappings[m].file == f;
		assert_int_equal(n, 1);
	}
	assert_true(p->duration_nanos > 0);
	kiln_prof_free(p);
}

static void test_pid(void **state)
{
	struct kiln_prof *p = read_fixture("shares-pid.perf");
	size_t i;

	assert_int_equal(kiln_prof_total(p, 0), 10);
	for (i = 0; i < p->nsamples; i++) {
		assert_int_equal(label_num(p, i, "pid"), 5746);
		assert_int_equal(label_num(p, i, "thread"), 5746);
	}
	kiln_prof_free(p);
}

static void test_two_events(void **state)
{
	struct kiln_prof *p = read_fixture("two-events.perf");

	assert_int_equal(p->ntypes, 3);
	assert_string_equal(type_str(p, 0), "samples/count");
	assert_string_equal(type_str(p, 1), "cpu-clock/nanoseconds");
	assert_string_equal(type_str(p, 2), "task-clock/nanoseconds");
	assert_int_equal(kiln_prof_total(p, 0), 12);
	assert_int_equal(kiln_prof_total(p, 1), 6 * 1001001LL);
	assert_int_equal(kiln_prof_total(p, 2), 6 * 1001001LL);
	/* The default is the first event. */
	assert_int_equal(kiln_prof_type_index(p, NULL, NULL), 1);
	assert_int_equal(kiln_prof_type_index(p, "task-clock", NULL), 2);
	assert_int_equal(leaf_value(p, "burn_a", 0), 8);
	kiln_prof_free(p);
}

static void test_no_callgraph(void **state)
{
	struct kiln_prof *p = read_fixture("shares-nog.perf");
	size_t i;

	assert_int_equal(kiln_prof_total(p, 0), 20);
	for (i = 0; i < p->nsamples; i++)
		assert_int_equal(p->samples[i].depth, 1);
	assert_int_equal(leaf_value(p, "burn_a", 0), 11);
	assert_int_equal(leaf_value(p, "burn_b", 0), 7);
	assert_int_equal(leaf_value(p, "burn_c", 0), 1);
	assert_int_equal(leaf_value(p, "_raw_spin_unlock_irqrestore", 0), 1);
	kiln_prof_free(p);
}

/* Forms of the header and frames that other machines produce. */
/* The address of the first location whose frame is named name, or 0. */
static uint64_t addr_of(struct kiln_prof *p, const char *name)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	uint64_t a = 0;
	long j, n;

	for (i = 0; i < p->nsamples && !a; i++) {
		n = kiln_prof_frames(p, &p->samples[i], &f, &cap);
		for (j = 0; j < n && !a; j++)
			if (!strcmp(kiln_prof_str(p, f[j].name), name))
				a = p->locations[f[j].location].address;
	}
	free(f);
	return a;
}

/* The frame names of sample i, leaf first, joined by ';'. */
static const char *stack_str(struct kiln_prof *p, size_t i)
{
	static char buf[1024];
	struct kiln_frame *f = NULL;
	size_t cap = 0, len = 0;
	long j, n = kiln_prof_frames(p, &p->samples[i], &f, &cap);

	buf[0] = '\0';
	for (j = 0; j < n; j++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
					j ? ";" : "", kiln_prof_str(p, f[j].name));
	free(f);
	return buf;
}

static const char edge_text[] =
	"# ========\n"
	"# captured on    : Mon Aug 30 11:15:28 2021\n"
	"# ========\n"
	"#\n"
	"V8 WorkerThread 24636/25607 [003] 94564.109216: 250000 cycles:u: \n"
	"\t    7f0000001234 (anonymous namespace)::Worker::run()+0x1a (/usr/lib/libv8.so (deleted))\n"
	"\t    7f0000005678 std::function<void ()>::operator()() const+0x20 (/usr/lib/libstdc++.so.6)\n"
	"\t    7f0000009abc [unknown] (/usr/lib/libfoo.so)\n"
	"\t    7f00dead0000 LazyCompile:~main /app/x.js:1 (/tmp/perf-123.map)\n"
	"\t ffffffff81000000 [unknown] ([kernel.kallsyms])\n"
	"\t            dead [unknown] ([unknown])\n"
	"\n"
	"V8 WorkerThread 24636/25607 [003] 94564.110216: 250000 cycles:u: \n"
	"\t    7f0000001234 (anonymous namespace)::Worker::run()+0x1a (/usr/lib/libv8.so (deleted))\n"
	"\n";

static void test_edge_cases(void **state)
{
	struct kiln_prof *p = read_text(edge_text, sizeof(edge_text) - 1);
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	long n;
	const char *names[] = {
		"(anonymous namespace)::Worker::run()",
		"std::function<void ()>::operator()() const",
		"[libfoo.so]",
		"LazyCompile:~main /app/x.js:1",
		"[kernel.kallsyms]",
		"[unknown]",
	};

	assert_string_equal(type_str(p, 1), "cycles/count");
	assert_int_equal(kiln_prof_total(p, 0), 2);
	assert_int_equal(kiln_prof_total(p, 1), 500000);
	assert_int_equal(p->nsamples, 2);
	n = kiln_prof_frames(p, &p->samples[0], &f, &cap);
	assert_int_equal(n, 6);
	for (i = 0; i < 6; i++)
		assert_string_equal(kiln_prof_str(p, f[i].name), names[i]);
	/* (deleted) is not part of the file name; the address is kept. */
	assert_string_equal(kiln_prof_str(p, p->mappings[p->locations[f[0].location].mapping].file),
			    "/usr/lib/libv8.so");
	assert_int_equal(p->locations[f[2].location].address, 0x7f0000009abcULL);
	assert_int_equal(p->locations[f[2].location].nlines, 0);
	assert_int_equal(kiln_prof_loc_kind(p, f[3].location), KILN_KIND_OTHER);
	assert_int_equal(kiln_prof_loc_kind(p, f[4].location), KILN_KIND_KERNEL);
	assert_int_equal(kiln_prof_loc_kind(p, f[1].location), KILN_KIND_LIB);
	assert_int_equal(kiln_prof_loc_kind(p, f[5].location), KILN_KIND_OTHER);
	assert_string_equal(label_str(p, 0, "thread_name"), "V8 WorkerThread");
	assert_int_equal(label_num(p, 0, "pid"), 24636);
	assert_int_equal(label_num(p, 0, "thread"), 25607);
	free(f);
	kiln_prof_free(p);
}

/* No period (perf script -F comm,tid,time,event,ip,sym,dso): count 1. */
static void test_no_period(void **state)
{
	static const char text[] =
		"prog 10 1.000001: cpu-clock: \n"
		"\t  1000 f+0x1 (/bin/prog)\n"
		"\t  2000 main+0x2 (/bin/prog)\n"
		"\n"
		"prog 10 1.000002: cpu-clock: \n"
		"\t  1000 f+0x1 (/bin/prog)\n"
		"\t  2000 main+0x2 (/bin/prog)\n"
		"\n"
		"prog 10 1.000003: cpu-clock: \n"
		"\t  3000 g+0x1 (/bin/prog)\n"
		"\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);

	assert_int_equal(p->ntypes, 1);
	assert_string_equal(type_str(p, 0), "samples/count");
	assert_int_equal(kiln_prof_total(p, 0), 3);
	assert_int_equal(leaf_value(p, "f", 0), 2);
	/* Equal stacks are one sample: memory grows with distinct stacks. */
	assert_int_equal(p->nsamples, 2);
	kiln_prof_free(p);
}

/* Windows line ends, srcline lines, a tracepoint event. */
static void test_crlf_srcline_tracepoint(void **state)
{
	static const char text[] =
		"prog  10 [000] 1.000001: sched:sched_switch: prev_comm=prog prev_pid=10\r\n"
		"\t  1000 f+0x1 (/bin/prog)\r\n"
		"  prog.c:12\r\n"
		"\t  2000 main+0x2 (/bin/prog)\r\n"
		"  prog.c:40\r\n"
		"\r\n"
		"prog  10 [001] 1.000009: sched:sched_switch: prev_comm=prog prev_pid=10\r\n"
		"\t  1000 f+0x1 (/bin/prog)\r\n"
		"  prog.c:12\r\n"
		"\r\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);
	struct kiln_frame *f = NULL;
	size_t cap = 0;
	long n;

	assert_int_equal(p->ntypes, 1);
	assert_int_equal(kiln_prof_total(p, 0), 2);
	assert_int_equal(leaf_value(p, "f", 0), 2);
	n = kiln_prof_frames(p, &p->samples[0], &f, &cap);
	assert_int_equal(n, 2);
	assert_string_equal(kiln_prof_str(p, f[1].name), "main");
	assert_int_equal(f[0].line, 12);
	assert_string_equal(kiln_prof_str(p, p->functions[f[0].function].filename),
			    "prog.c");
	free(f);
	kiln_prof_free(p);
}

static void test_errors(void **state)
{
	expect_error("\t  1000 f+0x1 (/bin/prog)\n", "line 1: a stack frame line before any sample header");
	/* As many bad lines as good ones: not perf script, refused with
	 * the first bad line's reason. */
	expect_error("prog 10 1.5: 1 cpu-clock:\n\t 1 f (x)\n\nprog 10 no event\n"
		     "no event either\n", "line 4: not a sample header");
	expect_error("hello world\nthis is not perf\n", "line 1: not a sample header");
	/* A frame line not indented, outside a sample. */
	expect_error("prog 10 cycles:\n 1 f (x)\n\n1000 f (x)\n1001 g (x)\n",
		     "line 4: not a sample header");
	expect_error("prog 10 1.5: 1 cpu-clock:\n\tzz!garbage\n",
		     "line 2: not a stack frame");
	expect_error("prog 10 1.5: 1 cpu-clock:\n\t 12345678901234567890 f (x)\n",
		     "line 2: cannot parse the stack frame");
	expect_error("", "no samples");
	expect_error("# only a comment\n\n", "no samples");
	/* Periods whose total passes 2^63: refused, not wrapped to a
	 * negative total (the same stack, and two stacks). */
	expect_error("p 1/1 [0] 1.0: 5000000000000000000 cpu-clock:\n\t 1 f (x)\n\n"
		     "p 1/1 [0] 1.1: 5000000000000000000 cpu-clock:\n\t 1 f (x)\n\n",
		     "line 4: the period 5000000000000000000 makes a total overflow");
	expect_error("p 1/1 [0] 1.0: 5000000000000000000 cpu-clock:\n\t 1 f (x)\n\n"
		     "p 1/1 [0] 1.1: 5000000000000000000 cpu-clock:\n\t 2 g (x)\n\n",
		     "line 4: the period 5000000000000000000 makes a total overflow");
}

/* A malformed line among good ones is skipped and counted in one warning
 * (SPEC 5, "Text inputs"): a bad frame line leaves the rest of its
 * sample, a bad header line drops its frames, a header whose own sampled
 * address cannot be read drops its sample. */
static void test_skips(void **state)
{
	static const char text[] =
		"prog 10 1.5: 1 cpu-clock:\n"
		"\t 1 leaf (x)\n"
		"\tzz!garbage\n"
		"\t 2 main (x)\n"
		"\n"
		"prog 10 no event\n"
		"\t 3 lost (x)\n"
		"\n"
		"prog 10 1.6: 1 cpu-clock:\n"
		"\t 1 leaf (x)\n"
		"\t 2 main (x)\n"
		"\n"
		"prog 10 1.7: 1 cpu-clock:\n"
		"\t 1 leaf (x)\n"
		"\t 2 main (x)\n"
		"\n";
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err = kiln_perfscript_read(p, text, sizeof(text) - 1, &d);

	(void)state;
	assert_int_equal(err, 0);
	assert_int_equal(kiln_prof_total(p, 0), 3);
	assert_int_equal(leaf_value(p, "leaf", 0), 3);
	assert_int_equal(leaf_value(p, "lost", 0), 0);
	assert_int_equal(cum_value(p, "main", 0), 3);
	assert_string_equal(d.warn, "skipped 3 malformed lines, first at line "
			    "3: not a stack frame (expected 'ADDRESS SYMBOL "
			    "(DSO)')");
	kiln_prof_free(p);
}

/* perf script -F without time (and perf record -p of perf 3.x): no time
 * stamp; the event is then the anchor; no time label. */
static void test_no_time(void **state)
{
	static const char text[] =
		"func_ab 15294 cpu-clock: \n"
		"\t          400570 func_b (/root/func_ab)\n"
		"\t          4005b1 main (/root/func_ab)\n"
		"\n"
		"func_ab 15294 cpu-clock: \n"
		"\t          400577 func_b (/root/func_ab)\n"
		"\t          4005b1 main (/root/func_ab)\n"
		"\n"
		"V8 WorkerThread 24636/25607 [003] cpu-clock: \n"
		"\t          4005b1 main (/root/func_ab)\n"
		"\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);
	size_t i;

	assert_int_equal(p->ntypes, 1);
	assert_int_equal(kiln_prof_total(p, 0), 3);
	assert_int_equal(leaf_value(p, "func_b", 0), 2);
	assert_int_equal(leaf_value(p, "main", 0), 1);
	for (i = 0; i < p->nsamples; i++) {
		assert_int_equal(label_num(p, i, "time"), -1);
		assert_int_equal(p->nevents, 0);	/* no time column */
		if (!strcmp(label_str(p, i, "thread_name"), "func_ab")) {
			assert_int_equal(label_num(p, i, "thread"), 15294);
		} else {
			assert_string_equal(label_str(p, i, "thread_name"),
					    "V8 WorkerThread");
			assert_int_equal(label_num(p, i, "pid"), 24636);
			assert_int_equal(label_num(p, i, "thread"), 25607);
		}
	}
	kiln_prof_free(p);
}

/* -F without pid/tid, without comm, or with only the event. */
static void test_no_pid(void **state)
{
	static const char *const texts[] = {
		"prog 1.000001: 7 cycles: \n\t 1000 f (/bin/prog)\n\n"
		"prog 1.000002: 7 cycles: \n\t 1000 f (/bin/prog)\n\n",
		"  1.000001: 7 cycles: \n\t 1000 f (/bin/prog)\n\n"
		"  1.000002: 7 cycles: \n\t 1000 f (/bin/prog)\n\n",
		"prog [000] 7 cycles: \n\t 1000 f (/bin/prog)\n\n"
		"prog [001] 7 cycles: \n\t 1000 f (/bin/prog)\n\n",
		"         cycles: \n\t 1000 f (/bin/prog)\n\n"
		"         cycles: \n\t 1000 f (/bin/prog)\n\n",
	};
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct kiln_prof *p = read_text(texts[i], strlen(texts[i]));
		size_t t = p->ntypes - 1;

		assert_int_equal(leaf_value(p, "f", t), i < 3 ? 14 : 2);
		assert_int_equal(label_num(p, 0, "thread"), -1);
		assert_int_equal(label_num(p, 0, "pid"), -1);
		if (i == 0 || i == 2)
			assert_string_equal(label_str(p, 0, "thread_name"), "prog");
		else
			assert_null(label_str(p, 0, "thread_name"));
		kiln_prof_free(p);
	}
}

/* The period field with and without time, before and after [CPU]; the
 * fields in perf's one order whatever -F's order, +tod, event modifiers. */
static void test_period_and_orders(void **state)
{
	static const char text[] =
		"prog 10 1000 cycles: \n\t 1000 f (/bin/prog)\n\n"
		"prog 10 [001] 2000 cycles:u: \n\t 1000 f (/bin/prog)\n\n"
		"prog 10/11 4000 cycles:ppp: \n\t 1000 f (/bin/prog)\n\n"
		"prog 10/11 [002] 2024-01-02 10:11:12.123456 5.000001: 8000 cycles: \n"
		"\t 2000 g+0x10 (/bin/prog)\n\n"
		"prog 10 5.000002:  16000   cycles: \n\t 2000 g (/bin/prog)\n\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);
	size_t i, j;

	assert_int_equal(p->ntypes, 2);
	assert_string_equal(type_str(p, 1), "cycles/count");
	assert_int_equal(kiln_prof_total(p, 0), 5);
	assert_int_equal(leaf_value(p, "f", 1), 7000);
	assert_int_equal(leaf_value(p, "g", 1), 24000);
	for (i = 0; i < p->nsamples; i++) {
		const char *leaf = stack_str(p, i);

		assert_int_equal(label_num(p, i, "pid") == -1 ||
				 label_num(p, i, "pid") == 10, 1);
		assert_true(label_num(p, i, "thread") == 10 ||
			    label_num(p, i, "thread") == 11);
		/* Only the samples with a time stamp have times (events),
		 * and times are no labels. */
		assert_int_equal(label_num(p, i, "time"), -1);
		for (j = 0; j < p->nevents; j++)
			if (p->events[j].sample == i)
				break;
		assert_int_equal(j < p->nevents, !strcmp(leaf, "g"));
	}
	kiln_prof_free(p);
}

/* Branch stacks (-F +brstack, +brstacksym) and branch samples ("=>"). */
static void test_branch_stacks(void **state)
{
	static const char text[] =
		"prog 10 1.000001: 1 cycles: \n"
		"\t 400577 f+0x7 (/bin/prog)\n"
		"\t 4005b1 main+0x1a (/bin/prog)\n"
		" 0x4005b1/0x400577/P/-/-/0  0x400560/0x4005ab/P/-/-/0 \n"
		"\n"
		"prog 10 1.000002: 1 cycles: \n"
		"\t 400577 f+0x7 (/bin/prog)\n"
		" main+0x1a/f+0x0/P/-/-/0  f+0x10/main+0x3/M/-/-/0 \n"
		"\n"
		"prog 10 1.000003: 1 branches:      4005b1 main+0x1a (/bin/prog) =>           400577 f+0x0 (/bin/prog)\n"
		"prog 10 1.000004: 1 branches:      4005b1 main+0x1a (/bin/prog) =>           400577 f+0x0 (/bin/prog)\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);

	assert_int_equal(kiln_prof_total(p, 0), 4);
	assert_int_equal(leaf_value(p, "f", 1), 2);
	/* A branch sample is its source. */
	assert_int_equal(leaf_value(p, "main", 2), 2);
	assert_int_equal(cum_value(p, "main", 0), 3);
	kiln_prof_free(p);
}

/* -F +srcline: file:line, "??:0", "module[offset]", "[kernel][address]". */
static void test_srclines(void **state)
{
	static const char text[] =
		"a.out 35081 252436.005167:     667783 cycles: \n"
		"\t          408ebb some_method_name+0x8b (/full/path/to/a.out)\n"
		"  uniform_int_dist.h:300\n"
		"\t          4069f5 main+0x935 (/full/path/to/a.out)\n"
		"  file.cpp:137\n"
		"\t    7f6d2148eb25 __libc_start_main+0xd5 (/lib64/libc-2.33.so)\n"
		"  libc-2.33.so[27b25]\n"
		"\n"
		"a.out 35081 252435.738165:     306459 cycles: \n"
		"\t    7f6d213c2750 [unknown] (/usr/lib64/libkmod.so.2.3.6)\n"
		"  libkmod.so.2.3.6[6750]\n"
		"\t    7f6d215ca51b __strlen_avx2+0x4b (/lib64/libc-2.33.so)\n"
		"  ??:0\n"
		"\t         ffffffff814f9302 up_write+0x32 ([kernel.kallsyms])\n"
		"  [kernel.kallsyms][ffffffff814f9302]\n"
		"\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);
	struct kiln_frame *f = NULL;
	size_t cap = 0;

	assert_int_equal(p->nsamples, 2);
	assert_string_equal(stack_str(p, 0), "some_method_name;main;__libc_start_main");
	assert_int_equal(kiln_prof_frames(p, &p->samples[0], &f, &cap), 3);
	assert_int_equal(f[0].line, 300);
	assert_string_equal(kiln_prof_str(p, p->functions[f[0].function].filename),
			    "uniform_int_dist.h");
	assert_int_equal(f[1].line, 137);
	assert_int_equal(f[2].line, 0);
	assert_string_equal(stack_str(p, 1), "[libkmod.so.2.3.6];__strlen_avx2;up_write");
	/* "??:0": perf found no line; no file "??". */
	assert_int_equal(kiln_prof_frames(p, &p->samples[1], &f, &cap), 3);
	assert_int_equal(p->functions[f[1].function].filename, 0);
	free(f);
	kiln_prof_free(p);
}

/* Java, JavaScript, Go and C++ names with spaces, parentheses, brackets
 * and quotes; frames indented with spaces or not at all (old perf). */
static void test_names(void **state)
{
	static const char text[] =
		"java 19983 cycles:\n"
		"ffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n"
		"7f7241fbe6d8 arrayOopDesc::base(BasicType) const (/opt/jdk/libjvm.so)\n"
		"7f722d119786 Ljava/io/FileOutputStream;::writeBytes (/tmp/perf-19982.map)\n"
		"7f72421d2d76 JavaCalls::call_helper(JavaValue, methodHandle, JavaCallArguments, Thread) (/opt/jdk/libjvm.so)\n"
		"\n"
		"node-v011 31912 cpu-clock: \n"
		"            13a80b608e0a RegExp:[&<>\\\"\\'] (/tmp/perf-7539.map)\n"
		"             c6d78255e68 RegExp:\\bFoo ?Bar(?:/[\\d.]+|[ \\w.]*) (/tmp/perf-31912.map)\n"
		"             c6d7895aac9 LazyCompile:~body_0 evalmachine.<anonymous>:1 (/tmp/perf-31912.map)\n"
		"                  ae5f31 node::Start(int, char**) (/tmp/node-v011)\n"
		"\n"
		"server 7 9.000001: 1 cycles: \n"
		"\t  4a1b2c net/http.(*conn).serve+0x1c (/srv/server)\n"
		"\t  4a0000 main.main.func1 (/srv/server)\n"
		"\t  7f00dd (/usr/lib/libstripped.so)\n"
		"\t  7f00ee  (/usr/lib/libstripped.so)\n"
		"\n";
	struct kiln_prof *p = read_text(text, sizeof(text) - 1);

	assert_int_equal(p->nsamples, 3);
	assert_string_equal(stack_str(p, 0),
		"native_write_msr_safe;arrayOopDesc::base(BasicType) const;"
		"Ljava/io/FileOutputStream;::writeBytes;"
		"JavaCalls::call_helper(JavaValue, methodHandle, JavaCallArguments, Thread)");
	assert_string_equal(stack_str(p, 1),
		"RegExp:[&<>\\\"\\'];RegExp:\\bFoo ?Bar(?:/[\\d.]+|[ \\w.]*);"
		"LazyCompile:~body_0 evalmachine.<anonymous>:1;node::Start(int, char**)");
	/* A frame without a symbol is named by its module, as [unknown]. */
	assert_string_equal(stack_str(p, 2),
		"net/http.(*conn).serve;main.main.func1;[libstripped.so];[libstripped.so]");
	assert_string_equal(label_str(p, 1, "thread_name"), "node-v011");
	kiln_prof_free(p);
}

/*
 * [unknown] frames of a JIT map and of a stripped library aggregate by
 * module (one top row, one flame graph frame each), as FlameGraph and
 * perf report show them; the addresses stay apart by location.
 */
static void test_unknown_aggregates(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_top t = KILN_TOP_INIT;
	struct kiln_prof *p;
	size_t i, jit = 0, lib = 0, unk = 0;
	unsigned k;

	for (k = 0; k < 64; k++)
		kiln_buf_addf(&b, "java 100/101 1.%06u: 1000 cpu-clock: \n"
			      "\t    7f00%08x [unknown] (/tmp/perf-100.map)\n"
			      "\t    7f10%08x [unknown] (/usr/lib/libstripped.so)\n"
			      "\t    %x [unknown] ([unknown])\n"
			      "\t    401000 main+0x10 (/usr/bin/java)\n\n",
			      k, 0x1000 + k * 0x40, 0x2000 + (k % 8) * 0x10,
			      0x100 + k);
	p = read_text(b.data, b.len);
	assert_int_equal(kiln_top_build(&t, p, 1, KILN_TOP_FUNCTIONS, false), 0);
	assert_int_equal(t.n, 4);
	for (i = 0; i < t.n; i++) {
		const char *n = kiln_prof_str(p, t.rows[i].name);

		assert_int_equal(t.rows[i].cum, 64000);
		assert_true(!strcmp(n, "[perf-100.map]") || !strcmp(n, "[libstripped.so]") ||
			    !strcmp(n, "[unknown]") || !strcmp(n, "main"));
	}
	kiln_top_release(&t);
	assert_int_equal(kiln_top_build(&t, p, 1, KILN_TOP_ADDRESSES, false), 0);
	for (i = 0; i < t.n; i++) {
		const char *n = kiln_prof_str(p, t.rows[i].name);

		jit += !strcmp(n, "[perf-100.map]");
		lib += !strcmp(n, "[libstripped.so]");
		unk += !strcmp(n, "[unknown]");
	}
	assert_int_equal(jit, 64);
	assert_int_equal(lib, 8);
	assert_int_equal(unk, 64);
	kiln_top_release(&t);
	kiln_buf_release(&b);
	kiln_prof_free(p);
}

/* Writes type t, reads it back: same totals and leaf values. */
static void roundtrip(const char *fixture)
{
	struct kiln_prof *p = read_fixture(fixture), *q;
	struct kiln_buf out = KILN_BUF_INIT;
	int t = kiln_prof_type_index(p, NULL, NULL);
	size_t i;

	assert_true(t >= 0);
	assert_int_equal(kiln_perfscript_write(p, t, &out), 0);
	q = read_text(out.data, out.len);
	assert_int_equal(kiln_prof_total(q, (size_t)kiln_prof_type_index(q, NULL, NULL)),
			 kiln_prof_total(p, (size_t)t));
	assert_int_equal(leaf_value(q, "burn_a", (size_t)kiln_prof_type_index(q, NULL, NULL)),
			 leaf_value(p, "burn_a", (size_t)t));
	assert_int_equal(cum_value(q, "run", (size_t)kiln_prof_type_index(q, NULL, NULL)),
			 cum_value(p, "run", (size_t)t));
	/* Names, kernel frames and threads survive. */
	for (i = 1; i <= p->nfunctions; i++) {
		const char *name = kiln_prof_str(p, p->functions[i].name);

		assert_true(kiln_prof_find_str(q, name, strlen(name)) != 0);
	}
	assert_int_equal(label_num(q, 0, "thread"), label_num(p, 0, "thread"));
	assert_string_equal(label_str(q, 0, "thread_name"), "shares");
	kiln_buf_release(&out);
	kiln_prof_free(q);
	kiln_prof_free(p);
}

static void test_write_roundtrip(void **state)
{
	roundtrip("shares-g.perf");
	roundtrip("shares-pid.perf");
	roundtrip("shares-nog.perf");
}

static void test_write_format(void **state)
{
	struct kiln_prof *p = read_text(edge_text, sizeof(edge_text) - 1), *q;
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(kiln_perfscript_write(p, 1, &out), 0);
	/* What perf prints: header, tab-indented frames, blank line. */
	assert_non_null(strstr(out.data, "V8 WorkerThread 24636/25607 1.000000: 250000 cycles: \n"
				  "\t    7f0000001234 (anonymous namespace)::Worker::run() (/usr/lib/libv8.so)\n"));
	assert_non_null(strstr(out.data, "\t    7f0000009abc [unknown] (/usr/lib/libfoo.so)\n"));
	q = read_text(out.data, out.len);
	assert_int_equal(kiln_prof_total(q, 1), 500000);
	assert_string_equal(type_str(q, 1), "cycles/count");
	assert_int_equal(cum_value(q, "[libfoo.so]", 1), 250000);
	/* The address survives the round trip in the location. */
	assert_int_equal(addr_of(q, "[libfoo.so]"), 0x7f0000009abcULL);
	kiln_buf_release(&out);
	kiln_prof_free(q);
	kiln_prof_free(p);
}

/* Builds n bytes of perf script text shaped like a real -g recording:
 * 400 distinct frames, stacks 12-30 deep, 8 threads. */
static char *make_big(size_t want, size_t *len, size_t *nsamples)
{
	struct kiln_buf b = KILN_BUF_INIT;
	unsigned x = 12345;
	size_t ns = 0;

	assert_int_equal(kiln_buf_grow(&b, want + 4096), 0);
	while (b.len < want) {
		unsigned depth = 12 + (x >> 7) % 19, i;

		x = x * 1103515245u + 12345u;
		kiln_buf_addf(&b, "worker %u %u.%06u: 1001001 cpu-clock:pppH: \n",
			      1000 + (x >> 9) % 8, (unsigned)(ns / 1000),
			      (unsigned)(ns % 1000000));
		for (i = 0; i < depth; i++) {
			unsigned fr = (x >> 3) % 400 + i * 7;

			x = x * 1103515245u + 12345u;
			if (fr % 10 == 0)
				kiln_buf_addf(&b, "\tffffffff8%07x kfunc_%u+0x%x ([kernel.kallsyms])\n",
					      fr * 64, fr, fr % 64);
			else
				kiln_buf_addf(&b, "\t%16x some::namespace::function_%u(int)+0x%x "
					      "(/usr/lib/x86_64-linux-gnu/libsomething.so.1)\n",
					      0x10000 + fr * 64, fr, fr % 64);
			x = x * 1103515245u + 12345u;
		}
		kiln_buf_addc(&b, '\n');
		ns++;
	}
	*len = b.len;
	*nsamples = ns;
	return kiln_buf_detach(&b, NULL);
}

static void test_speed(void **state)
{
	const char *bench = getenv("KILN_BENCH");
	const char *file = getenv("KILN_BENCH_FILE");
	size_t want = bench && *bench == '1' ? 200u << 20 : 4u << 20;
	size_t len, ns = 0;
	char *text;
	struct timespec t0, t1;

	if (file && *file) {
		/* A file of your own: its headers are the samples. */
		FILE *f = fopen(file, "rb");
		long n;
		char *q;

		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fseek(f, 0, SEEK_SET);
		text = malloc((size_t)n + 1);
		assert_non_null(text);
		assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
		fclose(f);
		text[n] = '\0';
		len = (size_t)n;
		for (q = text; q < text + len; q = strchr(q, '\n') + 1) {
			if (*q != '\t' && *q != '\n' && *q != '#')
				ns++;
			if (!strchr(q, '\n'))
				break;
		}
	} else {
		text = make_big(want, &len, &ns);
	}
	struct kiln_prof *p;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = read_text(text, len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(kiln_prof_total(p, 0), (int64_t)ns);
	print_message("perf script read: %.1f MB in %.3f s = %.0f MB/s "
		      "(%zu samples, %zu distinct, %zu locations)\n",
		      (double)len / 1e6, s, (double)len / 1e6 / s, ns,
		      p->nsamples, p->nlocations);
	kiln_prof_free(p);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_callgraph),
		cmocka_unit_test(test_pid),
		cmocka_unit_test(test_two_events),
		cmocka_unit_test(test_no_callgraph),
		cmocka_unit_test(test_edge_cases),
		cmocka_unit_test(test_no_period),
		cmocka_unit_test(test_crlf_srcline_tracepoint),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_skips),
		cmocka_unit_test(test_no_time),
		cmocka_unit_test(test_no_pid),
		cmocka_unit_test(test_period_and_orders),
		cmocka_unit_test(test_branch_stacks),
		cmocka_unit_test(test_srclines),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_unknown_aggregates),
		cmocka_unit_test(test_write_roundtrip),
		cmocka_unit_test(test_write_format),
		cmocka_unit_test(test_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
