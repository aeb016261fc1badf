/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the pprof reader and writer (src/format/pprof.c): round
 * trips of a profile using every field, real Go profiles from
 * tests/fixtures/pprof/, sparse ids, merging, and bad input (truncated,
 * random, wrong wire types, bad indexes and ids) refused with a position.
 *
 * KILN_PPROF_BENCH=N also times writing and reading N distinct samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.pb-c.h"

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

/* ---- building and describing profiles ---- */

static uint32_t S(struct kiln_prof *p, const char *s)
{
	return kiln_prof_interns(p, s);
}

/*
 * A profile that uses every field kiln writes: two sample types, two
 * mappings with build ids and different has_* flags, an inlined location
 * (two lines), a folded one, an unsymbolized one, string and numeric
 * labels, comments, period, times, drop/keep frames, default type.
 */
static struct kiln_prof *make_full(void)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_mapping exe = {
		.start = 0x400000, .limit = 0x500000, .offset = 0,
		.has_functions = true, .has_filenames = true,
		.has_line_numbers = true, .has_inline_frames = true,
	};
	struct kiln_mapping lib = {
		.start = 0x7f0000000000, .limit = 0x7f0000100000, .offset = 0x1000,
		.has_functions = true,
	};
	uint32_t mexe, mlib, fmain, frun, finl, fmemcpy, lmain, lrun, lcpy, lraw;
	struct kiln_label lab[3];
	uint32_t ls1, ls2;
	int64_t v[2];

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	exe.file = S(p, "/usr/bin/prog");
	exe.build_id = S(p, "0123456789abcdef0123456789abcdef01234567");
	lib.file = S(p, "/lib/x86_64-linux-gnu/libc.so.6");
	lib.build_id = S(p, "feedface");
	mexe = kiln_prof_mapping(p, &exe);
	mlib = kiln_prof_mapping(p, &lib);
	fmain = kiln_prof_function(p, S(p, "main"), S(p, "main"), S(p, "prog.c"), 10);
	frun = kiln_prof_function(p, S(p, "ns::run(int)"), S(p, "_ZN2ns3runEi"),
				  S(p, "run.cc"), 40);
	finl = kiln_prof_function(p, S(p, "step"), S(p, "step"), S(p, "run.cc"), 30);
	fmemcpy = kiln_prof_function(p, S(p, "memcpy"), 0, 0, 0);
	lmain = kiln_prof_location(p, mexe, 0x401000,
				   &(struct kiln_line){ fmain, 12 }, 1);
	/* run() with step() inlined into it: innermost first. */
	lrun = kiln_prof_location(p, mexe, 0x402000,
				  (struct kiln_line[]){ { finl, 33 }, { frun, 44 } }, 2);
	lcpy = kiln_prof_location(p, mlib, 0x7f0000002000,
				  &(struct kiln_line){ fmemcpy, 0 }, 1);
	p->locations[lcpy].is_folded = true;
	lraw = kiln_prof_location(p, mlib, 0x7f0000003000, NULL, 0);

	lab[0] = (struct kiln_label){ .key = S(p, "thread_name"), .str = S(p, "worker-1") };
	lab[1] = (struct kiln_label){ .key = S(p, "thread"), .num = 4242 };
	lab[2] = (struct kiln_label){ .key = S(p, "bytes"), .num = 512,
				      .unit = S(p, "bytes") };
	ls1 = kiln_prof_labelset(p, lab, 3);
	ls2 = kiln_prof_labelset(p, lab + 1, 1);

	v[0] = 3, v[1] = 30000000;
	assert_true(kiln_prof_add_sample(p, (uint32_t[]){ lcpy, lrun, lmain }, 3, v, ls1) >= 0);
	v[0] = 2, v[1] = 20000000;
	assert_true(kiln_prof_add_sample(p, (uint32_t[]){ lrun, lmain }, 2, v, 0) >= 0);
	v[0] = 1, v[1] = 10000000;
	assert_true(kiln_prof_add_sample(p, (uint32_t[]){ lraw, lmain }, 2, v, ls2) >= 0);
	assert_true(kiln_prof_add_sample(p, (uint32_t[]){ lmain }, 1, v, 0) >= 0);

	p->period_type.type = S(p, "cpu");
	p->period_type.unit = S(p, "nanoseconds");
	p->period = 10000000;
	p->time_nanos = 1700000000123456789;
	p->duration_nanos = 2500000000;
	p->drop_frames = S(p, "^runtime\\.");
	p->keep_frames = S(p, "^main$");
	p->default_type = S(p, "cpu");
	assert_int_equal(kiln_prof_add_comment(p, "kiln record -- ./prog --fast"), 0);
	assert_int_equal(kiln_prof_add_comment(p, "second comment"), 0);
	assert_int_equal(kiln_prof_error(p), 0);
	return p;
}

