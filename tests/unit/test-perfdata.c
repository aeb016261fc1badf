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
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"

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
	};

	/* No build-id cache: the fixtures' binaries are what they are. */
	setenv("HOME", "/nonexistent", 1);
	unsetenv("PERF_BUILDID_DIR");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
