/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the Chrome/Node CPU profile reader (format stage): the
 * .cpuprofile of Chrome 65 and the older tree of node 10 (speedscope's
 * sample files, tests/fixtures/speedscope, MIT), Chrome 141's trace events
 * with Profile and ProfileChunk events, and small profiles made here for
 * what speedscope leaves out ("(root)", "(idle)"), V8's negative time
 * deltas and malformed input.
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

/* The stack of the sample whose leaf is leaf, root first, ';'-joined. */
static void stack_of(struct kiln_prof *p, const char *leaf, char *out, size_t n)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;

	out[0] = '\0';
	for (i = 0; i < p->nsamples; i++) {
		long k = kiln_prof_frames(p, &p->samples[i], &f, &cap), j;

		if (k <= 0 || strcmp(kiln_prof_str(p, f[0].name), leaf))
			continue;
		for (j = k - 1; j >= 0; j--) {
			strncat(out, kiln_prof_str(p, f[j].name), n - strlen(out) - 1);
			if (j)
				strncat(out, ";", n - strlen(out) - 1);
		}
		break;
	}
	free(f);
}

static struct kiln_prof *read_cp(const char *text, size_t len,
				 struct kiln_diag *d)
{
	struct kiln_prof *p = kiln_prof_new();
	int err;

	assert_non_null(p);
	assert_int_equal(kiln_fmt_detect(text, len), KILN_FMT_CPUPROFILE);
	d->warn[0] = '\0';
	err = kiln_cpuprofile_read(p, text, len, d);
	if (err)
		fail_msg("read error %d: %s", err, d->msg);
	return p;
}

static void read_error(const char *text, const char *want)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err = kiln_cpuprofile_read(p, text, strlen(text), &d);

	if (err != -EINVAL || !strstr(d.msg, want))
		fail_msg("got %d '%s', want '%s'", err, d.msg, want);
	kiln_prof_free(p);
}

/* Chrome 65's .cpuprofile and node 10's tree: the same program, a -> b -> d
 * and a -> c -> d, 14 samples of d each, one of the anonymous top level. */
static void test_fixtures(void **state)
{
	static const char *const files[] = {
		"speedscope/chrome65-simple.cpuprofile",
		"speedscope/node10-example.cpuprofile",
	};
	/* Nanoseconds: the span of the samples plus the mean interval for
	 * the last (python3 over the files). */
	static const int64_t wall[] = { 35571607, 46376179 };
	struct kiln_diag d = { "" };
	char st[256];
	size_t i, len;

	for (i = 0; i < 2; i++) {
		char *text = slurp(files[i], &len);
		struct kiln_prof *p = read_cp(text, len, &d);

		assert_int_equal(p->ntypes, 2);
		assert_string_equal(kiln_prof_str(p, p->types[0].type), "samples");
		assert_string_equal(kiln_prof_str(p, p->types[1].type), "wall");
		assert_string_equal(kiln_prof_str(p, p->types[1].unit), "nanoseconds");
		assert_int_equal(kiln_prof_total(p, 0), 29);
		assert_int_equal(leaf_value(p, "d", 0), 28);
		assert_int_equal(leaf_value(p, "(anonymous)", 0), 1);
		/* Rounded per sample: within a nanosecond each. */
		if (llabs(kiln_prof_total(p, 1) - wall[i]) > 29)
			fail_msg("%s: wall %lld, want %lld", files[i],
				 (long long)kiln_prof_total(p, 1), (long long)wall[i]);
		/* "(root)" is no frame. */
		stack_of(p, "d", st, sizeof(st));
		assert_true(!strcmp(st, "(anonymous);a;b;d") ||
			    !strcmp(st, "(anonymous);a;c;d"));
		assert_string_equal(d.warn, "");
		kiln_prof_free(p);
		free(text);
	}
}

/* Chrome 141's trace: chunks add nodes (by parent), samples and deltas;
 * some chunks have no data; 5 samples name nodes the file lacks. */
