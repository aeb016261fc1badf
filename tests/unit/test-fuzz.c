/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mutation fuzzing of every reader, run in the suite (and so under ASan and
 * UBSan in `make test`): each fixture is mutated many times (bit flips,
 * special bytes, truncation, duplicated and inserted chunks) with a fixed
 * seed, and read by kiln_read_profile()'s readers.  A reader must return 0
 * or a negative errno, fill the diagnostic on -EINVAL, and whatever it
 * accepts must go through the writers and read back.  KILN_FUZZ_ITERS
 * scales the number of mutations per fixture (default 300).  The
 * coverage-guided harnesses in tests/fuzz/ go deeper with libFuzzer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "profile/profile.h"
#include "render/flame.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void mutate(struct kiln_buf *b, const char *src, size_t len)
{
	static const char special[] = { 0, (char)0xff, '\n', ';', ' ', '\t',
					'(', ')', '[', ':', '0', '9', 0x7f,
					(char)0x80 };
	int rounds = 1 + (int)(next() % 4), i;

	kiln_buf_reset(b);
	kiln_buf_add(b, src, len);
	for (i = 0; i < rounds && b->len; i++) {
		size_t at = next() % b->len;

		switch (next() % 6) {
		case 0:
			b->data[at] ^= (char)(1u << (next() % 8));
			break;
		case 1:
			b->data[at] = special[next() % sizeof(special)];
			break;
		case 2:
			b->len = at;	/* truncate */
			break;
		case 3: {
			/* duplicate a chunk at the end */
			size_t n = next() % 64;

			if (at + n > b->len)
				n = b->len - at;
			kiln_buf_grow(b, n);
			memcpy(b->data + b->len, b->data + at, n);
			b->len += n;
			break;
		}
		case 4: {
			/* insert random bytes */
			size_t n = 1 + next() % 8, k;

			kiln_buf_grow(b, n);
			memmove(b->data + at + n, b->data + at, b->len - at);
			for (k = 0; k < n; k++)
				b->data[at + k] = (char)next();
			b->len += n;
			break;
		}
		default:
			/* a varint-looking run, for protobuf */
			b->data[at] = (char)(0x80 | next());
			break;
		}
	}
}

typedef int (*reader_fn)(struct kiln_prof *, const char *, size_t,
			 struct kiln_diag *);

static void check_one(reader_fn rd, const char *data, size_t len)
{
	struct kiln_prof *p = kiln_prof_new(), *q;
	struct kiln_diag d;
	struct kiln_buf out = KILN_BUF_INIT;
	int err;

	assert_non_null(p);
	d.msg[0] = '\0';
	err = rd(p, data, len, &d);
	assert_true(err <= 0);
	if (err == -EINVAL)
		assert_true(d.msg[0] != '\0');
	if (!err && !kiln_prof_error(p)) {
		int type = p->ntypes ? (int)p->ntypes - 1 : -1;

		assert_int_equal(kiln_pprof_write(p, &out, false), 0);
		q = kiln_prof_new();
		assert_int_equal(kiln_pprof_read(q, out.data, out.len, &d), 0);
		if (q->nsamples != p->nsamples && getenv("KILN_FUZZ_DUMP")) {
			FILE *f = fopen(getenv("KILN_FUZZ_DUMP"), "w");

			fwrite(data, 1, len, f);
			fclose(f);
		}
		assert_int_equal(q->nsamples, p->nsamples);
		kiln_prof_free(q);
		if (type >= 0) {
			kiln_buf_reset(&out);
			assert_int_equal(kiln_collapsed_write(p, type, &out), 0);
			kiln_buf_reset(&out);
			assert_int_equal(kiln_flame_svg(p, type, NULL, &out), 0);
		}
	}
	kiln_buf_release(&out);
	kiln_prof_free(p);
}

static reader_fn reader_for(enum kiln_fmt f)
{
	/* The format table's reader; perf.data has harnesses of its own. */
	return f == KILN_FMT_PERF_DATA ? NULL : kiln_fmt_reader_of(f);
}

static void fuzz_file(const char *path, long iters)
{
	struct kiln_map m;
	struct kiln_buf raw = KILN_BUF_INIT, mut = KILN_BUF_INIT;
	struct kiln_diag d;
	const char *data;
	size_t len;
	reader_fn rd;
	long i;

	assert_int_equal(kiln_map_open(&m, path), 0);
	data = m.data;
	len = m.len;
	if (kiln_is_gzip(data, len)) {
		assert_int_equal(kiln_gunzip(data, len, &raw, &d), 0);
		/* The gzip layer itself gets mutated too. */
		for (i = 0; i < iters / 10; i++) {
			struct kiln_buf o = KILN_BUF_INIT;

			mutate(&mut, m.data, m.len);
			kiln_gunzip(mut.data, mut.len, &o, &d);
			kiln_buf_release(&o);
		}
		data = raw.data;
		len = raw.len;
	}
	/* Big inputs: fuzz a prefix, keeping the runs short. */
	if (len > 8192)
		len = 8192;
	rd = reader_for(kiln_fmt_detect(data, len));
	if (rd) {
		for (i = 0; i < iters; i++) {
			enum kiln_fmt f;

			mutate(&mut, data, len);
			check_one(rd, mut.data, mut.len);
			/* And whatever the detector makes of it. */
			f = kiln_fmt_detect(mut.data, mut.len);
			if (mut.len && reader_for(f) && reader_for(f) != rd)
				check_one(reader_for(f), mut.data, mut.len);
		}
	}
	kiln_buf_release(&mut);
	kiln_buf_release(&raw);
	kiln_map_release(&m);
}

