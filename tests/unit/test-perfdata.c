/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the perf.data reader (src/format/perfdata.c) on real
 * files from `perf record` (tests/fixtures/perfdata/, README there): the
 * sample totals perf report gives, file and pipe mode, and the file as
 * hostile input: cut at every length up to a few KiB and at many more
 * beyond, and with bytes flipped all over, every read either succeeds or
 * fails with -EINVAL and a message giving the byte offset; never a crash
 * (this test also runs under ASan+UBSan).
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
#include <sys/utsname.h>

#include "format/format.h"
#include "profile/profile.h"
#include "session/replay.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/limit.h"

/* Replaces every occurrence of from by to (same length) in b. */
static void replace_all(struct kiln_buf *b, const char *from, const char *to)
{
	size_t n = strlen(from);
	char *q = b->data;

	assert_int_equal(strlen(to), n);
	while ((q = memmem(q, b->len - (size_t)(q - b->data), from, n))) {
		memcpy(q, to, n);
		q += n;
	}
}

/*
 * Makes what the fixture names unreachable, so that each of thousands of
 * reads costs the parsing only: the kernel's build ID (no kallsyms), the
 * release string (pipe mode's kallsyms test), the file names of the
 * workloads, libraries and vdso.
 */
static void unreachable(struct kiln_buf *b)
{
	char *k = b->data;
	struct utsname u;

	while ((k = memmem(k, b->len - (size_t)(k - b->data), "[kernel.kallsyms]",
			   17))) {
		/* build_id_event: id[24], then the name (elsewhere the byte
		 * 24 before it is a kernel mapping's, which kiln ignores). */
		if (k - b->data >= 24)
			k[-24] ^= 0x55;
		k += 17;
	}
	if (!uname(&u) && u.release[0]) {
		char other[sizeof(u.release)];

		snprintf(other, sizeof(other), "%s", u.release);
		other[0] = other[0] == 'X' ? 'Y' : 'X';
		replace_all(b, u.release, other);
	}
	replace_all(b, "/shares", "/sharez");
	replace_all(b, "/lib", "/liX");
	replace_all(b, "[vdso]", "[vdsX]");
}

static void load(const char *name, struct kiln_buf *out)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[4096];
	struct kiln_map m;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/perfdata/%s", dir, name);
	if (kiln_map_open(&m, path))
		fail_msg("cannot read fixture %s", path);
	assert_int_equal(kiln_buf_add(out, m.data, m.len), 0);
	kiln_map_release(&m);
	unreachable(out);
}

/* Reads len bytes of data: 0 (total samples in *n) or -EINVAL. */
static int try_read(const char *data, size_t len, int64_t *n, char *msg,
		    size_t msglen)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };
	int err, t;

	assert_non_null(p);
	err = kiln_perfdata_read(p, data, len, &d);
	if (!err) {
		t = kiln_prof_type_index(p, "samples", NULL);
		assert_true(t >= 0);
		*n = kiln_prof_total(p, t);
	} else {
		assert_int_equal(err, -EINVAL);
		/* Every refusal says where. */
		if (strncmp(d.msg, "byte ", 5))
			fail_msg("message without a byte offset: '%s'", d.msg);
		snprintf(msg, msglen, "%s", d.msg);
	}
	kiln_prof_free(p);
	return err;
}

static void total_is(const char *name, int64_t want)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char msg[800];
	int64_t n = -1;

	load(name, &b);
	assert_true(kiln_perfdata_detect(b.data, b.len));
	if (try_read(b.data, b.len, &n, msg, sizeof(msg)))
		fail_msg("%s: %s", name, msg);
	assert_int_equal(n, want);
	kiln_buf_release(&b);
}

/* The totals `perf report --stdio -n` gives for the fixtures. */
static void test_totals(void **state)
{
	total_is("fp.data", 52);
	total_is("dwarf.data", 20);
	total_is("pipe.data", 53);
}

/* Cuts at every length up to 4 KiB, then every 61 bytes. */
static void cut_all(const char *name, bool pipe)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char msg[800];
	size_t cut, refused = 0;
	int64_t n;

	load(name, &b);
	for (cut = 0; cut < b.len; cut += cut < 4096 ? 1 : 61) {
		/* A copy of exactly cut bytes, so ASan sees reads past it. */
		char *c = malloc(cut ? cut : 1);

		assert_non_null(c);
		memcpy(c, b.data, cut);
		if (try_read(c, cut, &n, msg, sizeof(msg)))
			refused++;
		else if (!pipe)
			fail_msg("%s cut at %zu bytes was read", name, cut);
		free(c);
	}
	/* A pipe cut between records is a shorter stream; most cuts are not. */
	assert_true(refused > 0);
	kiln_buf_release(&b);
}

static void test_truncated(void **state)
{
	cut_all("fp.data", false);
	cut_all("pipe.data", true);
	cut_all("dwarf.data", false);
}

