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
		"libfoo.so+0x7f0000009abc",
		"LazyCompile:~main /app/x.js:1",
		"[kernel.kallsyms]+0xffffffff81000000",
		"[unknown]+0xdead",
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
	expect_error("prog 10 1.5: 1 cpu-clock:\n\t 1 f (x)\n\nprog 10 cpu-clock:\n",
		     "line 4: not a sample header: no time stamp");
	expect_error("hello world\nthis is not perf\n", "line 1: not a sample header");
	expect_error("prog 10 1.5: 1 cpu-clock:\n\tzz!garbage\n",
		     "line 2: not a stack frame");
	expect_error("prog 10 1.5: 1 cpu-clock:\n\t 12345678901234567890 f (x)\n",
		     "line 2: cannot parse the stack frame");
	expect_error("", "no samples");
	expect_error("# only a comment\n\n", "no samples");
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
	assert_int_equal(cum_value(q, "libfoo.so+0x7f0000009abc", 1), 250000);
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
		cmocka_unit_test(test_write_roundtrip),
		cmocka_unit_test(test_write_format),
		cmocka_unit_test(test_speed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