static void test_fuzz_fixtures(void **state)
{
	const char *root = getenv("KILN_FIXTURES");
	const char *it = getenv("KILN_FUZZ_ITERS");
	long iters = it ? atol(it) : 300;
	static const char *const dirs[] = { "perfscript", "collapsed", "pprof",
					    "pprof/legacy", "gperf", "demo",
					    "speedscope" };
	size_t i, nfiles = 0;

	if (!root)
		skip();
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[1024];
		DIR *dh;
		struct dirent *de;

		snprintf(dir, sizeof(dir), "%s/%s", root, dirs[i]);
		dh = opendir(dir);
		if (!dh)
			continue;
		while ((de = readdir(dh))) {
			char path[2048];
			size_t n = strlen(de->d_name);

			/* Folders (pprof/gen, pprof/legacy: listed on their
			 * own) and pprof's parses of its legacy files. */
			if (de->d_name[0] == '.' || !strcmp(de->d_name, "README.md") ||
			    de->d_type == DT_DIR || !strcmp(de->d_name, "gen") ||
			    n < 3 || (n > 7 && !strcmp(de->d_name + n - 7, ".string")))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			fuzz_file(path, iters);
			nfiles++;
		}
		closedir(dh);
	}
	/* The fixtures are there: a fuzzer that read nothing proves nothing. */
	assert_true(nfiles >= 8);
}

static void test_fuzz_random(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int i;

	/* Pure noise of every length into every reader. */
	for (i = 0; i < 4000; i++) {
		size_t n = next() % 512, k;

		kiln_buf_reset(&b);
		kiln_buf_grow(&b, n);
		for (k = 0; k < n; k++)
			b.data[k] = (char)next();
		b.len = n;
		check_one(kiln_pprof_read, b.data, b.len);
		check_one(kiln_perfscript_read, b.data, b.len);
		check_one(kiln_collapsed_read, b.data, b.len);
		check_one(kiln_gperf_read, b.data, b.len);
		check_one(kiln_heaptrace_read, b.data, b.len);
	}
	kiln_buf_release(&b);
}

/*
 * A heap trace written by the encoder (three threads, local and remote
 * frees, a reused address, two frames), as the reader sees it
 * uncompressed, so that mutations reach the records.
 */
static void heap_trace(struct kiln_buf *out)
{
	static const char maps[] =
		"00400000-00500000 r-xp 00000000 08:01 42 /nonexistent/prog\n";
	struct kiln_hcols c = { 0 };
	const struct kiln_hcols *parts[1] = { &c };
	struct kiln_henc e;
	uint64_t pcs[3] = { 0x400100, 0x400200, 0x400300 }, t = 1000000;
	int frame, i;

	kiln_henc_init(&e);
	for (frame = 0; frame < 2; frame++) {
		if (!frame) {
			assert_int_equal(kiln_hcols_header(&c, 7, 1, 1, 0, "p\0a", 3), 0);
			assert_int_equal(kiln_hcols_maps(&c, maps, sizeof(maps) - 1), 0);
			assert_int_equal(kiln_hcols_stack(&c, 1, pcs, 3), 0);
			assert_int_equal(kiln_hcols_stack(&c, 2, pcs + 1, 2), 0);
		}
		assert_int_equal(kiln_hcols_name(&c, 11, "worker", 6), 0);
		for (i = 0; i < 40; i++) {
			struct kiln_hev *v = kiln_henc_reserve(&e, 1);

			memset(v, 0, sizeof(*v));
			t += 30000 + (uint64_t)(next() % 100000);
			v->t = t;
			v->tid = 10 + (uint32_t)(next() % 3);
			v->ptr = 0x1000 + 16 * (next() % 12);
			v->kind = next() % 3 ? KILN_HEV_ALLOC : KILN_HEV_FREE;
			v->size = next() % 5000;
			v->stack = 1 + (uint32_t)(next() % 2);
			assert_int_equal(kiln_henc_commit(&e, 1), 0);
		}
		assert_int_equal(kiln_hcols_lost(&c, 2), 0);
		assert_int_equal(kiln_henc_emit(&e, UINT64_MAX, &c, NULL, NULL), 0);
		assert_int_equal(kiln_hcols_frame(parts, 1, !frame, out), 0);
		kiln_hcols_reset(&c);
	}
	kiln_hcols_release(&c);
	kiln_henc_release(&e);
}

static void test_fuzz_heaptrace(void **state)
{
	const char *it = getenv("KILN_FUZZ_ITERS");
	long iters = (it ? atol(it) : 300) * 10, i;
	struct kiln_buf raw = KILN_BUF_INIT, mut = KILN_BUF_INIT;
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d;

	heap_trace(&raw);
	/* The trace itself is good. */
	if (kiln_heaptrace_read(p, raw.data, raw.len, &d))
		fail_msg("%s", d.msg);
	assert_true(p->nsamples > 0);
	kiln_prof_free(p);
	for (i = 0; i < iters; i++) {
		mutate(&mut, raw.data, raw.len);
		check_one(kiln_heaptrace_read, mut.data, mut.len);
	}
	kiln_buf_release(&mut);
	kiln_buf_release(&raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_fixtures),
		cmocka_unit_test(test_fuzz_random),
		cmocka_unit_test(test_fuzz_heaptrace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