/* Flips bytes at many positions, with several patterns. */
static void flip_all(const char *name)
{
	static const unsigned char pat[] = { 0xff, 0x80, 0x01, 0x7f };
	struct kiln_buf b = KILN_BUF_INIT;
	char msg[800];
	size_t i, k, step;
	int64_t n;

	load(name, &b);
	step = b.len / 4000 + 1;
	for (i = 0; i < b.len; i += step) {
		for (k = 0; k < sizeof(pat); k++) {
			char *c = malloc(b.len);

			assert_non_null(c);
			memcpy(c, b.data, b.len);
			c[i] ^= (char)pat[(i / step + k) % sizeof(pat)];
			/* Also the next byte now and then: sizes are u16/u32. */
			if (k == 3 && i + 1 < b.len)
				c[i + 1] = (char)0xff;
			try_read(c, b.len, &n, msg, sizeof(msg));
			free(c);
		}
	}
	kiln_buf_release(&b);
}

static void test_flipped(void **state)
{
	flip_all("fp.data");
	flip_all("pipe.data");
	flip_all("dwarf.data");
	flip_all("z.data");
}

/* The offset of the first record of type want at or after from in the
 * data section of b (0: none). */
static size_t find_record(const struct kiln_buf *b, uint32_t want, size_t from)
{
	uint64_t doff, dsize;
	size_t off;

	memcpy(&doff, b->data + 40, 8);
	memcpy(&dsize, b->data + 48, 8);
	for (off = (size_t)doff; off + 8 <= doff + dsize;) {
		uint32_t type;
		uint16_t size;

		memcpy(&type, b->data + off, 4);
		memcpy(&size, b->data + off + 6, 2);
		if (type == want && off >= from)
			return off;
		assert_true(size >= 8);
		off += size;
	}
	return 0;
}

/*
 * perf record -z: the compressed records are inflated and read as if
 * their records were in the file, as perf report counts them; several
 * events, each its own sample type; --event picks one.
 */
static void test_compressed(void **state)
{
	struct kiln_prof *p;
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	int t;

	total_is("z.data", 50);
	/* perfparser's, from another machine (tests/fixtures/perfdata/peers). */
	total_is("peers/fork_static_gcc_perf.data.zstd", 106);
	total_is("peers/vector_static_gcc_perf.data.zstd", 34);
	/* cycles and sched:sched_switch: 233 + 9 samples. */
	total_is("peers/parallel_static_gcc_perf.data.zstd", 242);
	load("peers/parallel_static_gcc_perf.data.zstd", &b);
	p = kiln_prof_new();
	assert_non_null(p);
	assert_int_equal(kiln_perfdata_read(p, b.data, b.len, &d), 0);
	assert_int_equal(p->ntypes, 3);
	t = kiln_prof_type_index(p, "cycles", NULL);
	assert_true(t >= 0);
	assert_int_equal(kiln_prof_total(p, (size_t)t), 25516312);
	t = kiln_prof_type_index(p, "sched:sched_switch/count", NULL);
	assert_true(t >= 0);
	assert_int_equal(kiln_prof_total(p, (size_t)t), 9);
	kiln_prof_free(p);
	/* --event: one event's samples alone. */
	kiln_perfdata_set_event("sched:sched_switch");
	p = kiln_prof_new();
	assert_non_null(p);
	assert_int_equal(kiln_perfdata_read(p, b.data, b.len, &d), 0);
	assert_int_equal(p->ntypes, 2);
	assert_int_equal(kiln_prof_total(p, 0), 9);
	kiln_prof_free(p);
	kiln_perfdata_set_event("cycles:u");
	p = kiln_prof_new();
	assert_non_null(p);
	assert_int_equal(kiln_perfdata_read(p, b.data, b.len, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "no event 'cycles:u' in the file (it "
			       "samples cycles, sched:sched_switch)"));
	kiln_prof_free(p);
	kiln_perfdata_set_event(NULL);
	kiln_buf_release(&b);
}

/*
 * One zstd stream cut into two compressed records anywhere (perf cuts
 * it where its ring buffer wraps): the records that straddle the cut are
 * read whole.  The extra header takes the place of a FINISHED_ROUND, so
 * that every offset of the file stays.
 */
