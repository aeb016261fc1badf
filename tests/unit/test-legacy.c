/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the legacy profile readers (src/format/legacy.c,
 * legacy-maps.c, and gperf.c for the binary CPU ones): every profile of
 * pprof's own test data (tests/fixtures/pprof/legacy/, from google/pprof
 * profile/testdata) read through the one registry, and compared with
 * pprof's parse of it, the `.string` file beside it: sample types, period,
 * and the samples' values, stacks (addresses, or names where pprof
 * dropped the addresses) and "bytes" labels.  kiln adds up samples of one
 * stack and label set, which pprof keeps apart, so the expected samples
 * are added up the same way before the multisets are compared.  Then
 * small inputs made here: unsampling, the memory map's rules, text
 * tolerance (BOM, CRLF, comments) and errors with their line numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"

/* ---- a sample as text: "STACK|LABEL" -> values ---- */

struct entry {
	char *key;
	int64_t v[4];
};

struct set {
	struct entry *e;
	size_t n, alloc;
	size_t nv;
};

static void set_add(struct set *s, const char *key, const int64_t *v)
{
	size_t i, j;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].key, key)) {
			for (j = 0; j < s->nv; j++)
				s->e[i].v[j] += v[j];
			return;
		}
	if (s->n == s->alloc) {
		s->alloc = s->alloc ? s->alloc * 2 : 64;
		s->e = realloc(s->e, s->alloc * sizeof(*s->e));
		assert_non_null(s->e);
	}
	s->e[s->n].key = strdup(key);
	memset(s->e[s->n].v, 0, sizeof(s->e[s->n].v));
	for (j = 0; j < s->nv; j++)
		s->e[s->n].v[j] = v[j];
	s->n++;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static void set_free(struct set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->e[i].key);
	free(s->e);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* ---- pprof's .string ---- */

struct expect {
	char types[4][64];
	size_t ntypes;
	char period_type[64];
	int64_t period;
	struct set samples;
};

/* The key of location id in the .string's Locations section: its
 * address, or its function's name where the address is 0. */
static void loc_key(const char *locs, long id, char *out, size_t cap)
{
	const char *q = locs;
	char pat[32];

	snprintf(pat, sizeof(pat), "\n%6ld: ", id);
	q = strstr(locs, pat);
	if (!q)
		fail_msg("location %ld not in the .string", id);
	q += strlen(pat);
	if (!strncmp(q, "0x0 ", 4)) {
		size_t n = strcspn(q + 4, " \n");

		snprintf(out, cap, "%.*s", (int)n, q + 4);
	} else {
		size_t n = strcspn(q, " \n");

		snprintf(out, cap, "%.*s", (int)n, q);
	}
}

static void read_string(const char *path, struct expect *x)
{
	char *text = slurp(path, NULL), *line, *save = NULL;
	char *locs = strstr(text, "\nLocations\n");
	bool in_samples = false;
	struct kiln_buf key = KILN_BUF_INIT;
	int64_t v[4];
	bool pending = false;

	assert_non_null(locs);
	locs = strdup(locs + 10);	/* from the '\n' before location 1 */
	memset(x, 0, sizeof(*x));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "PeriodType: ", 12)) {
			char a[32] = "", b[32] = "";

			sscanf(line + 12, "%31s %31s", a, b);
			snprintf(x->period_type, sizeof(x->period_type), "%s/%s",
				 a, b);
			if (!strcmp(x->period_type, "/"))
				x->period_type[0] = '\0';
		} else if (!strncmp(line, "Period: ", 8)) {
			x->period = strtoll(line + 8, NULL, 10);
		} else if (!strcmp(line, "Samples:")) {
			in_samples = true;
			line = strtok_r(NULL, "\n", &save);
			for (char *t = strtok(line, " "); t; t = strtok(NULL, " "))
				snprintf(x->types[x->ntypes++], 64, "%s", t);
			x->samples.nv = x->ntypes;
		} else if (!strcmp(line, "Locations")) {
			break;
		} else if (in_samples && strchr(line, ':') &&
			   strstr(line, ":[")) {
			/* A label line of the sample before. */
			char *l = line + strspn(line, " ");

			kiln_buf_addf(&key, "|%s", l);
		} else if (in_samples) {
			char *colon = strchr(line, ':'), *q;
			size_t i;

			if (pending)
				set_add(&x->samples, key.data, v);
			kiln_buf_reset(&key);
			assert_non_null(colon);
			q = line;
			for (i = 0; i < x->ntypes; i++)
				v[i] = strtoll(q, &q, 10);
			q = colon + 1;
			kiln_buf_addf(&key, "stack");
			for (;;) {
				char *end, lk[128];
				long id = strtol(q, &end, 10);

				if (end == q)
					break;
				loc_key(locs, id, lk, sizeof(lk));
				kiln_buf_addf(&key, " %s", lk);
				q = end;
			}
			pending = true;
		}
	}
	if (pending)
		set_add(&x->samples, key.data, v);
	kiln_buf_release(&key);
	free(locs);
	free(text);
}