static const char *str_or(const struct kiln_prof *p, uint32_t id)
{
	return kiln_prof_str(p, id);
}

static void describe_loc(const struct kiln_prof *p, uint32_t id,
			 struct kiln_buf *b)
{
	const struct kiln_location *l = &p->locations[id];
	uint32_t i;

	kiln_buf_addf(b, "[0x%" PRIx64 "%s", l->address, l->is_folded ? " folded" : "");
	if (l->mapping) {
		const struct kiln_mapping *m = &p->mappings[l->mapping];

		kiln_buf_addf(b, " map(%" PRIx64 "-%" PRIx64 "@%" PRIx64 " %s %s %d%d%d%d)",
			      m->start, m->limit, m->offset, str_or(p, m->file),
			      str_or(p, m->build_id), m->has_functions,
			      m->has_filenames, m->has_line_numbers,
			      m->has_inline_frames);
	}
	for (i = 0; i < l->nlines; i++) {
		const struct kiln_line *ln = &p->lines[l->line0 + i];
		const struct kiln_function *f = &p->functions[ln->function];

		kiln_buf_addf(b, " %s/%s@%s:%" PRId64 "(%" PRId64 ")",
			      str_or(p, f->name), str_or(p, f->system_name),
			      str_or(p, f->filename), ln->line, f->start_line);
	}
	kiln_buf_adds(b, "]");
}

/*
 * Everything a profile says, resolved to text and independent of ids:
 * two profiles are equal when their descriptions are.
 */
static char *describe(const struct kiln_prof *p)
{
	struct kiln_buf b = KILN_BUF_INIT;
	size_t i, j;

	for (i = 0; i < p->ntypes; i++)
		kiln_buf_addf(&b, "type %s/%s\n", str_or(p, p->types[i].type),
			      str_or(p, p->types[i].unit));
	kiln_buf_addf(&b, "period %s/%s %" PRId64 " time %" PRId64 " dur %" PRId64
		      " drop %s keep %s default %s\n",
		      str_or(p, p->period_type.type), str_or(p, p->period_type.unit),
		      p->period, p->time_nanos, p->duration_nanos,
		      str_or(p, p->drop_frames), str_or(p, p->keep_frames),
		      str_or(p, p->default_type));
	for (i = 0; i < p->ncomments; i++)
		kiln_buf_addf(&b, "comment %s\n", str_or(p, p->comments[i]));
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const uint32_t *locs = kiln_prof_sample_locs(p, s);

		kiln_buf_adds(&b, "sample");
		for (j = 0; j < p->ntypes; j++)
			kiln_buf_addf(&b, " %" PRId64, kiln_prof_value(p, i, j));
		for (j = 0; j < s->depth; j++) {
			kiln_buf_addc(&b, ' ');
			describe_loc(p, locs[j], &b);
		}
		if (s->labels) {
			const struct kiln_labelset *ls = &p->labelsets[s->labels];

			for (j = 0; j < ls->n; j++) {
				const struct kiln_label *l = &p->labels[ls->first + j];

				kiln_buf_addf(&b, " {%s=%s|%" PRId64 "%s}",
					      str_or(p, l->key), str_or(p, l->str),
					      l->num, str_or(p, l->unit));
			}
		}
		kiln_buf_addc(&b, '\n');
	}
	return kiln_buf_detach(&b, NULL);
}

/* Writes p (uncompressed) into *out. */
static void write_raw(const struct kiln_prof *p, struct kiln_buf *out)
{
	kiln_buf_reset(out);
	assert_int_equal(kiln_pprof_write(p, out, false), 0);
	assert_true(out->len > 0);
}

/* Reads bytes; returns the error, the profile in *out when it is 0. */
static int read_bytes(const void *data, size_t len, struct kiln_prof **out,
		      struct kiln_diag *d)
{
	struct kiln_prof *p = kiln_prof_new();
	int err;