static void test_compressed_split(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char msg[800], *c;
	size_t zoff, roff, n, k;
	uint16_t zsize, h;
	int64_t got;

	load("z.data", &b);
	zoff = find_record(&b, 81, 0);
	roff = find_record(&b, 68, zoff);
	assert_true(zoff && roff > zoff);
	memcpy(&zsize, b.data + zoff + 6, 2);
	n = zsize - 8u;
	/* The FINISHED_ROUND right after it (8 bytes), so the split fits. */
	assert_int_equal(roff, zoff + zsize);
	c = malloc(b.len);
	assert_non_null(c);
	for (k = 1; k < n; k++) {
		memcpy(c, b.data, b.len);
		h = (uint16_t)(8 + k);
		memcpy(c + zoff + 6, &h, 2);
		memcpy(c + zoff + 8 + k, b.data + zoff, 8);
		h = (uint16_t)(8 + n - k);
		memcpy(c + zoff + 8 + k + 6, &h, 2);
		memcpy(c + zoff + 16 + k, b.data + zoff + 8 + k, n - k);
		if (try_read(c, b.len, &got, msg, sizeof(msg)))
			fail_msg("split at %zu: %s", k, msg);
		assert_int_equal(got, 50);
	}
	free(c);
	kiln_buf_release(&b);
}

/*
 * A compressed record garbled or cut short: refused with the record's
 * offset; an inflated size past the input limit: refused, not held.
 */
static void test_compressed_bad(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char msg[800], where[64];
	size_t zoff;
	uint16_t zsize, h;
	int64_t n;

	load("z.data", &b);
	zoff = find_record(&b, 81, 0);
	memcpy(&zsize, b.data + zoff + 6, 2);
	snprintf(where, sizeof(where), "byte %zu", zoff);
	/* Garbled: its zstd magic. */
	b.data[zoff + 8] ^= 0x5a;
	assert_int_equal(try_read(b.data, b.len, &n, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, where));
	assert_non_null(strstr(msg, "does not inflate"));
	b.data[zoff + 8] ^= 0x5a;
	/* Cut short: the record ends half way through its bytes, and what
	 * follows until the FINISHED_ROUND is a hole of zeros (a record of 0
	 * bytes) or, with the round, records that end inside the stream. */
	h = (uint16_t)(8 + (zsize - 8) / 2);
	memcpy(b.data + zoff + 6, &h, 2);
	assert_int_equal(try_read(b.data, b.len, &n, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(strncmp(msg, "byte ", 5), 0);
	/* ...and the rest of its bytes a record of perf's that kiln passes
	 * over: the records inflated so far end inside a record (refused),
	 * or zstd held back the cut block whole and they end between two
	 * (perf's stream never ends, so a cut at a block is not seen: read,
	 * with fewer samples). */
	{
		uint16_t gap = (uint16_t)(zsize - h), type = 68;

		assert_true(gap >= 8);
		memset(b.data + zoff + h, 0, 8);
		memcpy(b.data + zoff + h, &type, 2);
		memcpy(b.data + zoff + h + 6, &gap, 2);
		if (!try_read(b.data, b.len, &n, msg, sizeof(msg)))
			assert_true(n < 50);
		else if (!strstr(msg, "end inside a record") &&
			 !strstr(msg, "does not inflate"))
			fail_msg("cut compressed record: '%s'", msg);
	}
	kiln_buf_release(&b);
	/* Every cut of the file: read or refused with an offset. */
	cut_all("z.data", false);
	/* The limit: 4 KiB of inflated records is not enough. */
	load("z.data", &b);
	kiln_input_set_limit(4096);
	assert_int_equal(try_read(b.data, b.len, &n, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "inflate to more than 4 KiB, the limit for "
			       "decompressed input"));
	assert_non_null(strstr(msg, where));
	kiln_input_set_limit(KILN_INPUT_LIMIT_DEFAULT);
	total_is("z.data", 50);
	kiln_buf_release(&b);
}

/* Header facts: the magic, a swapped magic, and sections past the end. */
static void test_header(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	char msg[800];
	int64_t n;
	uint64_t v;

	load("fp.data", &b);
	/* The data section's size made larger than the file. */
	v = (uint64_t)b.len;
	memcpy(b.data + 48, &v, 8);
	assert_int_equal(try_read(b.data, b.len, &n, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "byte 40: the data section"));
	/* Big-endian magic. */
	memcpy(b.data, "2ELIFREP", 8);
	assert_true(kiln_perfdata_detect(b.data, b.len));
	assert_int_equal(try_read(b.data, b.len, &n, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "big-endian"));
	/* The detector leaves other formats alone. */
	assert_false(kiln_perfdata_detect("PERFFILE", 8));
	assert_int_equal(kiln_fmt_detect("PERFILE2\x10\0\0\0\0\0\0\0", 16),
			 KILN_FMT_PERF_DATA);
	kiln_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_flipped),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_compressed_split),
		cmocka_unit_test(test_compressed_bad),
	};

	/* No build-id cache: the fixtures' binaries are what they are. */
	setenv("HOME", "/nonexistent", 1);
	/* And none of this machine's files: unreachable() cannot rename the
	 * paths inside z.data's compressed records, and symbolizing libc
	 * on each of thousands of reads took minutes. */
	kiln_sym_set_no_local(true);
	unsetenv("PERF_BUILDID_DIR");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