/* Callers of the leaf left out of kiln's stacks (test_cpu), in order, as
 * pprof strips them; 0-terminated. */
static const uint64_t *skip_frames;

/* The same keys for kiln's profile. */
static void prof_set(struct kiln_prof *p, struct set *s)
{
	struct kiln_buf key = KILN_BUF_INIT;
	uint32_t bytes = kiln_prof_find_str(p, "bytes", 5);
	size_t i, j;

	memset(s, 0, sizeof(*s));
	s->nv = p->ntypes;
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *sm = &p->samples[i];
		const uint32_t *locs = kiln_prof_sample_locs(p, sm);
		const struct kiln_label *l = kiln_prof_label(p, sm->labels, bytes);
		int64_t v[4];

		uint32_t ids[4096], n = sm->depth, k;

		assert_true(n <= 4096);
		if (n)
			memcpy(ids, locs, n * sizeof(*ids));
		for (k = 0; skip_frames && skip_frames[k]; k++)
			if (n > 1 && p->locations[ids[1]].address == skip_frames[k]) {
				memmove(ids + 1, ids + 2, (n - 2) * sizeof(*ids));
				n--;
			}
		locs = ids;
		kiln_buf_reset(&key);
		kiln_buf_addf(&key, "stack");
		for (j = 0; j < n; j++) {
			const struct kiln_location *loc = &p->locations[locs[j]];

			if (loc->address || !loc->nlines)
				kiln_buf_addf(&key, " 0x%" PRIx64, loc->address);
			else
				kiln_buf_addf(&key, " %s", kiln_prof_str(p,
					p->functions[p->lines[loc->line0].function].name));
		}
		if (l)
			kiln_buf_addf(&key, "|bytes:[%" PRId64 "]", l->num);
		for (j = 0; j < p->ntypes; j++)
			v[j] = kiln_prof_value(p, i, j);
		set_add(s, key.data, v);
	}
	kiln_buf_release(&key);
}

static void check_file(const char *name, enum kiln_fmt want)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[4096], spath[4200];
	struct kiln_diag d = { "" };
	struct kiln_prof *p = NULL;
	struct expect x;
	struct set got;
	enum kiln_fmt fmt;
	size_t i, j;
	int err;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/pprof/legacy/%s", dir, name);
	snprintf(spath, sizeof(spath), "%s.string", path);
	err = kiln_read_profile(path, &p, &fmt, &d);
	if (err)
		fail_msg("%s: %s", name, d.msg);
	if (fmt != want)
		fail_msg("%s: read as %s, not %s", name, kiln_fmt_name(fmt),
			 kiln_fmt_name(want));
	read_string(spath, &x);

	assert_int_equal(p->ntypes, x.ntypes);
	for (i = 0; i < p->ntypes; i++) {
		char t[128];

		snprintf(t, sizeof(t), "%s/%s",
			 kiln_prof_str(p, p->types[i].type),
			 kiln_prof_str(p, p->types[i].unit));
		if (strcmp(t, x.types[i]))
			fail_msg("%s: type %zu is %s, pprof says %s", name, i, t,
				 x.types[i]);
	}
	{
		char pt[128] = "";

		if (p->period_type.type || p->period_type.unit)
			snprintf(pt, sizeof(pt), "%s/%s",
				 kiln_prof_str(p, p->period_type.type),
				 kiln_prof_str(p, p->period_type.unit));
		if (strcmp(pt, x.period_type))
			fail_msg("%s: period type '%s', pprof says '%s'", name,
				 pt, x.period_type);
	}
	if (p->period != x.period)
		fail_msg("%s: period %" PRId64 ", pprof says %" PRId64, name,
			 p->period, x.period);

	prof_set(p, &got);
	qsort(got.e, got.n, sizeof(*got.e), cmp_entry);
	qsort(x.samples.e, x.samples.n, sizeof(*x.samples.e), cmp_entry);
	for (i = 0; i < got.n && i < x.samples.n; i++) {
		if (strcmp(got.e[i].key, x.samples.e[i].key))
			fail_msg("%s: sample %zu:\n kiln  %s\n pprof %s", name, i,
				 got.e[i].key, x.samples.e[i].key);
		for (j = 0; j < x.ntypes; j++)
			if (got.e[i].v[j] != x.samples.e[i].v[j])
				fail_msg("%s: %s: value %zu is %" PRId64
					 ", pprof says %" PRId64, name,
					 got.e[i].key, j, got.e[i].v[j],
					 x.samples.e[i].v[j]);
	}
	if (got.n != x.samples.n)
		fail_msg("%s: %zu distinct samples, pprof has %zu", name, got.n,
			 x.samples.n);
	set_free(&got);
	set_free(&x.samples);
	kiln_prof_free(p);
}