	assert_non_null(p);
	d->msg[0] = '\0';
	err = kiln_pprof_read(p, data, len, d);
	if (err) {
		kiln_prof_free(p);
		p = NULL;
	}
	*out = p;
	return err;
}

/* ---- round trips ---- */

static void test_roundtrip_full(void **state)
{
	struct kiln_prof *p = make_full(), *q;
	struct kiln_buf raw = KILN_BUF_INIT, gz = KILN_BUF_INIT, un = KILN_BUF_INIT;
	struct kiln_diag d;
	char *a, *b;

	write_raw(p, &raw);
	assert_int_equal(read_bytes(raw.data, raw.len, &q, &d), 0);
	a = describe(p);
	b = describe(q);
	assert_string_equal(a, b);
	/* Spot checks of what a user sees. */
	assert_non_null(strstr(b, "step/step@run.cc:33(30) ns::run(int)/_ZN2ns3runEi@run.cc:44(40)"));
	assert_non_null(strstr(b, "0123456789abcdef0123456789abcdef01234567 1111"));
	assert_non_null(strstr(b, "libc.so.6 feedface 1000"));
	assert_non_null(strstr(b, "{thread_name=worker-1|0}"));
	assert_non_null(strstr(b, "{bytes=|512bytes}"));
	assert_non_null(strstr(b, "comment kiln record -- ./prog --fast\ncomment second comment\n"));
	assert_non_null(strstr(b, "folded"));
	assert_int_equal(kiln_prof_total(q, 0), 7);
	assert_int_equal(kiln_prof_total(q, 1), 70000000);
	assert_int_equal(kiln_prof_type_index(q, NULL, &d), 1);
	/* Model ids map 1:1 to pprof ids, so a second trip is byte-identical. */
	kiln_buf_reset(&un);
	assert_int_equal(kiln_pprof_write(q, &un, false), 0);
	assert_int_equal(un.len, raw.len);
	assert_memory_equal(un.data, raw.data, raw.len);
	kiln_prof_free(q);
	free(b);

	/* Compressed: gzip magic, and the same profile once inflated. */
	assert_int_equal(kiln_pprof_write(p, &gz, true), 0);
	assert_true(kiln_is_gzip(gz.data, gz.len));
	kiln_buf_reset(&un);
	assert_int_equal(kiln_gunzip(gz.data, gz.len, &un, &d), 0);
	assert_int_equal(un.len, raw.len);
	assert_memory_equal(un.data, raw.data, raw.len);
	assert_int_equal(read_bytes(un.data, un.len, &q, &d), 0);
	b = describe(q);
	assert_string_equal(a, b);

	free(a);
	free(b);
	kiln_prof_free(q);
	kiln_prof_free(p);
	kiln_buf_release(&raw);
	kiln_buf_release(&gz);
	kiln_buf_release(&un);
}

