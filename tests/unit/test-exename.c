/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/exename.h: the name a program was run by, in a
 * folder made for the test: a link in the mapped file's folder (by path,
 * by bare name, by a comm cut to 15 characters), a relative path, a copy
 * and a link elsewhere that are not the same file, the mapped name
 * itself, /proc/self/exe and /dev/fd/N (not names a reader elsewhere can
 * open); and a maps text rewritten for the alias, other lines untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/exename.h"

static char dir[] = "/tmp/kiln-exename.XXXXXX";
static char real[PATH_MAX];

static void put(const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *target, const char *name)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(real, sizeof(real), "%s/real-prog", dir);
	put("real-prog", "the program");
	put("a-copy", "the program");
	put("other", "another program");
	link_to("real-prog", "run-as");
	link_to("real-prog", "a-program-name-over-15");
	link_to("other", "elsewhere");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static void expect(const char *invoked, const char *want)
{
	char out[PATH_MAX], path[PATH_MAX];
	bool got = kiln_exe_alias(real, invoked, out, sizeof(out));

	if (!want) {
		assert_false(got);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, want);
	assert_true(got);
	assert_string_equal(out, path);
}

static void test_alias(void **state)
{
	char p[PATH_MAX], cwd[PATH_MAX];
	int fd;

	(void)state;
	snprintf(p, sizeof(p), "%s/run-as", dir);
	expect(p, "run-as");				/* AT_EXECFN */
	expect("run-as", "run-as");			/* a comm */
	expect("a-program-name-", "a-program-name-over-15");	/* cut */
	expect("real-prog", NULL);			/* its own name */
	expect("a-copy", NULL);				/* not the same file */
	expect("elsewhere", NULL);			/* a link to another */
	expect("missing", NULL);
	expect("", NULL);
	expect(NULL, NULL);
	expect("/proc/self/exe", NULL);
	fd = open(real, O_RDONLY);
	assert_true(fd >= 0);
	snprintf(p, sizeof(p), "/dev/fd/%d", fd);
	expect(p, NULL);
	close(fd);
	/* Relative to the working directory, as execve's argument. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	expect("./run-as", "run-as");
	assert_int_equal(chdir(cwd), 0);
}

static void test_maps(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	const char *text =
		"55d0-55d8 r-xp 00001000 08:01 12 /opt/app/real-prog\n"
		"7f00-7f10 r-xp 00000000 08:01 13 /usr/lib/libc.so.6\n"
		"7f20-7f30 r-xp 00000000 00:00 0 \n"
		"55e0-55e8 r--p 00000000 08:01 12 /opt/app/real-prog";

	(void)state;
	assert_int_equal(kiln_buf_adds(&b, "kept\n"), 0);
	assert_int_equal(kiln_buf_adds(&b, text), 0);
	assert_int_equal(kiln_exe_alias_maps(&b, 5, "/opt/app/real-prog",
					     "/opt/app/run-as"), 0);
	assert_string_equal(b.data,
		"kept\n"
		"55d0-55d8 r-xp 00001000 08:01 12 /opt/app/run-as\n"
		"7f00-7f10 r-xp 00000000 08:01 13 /usr/lib/libc.so.6\n"
		"7f20-7f30 r-xp 00000000 00:00 0 \n"
		"55e0-55e8 r--p 00000000 08:01 12 /opt/app/run-as");
	kiln_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alias),
		cmocka_unit_test(test_maps),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
