/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the disassembler (symbolize/disasm.c) on this test's own
 * executable: a known function found from an offset inside it, its
 * instructions up to its ret with source lines of this file, the build
 * ID checked, and the errors (no file, not ELF, no symbol). */
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
#include <unistd.h>

#include "symbolize/disasm.h"
#include "util/diag.h"

volatile unsigned long sink;

/* The function disassembled: a loop, its own name. */
__attribute__((noinline)) void disasm_target(unsigned long n)
{
	unsigned long i, x = sink;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

/* The file mapping address a and a's offset in it, from
 * /proc/self/maps. */
static void where(const void *a, char *path, size_t len, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	uintptr_t x = (uintptr_t)a;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, o;
		int at = 0;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &s, &e, &o, &at) < 3 ||
		    x < s || x >= e || !at)
			continue;
		snprintf(path, len, "%s", line + at);
		path[strcspn(path, "\n")] = '\0';
		*off = x - s + o;
		fclose(f);
		return;
	}
	fclose(f);
	fail_msg("no mapping holds %p", a);
}

static void test_own_function(void **state)
{
	struct kiln_disasm x;
	struct kiln_diag d = { "" };
	char path[4096];
	uint64_t off = 0;
	size_t i;
	bool ret = false, lines = false;

	where((const void *)disasm_target, path, sizeof(path), &off);
	/* An offset inside it, not its start. */
	assert_int_equal(kiln_disasm_at(path, NULL, off + 2, &x, &d), 0);
	assert_string_equal(x.symbol, "disasm_target");
	assert_true(x.n > 3);
	assert_int_equal(x.insns[0].offset, off);
	assert_true(x.end > x.start);
	for (i = 0; i < x.n; i++) {
		ret |= !strncmp(x.insns[i].text, "ret", 3);
		if (x.insns[i].file && strstr(x.files[x.insns[i].file - 1], "test-disasm.c"))
			lines = true;
		if (i)
			assert_int_equal(x.insns[i].offset,
					 x.insns[i - 1].offset + x.insns[i - 1].size);
	}
	assert_true(ret);
	/* With gcc and with clang, whose objects have no .debug_aranges
	 * (symbolize/cuaddr.c finds the unit from its own ranges). */
	assert_true(lines);
	assert_ptr_equal(kiln_disasm_find(&x, off + x.insns[0].size - 1), &x.insns[0]);
	assert_ptr_equal(kiln_disasm_find(&x, off + x.insns[0].size), &x.insns[1]);
	assert_null(kiln_disasm_find(&x, off - 1));
	assert_non_null(x.build_id);
	{
		/* Its own build ID passes; another is refused. */
		struct kiln_disasm y;
		char *id = strdup(x.build_id);

		assert_int_equal(kiln_disasm_at(path, id, off, &y, &d), 0);
		kiln_disasm_release(&y);
		id[0] = id[0] == '0' ? '1' : '0';
		assert_int_equal(kiln_disasm_at(path, id, off, &y, &d), -ESTALE);
		assert_non_null(strstr(d.msg, "changed since the profile was taken"));
		free(id);
	}
	kiln_disasm_release(&x);
}

static void test_errors(void **state)
{
	struct kiln_disasm x;
	struct kiln_diag d = { "" };
	char tmp[] = "/tmp/kiln-disasm-XXXXXX";
	int fd;

	assert_int_equal(kiln_disasm_at("/nonexistent/kiln/file", NULL, 0, &x, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "/nonexistent/kiln/file"));
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	assert_int_equal(kiln_disasm_at(tmp, NULL, 0, &x, &d), -ENOEXEC);
	unlink(tmp);
	/* A folder is not a regular file. */
	assert_int_equal(kiln_disasm_at("/tmp", NULL, 0, &x, &d), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_function),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