static void test_cppbench_heap(void **state)
{
	(void)state;
	check_file("cppbench.heap", KILN_FMT_LEGACY_HEAP);
}

static void test_cppbench_growth(void **state)
{
	(void)state;
	check_file("cppbench.growth", KILN_FMT_LEGACY_HEAP);
}

static void test_cppbench_contention(void **state)
{
	(void)state;
	check_file("cppbench.contention", KILN_FMT_LEGACY_CONTENTION);
}

static void test_cppbench_threads(void **state)
{
	(void)state;
	check_file("cppbench.thread", KILN_FMT_LEGACY_THREAD);
	check_file("cppbench.thread.all", KILN_FMT_LEGACY_THREAD);
	check_file("cppbench.thread.none", KILN_FMT_LEGACY_THREAD);
}

static void test_go(void **state)
{
	(void)state;
	check_file("gobench.heap", KILN_FMT_LEGACY_HEAP);
	check_file("go.godoc.thread", KILN_FMT_LEGACY_COUNT);
}

static void test_java(void **state)
{
	(void)state;
	check_file("java.heap", KILN_FMT_LEGACY_JAVA);
	check_file("java.contention", KILN_FMT_LEGACY_JAVA);
	check_file("java.cpu", KILN_FMT_GPERFTOOLS);
}

static void test_cpu(void **state)
{
	/* pprof drops the leaf's caller when (nearly) every record has the
	 * same one, taking it for a frame of the signal handler, twice at
	 * most; kiln keeps them (format/gperf.c says why), so the frames
	 * pprof drops here are left out of kiln's stacks to compare:
	 * libpthread's __restore_rt in cppbench.cpu, two frames of Go's
	 * signal handling in go.crc32.cpu (none in gobench.cpu). */
	static const uint64_t cpp[] = { 0x7f5e5414e5afull, 0 };
	static const uint64_t crc[] = { 0x430c4bull, 0x430cc3ull, 0 };

	(void)state;
	skip_frames = cpp;
	check_file("cppbench.cpu", KILN_FMT_GPERFTOOLS);
	skip_frames = crc;
	check_file("go.crc32.cpu", KILN_FMT_GPERFTOOLS);
	skip_frames = NULL;
	check_file("gobench.cpu", KILN_FMT_GPERFTOOLS);
}

/* ---- inputs made here ---- */

static struct kiln_prof *read_text(const char *text, int want_err,
				   const char *want_msg)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err = kiln_legacy_read(p, text, strlen(text), &d);

	if (err != want_err)
		fail_msg("error %d (%s), expected %d", err, d.msg, want_err);
	if (want_msg && strcmp(d.msg, want_msg))
		fail_msg("message '%s', expected '%s'", d.msg, want_msg);
	if (err) {
		kiln_prof_free(p);
		return NULL;
	}
	return p;
}

