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
	};

	/* The files name binaries of other machines: never look for them. */
	kiln_sym_set_no_local(true);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
