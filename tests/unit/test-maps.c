/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/maps.c: /proc/PID/maps lines parsed, a maps file
 * walked by the iterator across reads and past a line longer than its
 * buffer, and this process's own mappings found by address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/file.h"
#include "util/maps.h"

struct maps_seen {
	int n;
	struct kiln_maps_entry e[8];
	char path[8][128];
};

static int collect(const struct kiln_maps_entry *e, void *ctx)
{
	struct maps_seen *m = ctx;

	m->e[m->n] = *e;
	snprintf(m->path[m->n], sizeof(m->path[0]), "%.*s", (int)e->pathlen,
		 e->path);
	m->n++;
	return 0;
}

static void test_parse(void **state)
{
	static const char text[] =
		"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234   /usr/bin/x\n"
		"55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234   /usr/bin/x\n"
		"garbage line\n"
		"\n"
		"7f00aa000000-7f00aa100000 r-xp 0002a000 08:01 99 /opt/my app/lib.so (deleted)\n"
		"7ffd1000-7ffd2000 rw-p 00000000 00:00 0          [stack]\n"
		"7fff0000-7fff1000 r-xp 00000000 00:00 0\r\n";
	struct maps_seen m = { 0 };

	(void)state;
	assert_int_equal(kiln_maps_parse(text, sizeof(text) - 1, collect, &m), 0);
	assert_int_equal(m.n, 5);
	assert_int_equal(m.e[1].start, 0x55d0c0a01000ull);
	assert_int_equal(m.e[1].end, 0x55d0c0a05000ull);
	assert_int_equal(m.e[1].offset, 0x1000);
	assert_string_equal(m.e[1].perms, "r-xp");
	assert_string_equal(m.path[1], "/usr/bin/x");
	assert_int_equal(m.e[1].linelen, strlen("55d0c0a01000-55d0c0a05000 r-xp "
						"00001000 08:01 1234   /usr/bin/x"));
	assert_memory_equal(m.e[1].line, "55d0c0a01000-", 13);
	assert_string_equal(m.path[2], "/opt/my app/lib.so (deleted)");
	assert_int_equal(m.e[2].offset, 0x2a000);
	assert_string_equal(m.path[3], "[stack]");
	assert_string_equal(m.path[4], "");
}

/*
 * A file of n lines whose paths grow, one of them (line `longone`)
 * longer than the iterator's buffer, and no '\n' after the last.
 */
static void write_file(const char *path, int n, int longone)
{
	FILE *f = fopen(path, "w");
	int i;

	assert_non_null(f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%x000-%x000 r-xp %08x 08:01 %d /lib/l%d", i + 1, i + 2,
			i, i, i);
		if (i == longone)
			for (int k = 0; k < 6000; k++)
				fputc('a' + k % 26, f);
		else
			for (int k = 0; k < i % 300; k++)
				fputc('z', f);
		if (i + 1 < n)
			fputc('\n', f);
	}
	assert_int_equal(fclose(f), 0);
}

static void test_iter(void **state)
{
	char path[] = "/tmp/kiln-test-maps.XXXXXX";
	int fd = mkstemp(path), i = 0, r;
	struct kiln_maps_iter *it = malloc(sizeof(*it));
	struct kiln_maps_entry e;
	const int n = 400, longone = 123;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_file(path, n, longone);
	assert_int_equal(kiln_maps_open(it, AT_FDCWD, path), 0);
	while ((r = kiln_maps_next(it, &e)) > 0) {
		char want[32];
		int len = snprintf(want, sizeof(want), "/lib/l%d", i);

		assert_int_equal(e.start, (uint64_t)(i + 1) << 12);
		assert_int_equal(e.end, (uint64_t)(i + 2) << 12);
		assert_int_equal(e.offset, (uint64_t)i);
		assert_memory_equal(e.path, want, (size_t)len);
		if (i == longone) {
			assert_true(it->cut);
		} else {
			assert_false(it->cut);
			assert_int_equal(e.pathlen, (size_t)len + i % 300);
		}
		i++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(i, n);	/* the cut line's rest is no line */
	kiln_maps_close(it);
	unlink(path);
	free(it);
}

static void test_find_self(void **state)
{
	static int here;
	uint64_t lo = 0, hi = 0;
	struct kiln_buf text = KILN_BUF_INIT;
	char want[64];

	(void)state;
	assert_int_equal(kiln_maps_find((uint64_t)(uintptr_t)&here, &lo, &hi), 0);
	assert_true(lo <= (uintptr_t)&here && (uintptr_t)&here < hi);
	/* The same line as the whole text says. */
	assert_int_equal(kiln_read_proc(AT_FDCWD, "/proc/self/maps", &text), 0);
	snprintf(want, sizeof(want), "%08llx-%08llx ", (unsigned long long)lo,
		 (unsigned long long)hi);
	assert_non_null(strstr(text.data, want));
	kiln_buf_release(&text);
	assert_int_equal(kiln_maps_find(0, &lo, &hi), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_iter),
		cmocka_unit_test(test_find_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