static void test_deterministic(void **state)
{
	struct kiln_prof *p1 = make_full(), *p2 = make_full();
	struct kiln_buf a = KILN_BUF_INIT, b = KILN_BUF_INIT;

	assert_int_equal(kiln_pprof_write(p1, &a, true), 0);
	assert_int_equal(kiln_pprof_write(p2, &b, true), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	/* Writing appends to what the buffer holds. */
	assert_int_equal(kiln_pprof_write(p1, &a, true), 0);
	assert_int_equal(a.len, 2 * b.len);
	kiln_buf_release(&a);
	kiln_buf_release(&b);
	kiln_prof_free(p1);
	kiln_prof_free(p2);
}

static void test_roundtrip_empty(void **state)
{
	struct kiln_prof *p = kiln_prof_new(), *q;
	struct kiln_buf raw = KILN_BUF_INIT;
	struct kiln_diag d;

	/* No sample types, no samples: a string table of "" only. */
	write_raw(p, &raw);
	assert_int_equal(read_bytes(raw.data, raw.len, &q, &d), 0);
	assert_int_equal(q->ntypes, 0);
	assert_int_equal(q->nsamples, 0);
	kiln_prof_free(q);
	kiln_prof_free(p);
	kiln_buf_release(&raw);
}

/* ---- editing encoded profiles ---- */

typedef Perftools__Profiles__Profile pb_profile;

/*
 * Unpacked messages are edited freely (string literals, shared arrays),
 * so their memory comes from this allocator, which frees it all in
 * unpack_done() whatever the message points to by then.
 */
static void *blocks[1 << 12];
static size_t nblocks;

static void *track_alloc(void *data, size_t size)
{
	void *r = malloc(size);

	assert_true(nblocks < sizeof(blocks) / sizeof(blocks[0]));
	blocks[nblocks++] = r;
	return r;
}

static void track_free(void *data, void *ptr)
{
}

static ProtobufCAllocator track = { track_alloc, track_free, NULL };

static pb_profile *unpack(const struct kiln_buf *b)
{
	pb_profile *pb = perftools__profiles__profile__unpack(&track, b->len,
							      (const uint8_t *)b->data);

	assert_non_null(pb);
	return pb;
}

static void unpack_done(void)
{
	while (nblocks)
		free(blocks[--nblocks]);
}

static void repack(const pb_profile *pb, struct kiln_buf *b)
{
	size_t n = perftools__profiles__profile__get_packed_size(pb);

	kiln_buf_reset(b);
	assert_int_equal(kiln_buf_grow(b, n + 1), 0);
	perftools__profiles__profile__pack(pb, (uint8_t *)b->data);
	b->len = n;
}

/* Applies edit to the encoding of make_full() and expects msg from the reader. */
static void expect_refused(void (*edit)(pb_profile *), const char *msg)
{
	struct kiln_prof *p = make_full(), *q;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d;
	pb_profile *pb;

	write_raw(p, &b);
	pb = unpack(&b);
	edit(pb);
	repack(pb, &b);
	unpack_done();
	assert_int_equal(read_bytes(b.data, b.len, &q, &d), -EINVAL);
	if (!strstr(d.msg, msg))
		fail_msg("expected '%s' in '%s'", msg, d.msg);
	kiln_buf_release(&b);
	kiln_prof_free(p);
}

static void edit_func_name(pb_profile *pb) { pb->function[1]->name = 9999; }
static void edit_neg_str(pb_profile *pb) { pb->mapping[0]->build_id = -3; }
static void edit_label_key(pb_profile *pb) { pb->sample[0]->label[1]->key = 12345; }
static void edit_comment(pb_profile *pb) { pb->comment[1] = 777; }
static void edit_period(pb_profile *pb) { pb->period_type->unit = 555; }
static void edit_type(pb_profile *pb) { pb->sample_type[1]->type = 444; }
static void edit_sample_loc(pb_profile *pb) { pb->sample[2]->location_id[1] = 99; }
static void edit_loc_map(pb_profile *pb) { pb->location[0]->mapping_id = 7; }
static void edit_line_func(pb_profile *pb) { pb->location[1]->line[1]->function_id = 42; }
static void edit_values(pb_profile *pb) { pb->sample[3]->n_value = 1; }
static void edit_str0(pb_profile *pb) { pb->string_table[0] = "oops"; }
static void edit_no_strings(pb_profile *pb) { pb->n_string_table = 0; }
static void edit_dup_loc(pb_profile *pb) { pb->location[2]->id = pb->location[0]->id; }
static void edit_dup_func(pb_profile *pb) { pb->function[3]->id = 1; }
static void edit_zero_map(pb_profile *pb) { pb->mapping[1]->id = 0; }
static void edit_overflow(pb_profile *pb) { pb->sample[2]->value[1] = INT64_MAX - 5; }
static void edit_neg_overflow(pb_profile *pb) { pb->sample[1]->value[0] = INT64_MIN; }

static void test_bad_indexes_and_ids(void **state)
{
	expect_refused(edit_func_name, "function 1: name 9999 is not in the string table");
	expect_refused(edit_neg_str, "mapping 0: build_id -3 is not in the string table");
	expect_refused(edit_label_key, "sample 0: label 1: string index 12345 is not in the string table");
	expect_refused(edit_comment, "comment 1: string index 777 is not in the string table");
	expect_refused(edit_period, "period_type: string index 555");
	expect_refused(edit_type, "sample_type 1: type 444 is not in the string table");
	expect_refused(edit_sample_loc, "sample 2: location id 99 does not exist");
	expect_refused(edit_loc_map, "location 0: mapping id 7 does not exist");
	expect_refused(edit_line_func, "location 1: line 1: function id 42 does not exist");
	expect_refused(edit_values, "sample 3: 1 values for 2 sample types");
	expect_refused(edit_str0, "string_table[0] is \"oops\" but must be empty");
	expect_refused(edit_no_strings, "byte 0: not a pprof profile: it has no string table");
	expect_refused(edit_dup_loc, "location 2: id 1 is used twice");
	expect_refused(edit_dup_func, "function 3: id 1 is used twice");
	expect_refused(edit_zero_map, "mapping 1: id 0 is reserved");
	/* Totals and merged values must fit in 64 bits. */
	expect_refused(edit_overflow, "sample 2: value 9223372036854775802 makes the "
		       "total of 'cpu' overflow 64 bits");
	expect_refused(edit_neg_overflow, "sample 1: value -9223372036854775808 makes the "
		       "total of 'samples' overflow 64 bits");
}

/* Sparse, unordered ids (large enough to need the hashed id map). */
static void edit_sparse(pb_profile *pb)
{
	static const uint64_t loc_ids[] = { 1ull << 40, 7, 123456789, 3 };
	static const uint64_t fn_ids[] = { 99, 1ull << 50, 5, 0xffffffffffffull };
	size_t i, j, k;

	for (i = 0; i < pb->n_sample; i++)
		for (j = 0; j < pb->sample[i]->n_location_id; j++)
			pb->sample[i]->location_id[j] =
				loc_ids[pb->sample[i]->location_id[j] - 1];
	for (i = 0; i < pb->n_location; i++) {
		pb->location[i]->id = loc_ids[pb->location[i]->id - 1];
		for (k = 0; k < pb->location[i]->n_line; k++)
			pb->location[i]->line[k]->function_id =
				fn_ids[pb->location[i]->line[k]->function_id - 1];
	}
	for (i = 0; i < pb->n_function; i++)
		pb->function[i]->id = fn_ids[pb->function[i]->id - 1];
	pb->mapping[0]->id = 1000000;
	pb->mapping[1]->id = 17;
	for (i = 0; i < pb->n_location; i++)
		pb->location[i]->mapping_id =
			pb->location[i]->mapping_id == 1 ? 1000000 : 17;
	/* Reverse the order of the functions and locations. */
	for (i = 0; i < pb->n_function / 2; i++) {
		void *t = pb->function[i];

		pb->function[i] = pb->function[pb->n_function - 1 - i];
		pb->function[pb->n_function - 1 - i] = t;
	}
	for (i = 0; i < pb->n_location / 2; i++) {
		void *t = pb->location[i];

		pb->location[i] = pb->location[pb->n_location - 1 - i];
		pb->location[pb->n_location - 1 - i] = t;
	}
}

static void test_sparse_ids(void **state)
{
	struct kiln_prof *p = make_full(), *q;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d;
	pb_profile *pb;
	char *a, *c;

	write_raw(p, &b);
	pb = unpack(&b);
	edit_sparse(pb);
	repack(pb, &b);
	unpack_done();
	assert_int_equal(read_bytes(b.data, b.len, &q, &d), 0);
	a = describe(p);
	c = describe(q);
	assert_string_equal(a, c);
	free(a);
	free(c);
	kiln_prof_free(q);
	kiln_prof_free(p);
	kiln_buf_release(&b);
}

/* Duplicate stacks in the file become one sample; zero sample types work. */
static void test_merge_and_no_types(void **state)
{
	struct kiln_prof *p = make_full(), *q;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d;
	pb_profile *pb;
	size_t i;

	write_raw(p, &b);
	pb = unpack(&b);
	/* Sample 3 becomes a copy of sample 1's stack (no labels). */
	pb->sample[3]->n_location_id = pb->sample[1]->n_location_id;
	pb->sample[3]->location_id = pb->sample[1]->location_id;
	repack(pb, &b);
	assert_int_equal(read_bytes(b.data, b.len, &q, &d), 0);
	assert_int_equal(q->nsamples, 3);
	assert_int_equal(kiln_prof_total(q, 0), 7);
	assert_int_equal(kiln_prof_value(q, 1, 0), 3);
	assert_int_equal(kiln_prof_value(q, 1, 1), 30000000);
	kiln_prof_free(q);

	/* No sample types: samples carry no values. */
	pb->n_sample_type = 0;
	for (i = 0; i < pb->n_sample; i++)
		pb->sample[i]->n_value = 0;
	pb->sample[3]->location_id = NULL;
	pb->sample[3]->n_location_id = 0;
	repack(pb, &b);
	assert_int_equal(read_bytes(b.data, b.len, &q, &d), 0);
	assert_int_equal(q->ntypes, 0);
	assert_int_equal(q->nsamples, 4);
	kiln_prof_free(q);
	unpack_done();
	kiln_prof_free(p);
	kiln_buf_release(&b);
}

/* ---- bad bytes ---- */

static void test_truncated(void **state)
{
	struct kiln_prof *p = make_full(), *q;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d;
	size_t cut, refused = 0;
	int err;

	write_raw(p, &b);
	/* Every prefix: never a crash; refused with a position or read. */
	for (cut = 1; cut < b.len; cut++) {
		char *copy = malloc(cut);	/* exact size, for ASan */

		memcpy(copy, b.data, cut);
		err = read_bytes(copy, cut, &q, &d);
		free(copy);
		if (err) {
			assert_int_equal(err, -EINVAL);
			assert_true(d.msg[0] != '\0');
			refused++;
		} else {
			kiln_prof_free(q);
		}
	}
	/* Almost every cut is refused: most end inside a field. */
	assert_true(refused > b.len * 9 / 10);

	/* A cut inside the first sample type: its length runs past the end. */
	assert_int_equal(read_bytes(b.data, 3, &q, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "byte 0: not a pprof profile: Profile.sample_type claims"));
	assert_non_null(strstr(d.msg, "remain"));
	kiln_prof_free(p);
	kiln_buf_release(&b);
}

static void test_corrupt_bytes(void **state)
{
	struct kiln_prof *q;
	struct kiln_diag d;
	/* field 2 (sample) as a varint */
	static const char wire0[] = { 0x10, 0x01 };
	/* field 6 (string_table) claiming 100 bytes */
	static const char longstr[] = { 0x32, 0x00, 0x32, 100, 'a' };
	/* sample with a label whose varint never ends */
	static const char badlabel[] = { 0x32, 0x00, 0x12, 0x03, 0x1a, 0x01, 0x08 };
	/* an unknown field 20 with wire type 7 */
	static const char wt7[] = { 0x32, 0x00, (char)0xa7, 0x01 };
	/* a text file */
	static const char text[] = "main;foo;bar 12\n";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int i, refused = 0;

	assert_int_equal(read_bytes(wire0, sizeof(wire0), &q, &d), -EINVAL);
	assert_string_equal(d.msg, "byte 0: not a pprof profile: Profile.sample has wire "
			    "type 0, expected 2 (length-delimited)");
	assert_int_equal(read_bytes(longstr, sizeof(longstr), &q, &d), -EINVAL);
	assert_string_equal(d.msg, "byte 2: not a pprof profile: Profile.string_table "
			    "claims 100 bytes but only 1 remain (truncated?)");
	assert_int_equal(read_bytes(badlabel, sizeof(badlabel), &q, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "byte 6: sample 0: the varint of Label.key is cut short"));
	assert_int_equal(read_bytes(wt7, sizeof(wt7), &q, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "byte 2: not a pprof profile: invalid wire type 7 (unknown field 20 of Profile)"));
	assert_int_equal(read_bytes(text, sizeof(text) - 1, &q, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "not a pprof profile"));

	/* Random bytes: never a crash, nearly always refused. */
	for (i = 0; i < 2000; i++) {
		size_t len = 1 + (size_t)(seed % 300), j;
		unsigned char *buf = malloc(len);
		int err;

		for (j = 0; j < len; j++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			buf[j] = (unsigned char)seed;
		}
		err = read_bytes(buf, len, &q, &d);
		free(buf);
		if (err) {
			assert_int_equal(err, -EINVAL);
			assert_true(d.msg[0] != '\0');
			refused++;
		} else {
			kiln_prof_free(q);
		}
	}
	assert_true(refused > 1990);
}

/* Strings are bytes with a length: a NUL inside one is kept in the model. */
static void test_nul_in_strings(void **state)
{
	/* string_table "", "a\0b", "x"; comment 1 (varint), comment 2 */
	static const char bytes[] = { 0x32, 0x00, 0x32, 0x03, 'a', 0x00, 'b',
				      0x32, 0x01, 'x', 0x68, 0x01, 0x68, 0x02 };
	struct kiln_prof *q;
	struct kiln_diag d;
	uint32_t id;

	assert_int_equal(read_bytes(bytes, sizeof(bytes), &q, &d), 0);
	id = kiln_prof_find_str(q, "a\0b", 3);
	assert_int_not_equal(id, 0);
	assert_int_equal(kiln_prof_strlen(q, id), 3);
	/* Comments are C strings in the model: cut at the NUL. */
	assert_int_equal(q->ncomments, 2);
	assert_string_equal(kiln_prof_str(q, q->comments[0]), "a");
	assert_string_equal(kiln_prof_str(q, q->comments[1]), "x");
	kiln_prof_free(q);
}

/* ---- real Go profiles (see tests/fixtures/pprof/README) ---- */

static struct kiln_prof *read_fixture(const char *name)
{
	const char *dir = getenv("KILN_FIXTURES");
	struct kiln_prof *p = NULL;
	struct kiln_diag d = { "" };
	enum kiln_fmt fmt;
	char path[4096];
	int err;

	snprintf(path, sizeof(path), "%s/pprof/%s", dir ? dir : "tests/fixtures",
		 name);
	err = kiln_read_profile(path, &p, &fmt, &d);
	if (err)
		fail_msg("%s: %d %s", path, err, d.msg);
	assert_int_equal(fmt, KILN_FMT_PPROF);
	return p;
}

/* The value of type t in samples that have a frame of function name. */
static int64_t cum(struct kiln_prof *p, const char *name, size_t t)
{
	struct kiln_frame *f = NULL;
	size_t cap = 0, i;
	int64_t sum = 0;

	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &f, &cap), j;

		assert_true(n >= 0);
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

static void test_go_cpu(void **state)
{
	struct kiln_prof *p = read_fixture("go-cpu.pb.gz");
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d;
	struct kiln_prof *q;
	char *a, *c;

	assert_int_equal(p->ntypes, 2);
	assert_string_equal(kiln_prof_str(p, p->types[0].type), "samples");
	assert_string_equal(kiln_prof_str(p, p->types[0].unit), "count");
	assert_string_equal(kiln_prof_str(p, p->types[1].type), "cpu");
	assert_string_equal(kiln_prof_str(p, p->types[1].unit), "nanoseconds");
	assert_string_equal(kiln_prof_str(p, p->period_type.type), "cpu");
	assert_int_equal(p->period, 10000000);
	/* 100 samples of 10 ms: 60/30/10 in burnA/B/C, all under main.spin. */
	assert_int_equal(kiln_prof_total(p, 0), 100);
	assert_int_equal(kiln_prof_total(p, 1), 1000000000);
	assert_int_equal(cum(p, "main.burnA", 0), 60);
	assert_int_equal(cum(p, "main.burnB", 0), 30);
	assert_int_equal(cum(p, "main.burnC", 0), 10);
	assert_int_equal(cum(p, "main.spin", 1), 1000000000);
	assert_int_equal(cum(p, "runtime.main", 0), 100);
	/* The program, [vdso] and [vsyscall], as Go lists them. */
	assert_int_equal(p->nmappings, 3);
	assert_string_equal(kiln_prof_str(p, p->mappings[1].file), "/tmp/pprof-go/gen");
	assert_true(p->mappings[1].has_functions);
	assert_string_equal(kiln_prof_str(p, p->mappings[2].file), "[vdso]");
	assert_false(p->mappings[2].has_functions);
	assert_true(p->duration_nanos > 1000000000);
	/* Through kiln and back: the same profile. */
	assert_int_equal(kiln_pprof_write(p, &b, false), 0);
	assert_int_equal(read_bytes(b.data, b.len, &q, &d), 0);
	a = describe(p);
	c = describe(q);
	assert_string_equal(a, c);
	free(a);
	free(c);
	kiln_prof_free(q);
	kiln_buf_release(&b);
	kiln_prof_free(p);
}

static void test_go_labels(void **state)
{
	struct kiln_prof *p = read_fixture("go-labels.pb.gz");
	char *s = describe(p);

	assert_int_equal(p->ncomments, 1);
	assert_string_equal(kiln_prof_str(p, p->comments[0]),
			    "kiln fixture: labels and a comment");
	assert_non_null(strstr(s, "{worker=a|0}"));
	assert_non_null(strstr(s, "{worker=b|0}"));
	assert_non_null(strstr(s, "{worker=c|0}"));
	assert_int_equal(kiln_prof_total(p, 0), 50);
	assert_int_equal(cum(p, "main.burnA", 0), 30);
	assert_int_equal(cum(p, "runtime/pprof.Do", 0), 50);
	free(s);
	kiln_prof_free(p);
}

/* ---- scale ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* n distinct samples of depth 12 over 2000 functions, with some labels. */
static struct kiln_prof *make_big(size_t n)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_mapping m = { .start = 0x400000, .limit = 0x800000,
				  .has_functions = true };
	uint32_t locs[2000], stack[12], map, lset[4];
	uint64_t seed = 88172645463325252ull;
	size_t i, j;

	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	m.file = S(p, "/usr/bin/big");
	map = kiln_prof_mapping(p, &m);
	for (i = 0; i < 2000; i++) {
		char name[32];
		struct kiln_line l;

		snprintf(name, sizeof(name), "fn_%zu", i);
		l.function = kiln_prof_function(p, S(p, name), 0, S(p, "big.c"), 0);
		l.line = (int64_t)i;
		locs[i] = kiln_prof_location(p, map, 0x400000 + i * 16, &l, 1);
	}
	for (i = 0; i < 4; i++) {
		struct kiln_label l = { .key = S(p, "thread"), .num = (int64_t)i + 1 };

		lset[i] = kiln_prof_labelset(p, &l, 1);
	}
	for (i = 0; i < n; i++) {
		int64_t v[2] = { 1 + (int64_t)(i % 3), 10000000 };

		for (j = 0; j < 12; j++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			stack[j] = locs[seed % 2000];
		}
		assert_true(kiln_prof_add_sample(p, stack, 12, v, i % 5 ? lset[i % 4] : 0) >= 0);
	}
	assert_int_equal(kiln_prof_error(p), 0);
	return p;
}