static void test_trace_chunks(void **state)
{
	size_t len;
	char *text = slurp("speedscope/chrome141-no-arg-data.json", &len);
	struct kiln_diag d = { "" };
	struct kiln_prof *p = read_cp(text, len, &d);
	uint32_t k = kiln_prof_find_str(p, "pid", 3);
	char st[512];

	assert_int_not_equal(k, 0);
	assert_non_null(strstr(d.warn, "left out 5 samples naming no node"));
	/* 400 samples of "(program)" and 16 of JavaScript. */
	assert_int_equal(kiln_prof_total(p, 0), 416);
	assert_int_equal(leaf_value(p, "(program)", 0), 400);
	stack_of(p, "R", st, sizeof(st));
	assert_non_null(strstr(st, ";R"));
	kiln_prof_free(p);
	free(text);
}

/* Small profiles: idle left out, negative deltas clamped, a trace with a
 * CpuProfile event and a thread name. */
static void test_small(void **state)
{
	static const char cp[] =
		"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\","
		"\"url\":\"\",\"lineNumber\":-1},\"children\":[2,3,4]},"
		"{\"id\":2,\"callFrame\":{\"functionName\":\"(idle)\",\"url\":\"\"}},"
		"{\"id\":3,\"callFrame\":{\"functionName\":\"burn\",\"url\":"
		"\"file:///x/hot.js\",\"lineNumber\":9}},"
		"{\"id\":4,\"callFrame\":{\"functionName\":\"\",\"url\":"
		"\"file:///x/hot.js\",\"lineNumber\":0}}],"
		"\"startTime\":0,\"endTime\":100,\"samples\":[2,3,3,4,3],"
		"\"timeDeltas\":[0,10,10,-5,20]}";
	static const char trace[] =
		"[{\"pid\":1,\"tid\":2,\"ph\":\"M\",\"cat\":\"__metadata\","
		"\"name\":\"thread_name\",\"args\":{\"name\":\"CrRendererMain\"}},"
		"{\"pid\":1,\"tid\":2,\"ph\":\"I\",\"cat\":\"x\",\"ts\":5,"
		"\"name\":\"CpuProfile\",\"args\":{\"data\":{\"cpuProfile\":{"
		"\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\"}},"
		"{\"id\":2,\"parent\":1,\"callFrame\":{\"functionName\":\"work\"}}],"
		"\"samples\":[2,2],\"timeDeltas\":[1,3]}}}}]";
	struct kiln_diag d = { "" };
	struct kiln_prof *p = read_cp(cp, sizeof(cp) - 1, &d);
	const struct kiln_label *l;
	char st[256];

	/* Idle: no sample.  Times 0, 10, 20, 15 (taken as 20, as
	 * speedscope does: the next still counts from 15), 35; the last
	 * sample weighs the mean interval, 35 / 4. */
	assert_int_equal(kiln_prof_total(p, 0), 4);
	assert_int_equal(leaf_value(p, "burn", 0), 3);
	assert_int_equal(leaf_value(p, "burn", 1), 10000 + 0 + 8750);
	assert_int_equal(leaf_value(p, "(anonymous hot.js:1)", 1), 15000);
	assert_int_equal(leaf_value(p, "(anonymous hot.js:1)", 0), 1);
	stack_of(p, "burn", st, sizeof(st));
	assert_string_equal(st, "burn");
	kiln_prof_free(p);

	p = read_cp(trace, sizeof(trace) - 1, &d);
	assert_int_equal(kiln_prof_total(p, 0), 2);
	assert_int_equal(kiln_prof_total(p, 1), 6000);
	l = kiln_prof_label(p, p->samples[0].labels,
			    kiln_prof_find_str(p, "thread_name", 11));
	assert_non_null(l);
	assert_string_equal(kiln_prof_str(p, l->str), "CrRendererMain");
	kiln_prof_free(p);
}