/* heap_v2: each sample divided by 1-exp(-avgsize/rate), as pprof does. */
static void test_unsampling(void **state)
{
	static const char text[] =
		"heap profile: 3: 300 [ 10: 4000000] @ heap_v2/524288\n"
		"  1: 100 [ 2: 200] @ 0x1000 0x2001\n"
		"  2: 200 [ 8: 3999800] @ 0x3000\n";
	struct kiln_prof *p;
	double sc1 = 1 / (1 - exp(-100.0 / 524288));
	double sc1a = 1 / (1 - exp(-100.0 / 524288));
	double sc2a = 1 / (1 - exp(-(3999800.0 / 8) / 524288));
	size_t i;

	(void)state;
	assert_int_equal(kiln_fmt_detect(text, strlen(text)),
			 KILN_FMT_LEGACY_HEAP);
	p = read_text(text, 0, NULL);
	assert_int_equal(p->ntypes, 4);
	assert_string_equal(kiln_prof_str(p, p->types[3].type), "inuse_space");
	assert_string_equal(kiln_prof_str(p, p->period_type.type), "space");
	assert_int_equal(p->period, 524288);
	assert_int_equal(p->nsamples, 2);
	for (i = 0; i < 2; i++) {
		const uint32_t *l = kiln_prof_sample_locs(p, &p->samples[i]);

		if (p->samples[i].depth == 2) {
			/* Every address minus 1, the leaf too. */
			assert_int_equal(p->locations[l[0]].address, 0xfff);
			assert_int_equal(p->locations[l[1]].address, 0x2000);
			assert_int_equal(kiln_prof_value(p, i, 0),
					 (int64_t)(2 * sc1a));
			assert_int_equal(kiln_prof_value(p, i, 1),
					 (int64_t)(200 * sc1a));
			assert_int_equal(kiln_prof_value(p, i, 2),
					 (int64_t)(1 * sc1));
			assert_int_equal(kiln_prof_value(p, i, 3),
					 (int64_t)(100 * sc1));
		} else {
			/* Large blocks are (nearly) always sampled. */
			assert_int_equal(kiln_prof_value(p, i, 0),
					 (int64_t)(8 * sc2a));
			assert_int_equal(kiln_prof_value(p, i, 1),
					 (int64_t)(3999800 * sc2a));
		}
	}
	kiln_prof_free(p);
}

/* The memory map: only executable mappings, $NAME, the brief form; the
 * same profile with a BOM, CRLF and comments. */
static void test_maps_and_text(void **state)
{
	static const char plain[] =
		"heap profile:    2:      300 [     2:      300] @ heapprofile\n"
		"     1:      100 [     1:      100] @ 0x401235 0x7f0000001801\n"
		"     1:      200 [     1:      200] @ 0x9999\n"
		"\n"
		"MAPPED_LIBRARIES:\n"
		"00400000-00401000 r--p 00000000 08:01 11 /bin/prog\n"
		"00401000-00402000 r-xp 00001000 08:01 11 /bin/prog\n"
		"lib=/usr/lib\n"
		"7f0000001000-7f0000002000: $lib/libx.so.1\n";
	static const char dressed[] =
		"\xef\xbb\xbf# a comment\r\n"
		"heap profile:    2:      300 [     2:      300] @ heapprofile\r\n"
		"     1:      100 [     1:      100] @ 0x401235 0x7f0000001801\r\n"
		"# another\r\n"
		"     1:      200 [     1:      200] @ 0x9999\r\n"
		"MAPPED_LIBRARIES:\r\n"
		"00400000-00401000 r--p 00000000 08:01 11 /bin/prog\r\n"
		"00401000-00402000 r-xp 00001000 08:01 11 /bin/prog\r\n"
		"lib=/usr/lib\r\n"
		"7f0000001000-7f0000002000: $lib/libx.so.1\r\n";
	const char *texts[] = { plain, dressed };
	size_t k, i;

	(void)state;
	for (k = 0; k < 2; k++) {
		struct kiln_prof *p;

		assert_int_equal(kiln_fmt_detect(texts[k], strlen(texts[k])),
				 KILN_FMT_LEGACY_HEAP);
		p = read_text(texts[k], 0, NULL);
		/* Equal in-use and allocated columns: two types. */
		assert_int_equal(p->ntypes, 2);
		assert_string_equal(kiln_prof_str(p, p->types[1].type), "space");
		assert_int_equal(p->period, 1);
		assert_int_equal(p->nmappings, 2);
		/* The main program first, at 0x400000 less its offset. */
		assert_string_equal(kiln_prof_str(p, p->mappings[1].file),
				    "/bin/prog");
		assert_int_equal(p->mappings[1].start, 0x400000);
		assert_int_equal(p->mappings[1].offset, 0);
		assert_string_equal(kiln_prof_str(p, p->mappings[2].file),
				    "/usr/lib/libx.so.1");
		for (i = 0; i < p->nsamples; i++) {
			const uint32_t *l = kiln_prof_sample_locs(p, &p->samples[i]);

			if (p->samples[i].depth == 2) {
				assert_int_equal(p->locations[l[0]].mapping, 1);
				assert_int_equal(p->locations[l[1]].mapping, 2);
				assert_int_equal(p->locations[l[1]].address,
						 0x7f0000001800ull);
				assert_int_equal(kiln_prof_value(p, i, 1), 100);
			} else {
				/* In no mapping. */
				assert_int_equal(p->locations[l[0]].mapping, 0);
				assert_int_equal(kiln_prof_value(p, i, 1), 200);
			}
		}
		assert_non_null(strstr(kiln_prof_str(p, p->drop_frames),
				       "tc_malloc"));
		kiln_prof_free(p);
	}
}