static void run_big(size_t n, bool print)
{
	struct kiln_prof *p = make_big(n), *q;
	struct kiln_buf b = KILN_BUF_INIT, gz = KILN_BUF_INIT, un = KILN_BUF_INIT;
	struct kiln_diag d;
	double t0, t1, t2, t3;

	t0 = now();
	assert_int_equal(kiln_pprof_write(p, &b, false), 0);
	t1 = now();
	assert_int_equal(kiln_pprof_write(p, &gz, true), 0);
	t2 = now();
	assert_int_equal(read_bytes(b.data, b.len, &q, &d), 0);
	t3 = now();
	assert_int_equal(q->nsamples, p->nsamples);
	assert_int_equal(kiln_prof_total(q, 0), kiln_prof_total(p, 0));
	assert_int_equal(kiln_prof_total(q, 1), kiln_prof_total(p, 1));
	kiln_buf_reset(&un);
	assert_int_equal(kiln_pprof_write(q, &un, false), 0);
	assert_int_equal(un.len, b.len);
	assert_memory_equal(un.data, b.data, b.len);
	if (print)
		printf("pprof bench: %zu samples: write %.3f s (%zu bytes), "
		       "write+gzip %.3f s (%zu bytes), read %.3f s\n",
		       p->nsamples, t1 - t0, b.len, t2 - t1, gz.len, t3 - t2);
	kiln_prof_free(q);
	kiln_prof_free(p);
	kiln_buf_release(&b);
	kiln_buf_release(&gz);
	kiln_buf_release(&un);
}

static void test_many_samples(void **state)
{
	const char *bench = getenv("KILN_PPROF_BENCH");

	run_big(bench ? strtoul(bench, NULL, 10) : 100000, bench != NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_full),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_roundtrip_empty),
		cmocka_unit_test(test_bad_indexes_and_ids),
		cmocka_unit_test(test_sparse_ids),
		cmocka_unit_test(test_merge_and_no_types),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt_bytes),
		cmocka_unit_test(test_nul_in_strings),
		cmocka_unit_test(test_go_cpu),
		cmocka_unit_test(test_go_labels),
		cmocka_unit_test(test_many_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