static void test_errors(void **state)
{
	read_error("{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"f\"},"
		   "\"children\":[2]},{\"id\":2,\"callFrame\":{\"functionName\":"
		   "\"g\"},\"children\":[1]}],\"samples\":[2],\"timeDeltas\":[1]}",
		   "node 2: its parents make a cycle");
	read_error("{\"nodes\":[{\"id\":1,\"callFrame\":{}}],\"samples\":[1,1],"
		   "\"timeDeltas\":[1]}", "2 samples but 1 time deltas");
	read_error("{\"nodes\":[{\"id\":1}],\"samples\":[],\"timeDeltas\":[]}",
		   "node 0: no integer \"id\" and \"callFrame\" object");
	read_error("{\"nodes\":[{\"id\":1,\"callFrame\":{}},{\"id\":1,"
		   "\"callFrame\":{}}],\"samples\":[],\"timeDeltas\":[]}",
		   "node id 1 twice");
	read_error("{\"traceEvents\":[{\"name\":\"X\",\"ph\":\"i\"}]}",
		   "no CPU profile and no duration events in the trace events");
	read_error("{\"traceEvents\":[{\"name\":\"X\",\"ph\":\"X\"}]}",
		   "trace event 0: no time stamp");
	read_error("{\"traceEvents\":[{\"name\":\"X\",\"ph\":\"X\",\"ts\":1}]}",
		   "trace event 0: a complete (\"X\") event without a valid \"dur\"");
	read_error("{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":"
		   "\"(idle)\"}}],\"samples\":[1],\"timeDeltas\":[1]}",
		   "no samples");
	read_error("{\"nodes\": [\n{\"id\": 1,}", "line 2, column ");
}

/*
 * A trace of durations without a CPU profile (chrome://tracing, clang
 * -ftime-trace): "X" and "B"/"E" events nest per thread, each stack
 * weighs its self time; ties at one time stamp order outer before inner
 * and zero-length events begin before they end.
 */
static void test_durations(void **state)
{
	static const char text[] =
		"{\"traceEvents\":[\n"
		"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,"
		"\"args\":{\"name\":\"main-thread\"}},\n"
		"{\"name\":\"Parse\",\"ph\":\"X\",\"ts\":10,\"dur\":100,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Frontend\",\"ph\":\"X\",\"ts\":0,\"dur\":300,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Sema\",\"ph\":\"X\",\"ts\":110,\"dur\":150,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Backend\",\"ph\":\"B\",\"ts\":300,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Opt\",\"ph\":\"B\",\"ts\":300,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Opt\",\"ph\":\"E\",\"ts\":700,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Backend\",\"ph\":\"E\",\"ts\":800,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Zero\",\"ph\":\"X\",\"ts\":800,\"dur\":0,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Stray\",\"ph\":\"E\",\"ts\":900,\"pid\":1,\"tid\":2},\n"
		"{\"name\":\"Other\",\"ph\":\"X\",\"ts\":0.5,\"dur\":50,\"pid\":1,\"tid\":3}\n"
		"]}";
	struct kiln_diag d = { "" };
	struct kiln_prof *p = read_cp(text, sizeof(text) - 1, &d);
	char st[256];

	(void)state;
	assert_int_equal(p->ntypes, 2);
	assert_string_equal(kiln_prof_str(p, p->types[0].type), "events");
	assert_string_equal(kiln_prof_str(p, p->types[1].type), "wall");
	/* Self times in ns: Frontend 10 + 40 us, Backend 100 us. */
	assert_int_equal(leaf_value(p, "Frontend", 1), 50000);
	assert_int_equal(leaf_value(p, "Parse", 1), 100000);
	assert_int_equal(leaf_value(p, "Sema", 1), 150000);
	assert_int_equal(leaf_value(p, "Opt", 1), 400000);
	assert_int_equal(leaf_value(p, "Backend", 1), 100000);
	assert_int_equal(leaf_value(p, "Other", 1), 50000);
	assert_int_equal(leaf_value(p, "Zero", 0), 1);
	assert_int_equal(leaf_value(p, "Zero", 1), 0);
	assert_int_equal(kiln_prof_total(p, 0), 7);
	stack_of(p, "Opt", st, sizeof(st));
	assert_string_equal(st, "Backend;Opt");
	stack_of(p, "Sema", st, sizeof(st));
	assert_string_equal(st, "Frontend;Sema");
	assert_string_equal(d.warn, "1 end event closing no open duration, 0 "
			    "durations never ended (closed at the thread's last "
			    "event)");
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_trace_chunks),
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_durations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
