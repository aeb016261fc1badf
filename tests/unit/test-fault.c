/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation failures, injected (as SQLite's test harness does): this
 * test is linked with --wrap for malloc, calloc, realloc, strdup and
 * strndup, so every allocation of kiln's own code (not of zlib, zstd,
 * protobuf-c or libdw, which allocate inside their shared libraries) goes
 * through the counters below.  For each reader and writer, the operation
 * runs with the Nth allocation failing, for N = 1, 2, ... until a run
 * needs fewer than N allocations and succeeds; every failed run must
 * return -ENOMEM (never another error, a partial result or a crash) and
 * free what it took: leaks show under ASan's leak checker (the same test
 * in build-asan, `make test`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "render/flame.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static long fail_at;	/* the allocation that fails (1-based); 0: none */
static long nallocs;	/* allocations asked for since arm() */
static int failed;	/* one was refused */

static void arm(long n)
{
	fail_at = n;
	nallocs = 0;
	failed = 0;
}

/* Stops failing, keeping `failed`. */
static void disarm(void)
{
	fail_at = 0;
}

static int refuse(void)
{
	if (fail_at && ++nallocs == fail_at) {
		failed = 1;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	return refuse() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m);
void *__wrap_calloc(size_t n, size_t m)
{
	return refuse() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	return refuse() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
	return refuse() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n);
char *__wrap_strndup(const char *s, size_t n)
{
	return refuse() ? NULL : __real_strndup(s, n);
}

static char *slurp(const char *name, size_t *len)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[4096];
	struct kiln_map m;
	char *s;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
	assert_int_equal(kiln_map_open(&m, path), 0);
	s = malloc(m.len + 1);
	assert_non_null(s);
	memcpy(s, m.data, m.len);
	s[m.len] = '\0';
	*len = m.len;
	kiln_map_release(&m);
	return s;
}

typedef int (*reader_fn)(struct kiln_prof *, const char *, size_t,
			 struct kiln_diag *);

/* The input of a reader, gunzipped when it is gzip. */
static char *input(const char *name, size_t *len)
{
	char *s = slurp(name, len);
	struct kiln_buf raw = KILN_BUF_INIT;
	struct kiln_diag d = { "" };

	if (!kiln_is_gzip(s, *len))
		return s;
	assert_int_equal(kiln_gunzip(s, *len, &raw, &d), 0);
	free(s);
	return kiln_buf_detach(&raw, len);
}

/* Runs rd on the file with allocation N failing, N = 1, 2, ... */
static void reader_under_faults(reader_fn rd, const char *name)
{
	size_t len;
	char *data = input(name, &len);
	struct kiln_diag d = { "" };
	long n;
	int err;

	for (n = 1;; n++) {
		struct kiln_prof *p;

		arm(n);
		p = kiln_prof_new();
		if (!p) {
			assert_true(failed);
			continue;
		}
		err = rd(p, data, len, &d);
		if (!err)
			err = kiln_prof_error(p);
		disarm();
		if (!failed) {
			if (err)
				fail_msg("%s: %d without a failed allocation: %s",
					 name, err, d.msg);
			kiln_prof_free(p);
			break;
		}
		if (err != -ENOMEM)
			fail_msg("%s: allocation %ld failed, the reader returned "
				 "%d (%s), not -ENOMEM", name, n, err,
				 err == -EINVAL ? d.msg : "");
		kiln_prof_free(p);
	}
	print_message("%s: %ld allocations, each failed in turn\n", name, n - 1);
	free(data);
}

static void test_readers(void **state)
{
	kiln_sym_set_no_local(true);	/* libdw's allocations are not ours */
	reader_under_faults(kiln_pprof_read, "pprof/go-cpu.pb.gz");
	reader_under_faults(kiln_pprof_read, "pprof/go-labels.pb.gz");
	reader_under_faults(kiln_collapsed_read, "collapsed/shares.collapsed");
	reader_under_faults(kiln_perfscript_read, "perfscript/shares-g.perf");
	reader_under_faults(kiln_perfscript_read, "perfscript/two-events.perf");
	reader_under_faults(kiln_gperf_read, "gperf/shares-250hz.prof");
	reader_under_faults(kiln_heaptrace_read, "heaptrace/heapbasic.trace.zst");
	kiln_sym_set_no_local(false);
}

/* The writers, each on a profile read without faults. */
static int write_one(struct kiln_prof *p, int which, struct kiln_buf *out)
{
	switch (which) {
	case 0: return kiln_pprof_write(p, out, false);
	case 1: return kiln_pprof_write(p, out, true);
	case 2: return kiln_collapsed_write(p, 0, out);
	case 3: return kiln_perfscript_write(p, 0, out);
	case 4: return kiln_speedscope_write(p, 0, "fault", out);
	default: return kiln_flame_svg(p, 0, NULL, out);
	}
}

static void test_writers(void **state)
{
	static const char *const names[] = { "pprof", "pprof.gz", "collapsed",
					     "perf script", "speedscope", "flame" };
	size_t len;
	char *data = input("perfscript/shares-g.perf", &len);
	struct kiln_diag d = { "" };
	int which, err;
	long n;

	for (which = 0; which < 6; which++) {
		for (n = 1;; n++) {
			struct kiln_buf out = KILN_BUF_INIT;
			struct kiln_prof *p = kiln_prof_new();

			assert_non_null(p);
			assert_int_equal(kiln_perfscript_read(p, data, len, &d), 0);
			arm(n);
			err = write_one(p, which, &out);
			disarm();
			kiln_buf_release(&out);
			kiln_prof_free(p);
			if (!failed) {
				assert_int_equal(err, 0);
				break;
			}
			if (err != -ENOMEM)
				fail_msg("%s writer: allocation %ld failed, it "
					 "returned %d, not -ENOMEM", names[which],
					 n, err);
		}
		print_message("%s writer: %ld allocations, each failed in turn\n",
			      names[which], n - 1);
	}
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers),
		cmocka_unit_test(test_writers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