static void test_detect(void **state)
{
	static const struct { const char *text; enum kiln_fmt fmt; } t[] = {
		{ "heap profile: 1: 2 [ 3: 4] @ growthz\n", KILN_FMT_LEGACY_HEAP },
		{ "heap profile: 1: 2 [ 3: 4] @ heap/1048576\n", KILN_FMT_LEGACY_HEAP },
		{ "goroutine profile: total 3\n3 @ 0x1\n", KILN_FMT_LEGACY_COUNT },
		{ "--- threadz 1 ---\n", KILN_FMT_LEGACY_THREAD },
		{ "--- contentionz 1 ---\ncycles/second = 10\n",
		  KILN_FMT_LEGACY_CONTENTION },
		{ "--- mutex:\ncycles/second=10\n", KILN_FMT_LEGACY_CONTENTION },
		{ "--- contentionz 1 ---\nformat = java\n", KILN_FMT_LEGACY_JAVA },
		{ "--- heapz 1 ---\nformat = java\n", KILN_FMT_LEGACY_JAVA },
		/* Not legacy: a collapsed stack, perf script. */
		{ "main;f 3\n", KILN_FMT_COLLAPSED },
		{ "heap profile 3\n", KILN_FMT_COLLAPSED },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (kiln_fmt_detect(t[i].text, strlen(t[i].text)) != t[i].fmt)
			fail_msg("'%s' detected as %s", t[i].text,
				 kiln_fmt_name(kiln_fmt_detect(t[i].text,
							       strlen(t[i].text))));
}

/* Where it went wrong: the line, and what was expected. */
static void test_errors(void **state)
{
	(void)state;
	read_text("heap profile: 1: 2 [ 1: 2] @ heapprofile\n"
		  "1: 2 [ 1: 2] @ 0x10\n"
		  "1: 2 [ 1: 2 @ 0x10\n", -EINVAL,
		  "line 3: heap profile: expected 'COUNT: BYTES [COUNT: BYTES] "
		  "@ ADDRESS...'");
	read_text("heap profile: 1: 2 [ 1: 2] @ heapprofile\n"
		  "0: 2 [ 1: 2] @ 0x10\n", -EINVAL,
		  "line 2: heap profile: inuse count was 0 but inuse bytes was 2");
	read_text("heap profile: 1: 2 [ 1: 2] @ heapprofile\n"
		  "1: 2 [ 1: 2] @ 0x100000000000000000\n", -EINVAL,
		  "line 2: heap profile: the address '0x100000000000000000' does "
		  "not fit 64 bits");
	read_text("--- contentionz 1 ---\ncycles/second = 10\ncolour = blue\n",
		  -EINVAL, "line 3: contention profile: unknown attribute 'colour'");
	read_text("--- contentionz 1 ---\nsampling period = 2\n1 2 @ 0x1\n"
		  "3 x 4 @ 0x2\n", -EINVAL,
		  "line 4: contention profile: expected 'DELAY COUNT @ ADDRESS...'");
	read_text("threadcreate profile: total 2\n1 @ 0x10\n1 @ zz\n", -EINVAL,
		  "line 3: count profile: expected 'COUNT @ 0xADDRESS...'");
	read_text("--- threadz 1 ---\n--- Thread 1 (name: a/1) stack: ---\n"
		  "  PC: 0x10\n--- Thread junk\n", -EINVAL,
		  "line 4: thread profile: expected '--- Thread ID (name: "
		  "NAME/TID) stack: ---'");
	read_text("--- heapz 1 ---\nformat = java\n10 1 @ 0x1\n", -EINVAL,
		  "line 3: Java heap profile: no 'resolution' attribute (the "
		  "unit of the values)");
	read_text("\n# nothing\n", -EINVAL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cppbench_heap),
		cmocka_unit_test(test_cppbench_growth),
		cmocka_unit_test(test_cppbench_contention),
		cmocka_unit_test(test_cppbench_threads),
		cmocka_unit_test(test_go),
		cmocka_unit_test(test_java),
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_unsampling),
		cmocka_unit_test(test_maps_and_text),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_errors),
	};

	/* The files name binaries of other machines: never look for them. */
	kiln_sym_set_no_local(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
