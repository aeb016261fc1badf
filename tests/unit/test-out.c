/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of kiln_out (util/file.h), the one safe output: the data goes
 * to an unnamed file (O_TMPFILE) that nothing in the folder shows until
 * the commit; the commit keeps a file at the name as NAME.old, and an
 * older NAME.old is left alone until then; an abort leaves the folder as
 * it was; kiln_out_keep_in_place() (before a privilege drop) copies the
 * file at the name to NAME.old or gives the data file the name, and an
 * abort after it takes that name back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/file.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/kiln-test-out.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

/* The names in dir, sorted, joined by spaces ("" when empty). */
static void listing(char *out, size_t n)
{
	struct dirent **de;
	int k = scandir(dir, &de, NULL, alphasort);

	out[0] = '\0';
	for (int i = 0; i < k; i++) {
		if (de[i]->d_name[0] != '.') {
			if (out[0])
				strncat(out, " ", n - strlen(out) - 1);
			strncat(out, de[i]->d_name, n - strlen(out) - 1);
		}
		free(de[i]);
	}
	free(de);
}

static void put(const char *name, const char *text)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void expect(const char *name, const char *text)
{
	char p[128], buf[256] = "";
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, text);
}

static void path_of(char *p, size_t n, const char *name)
{
	snprintf(p, n, "%s/%s", dir, name);
}

static void test_unnamed_until_commit(void **state)
{
	struct kiln_out o;
	char p[128], ls[512];

	(void)state;
	path_of(p, sizeof(p), "a.prof");
	assert_int_equal(kiln_out_open(&o, p), 0);
	assert_int_equal(kiln_out_write(&o, "new", 3), 0);
	listing(ls, sizeof(ls));
	if (o.anon)
		assert_string_equal(ls, "");	/* nothing to see while it runs */
	assert_int_equal(kiln_out_commit(&o), 0);
	listing(ls, sizeof(ls));
	assert_string_equal(ls, "a.prof");
	expect("a.prof", "new");
}

static void test_old_kept_only_at_commit(void **state)
{
	struct kiln_out o;
	char p[128], ls[512];

	(void)state;
	put("b.prof", "previous");
	put("b.prof.old", "two ago");
	path_of(p, sizeof(p), "b.prof");
	assert_int_equal(kiln_out_open(&o, p), 0);
	assert_int_equal(kiln_out_write(&o, "newest", 6), 0);
	expect("b.prof", "previous");
	expect("b.prof.old", "two ago");	/* untouched until the commit */
	assert_int_equal(kiln_out_commit(&o), 0);
	expect("b.prof", "newest");
	expect("b.prof.old", "previous");
	listing(ls, sizeof(ls));
	assert_string_equal(ls, "b.prof b.prof.old");
}

static void test_abort_leaves_all(void **state)
{
	struct kiln_out o;
	char p[128], ls[512];

	(void)state;
	put("c.prof", "kept");
	path_of(p, sizeof(p), "c.prof");
	assert_int_equal(kiln_out_open(&o, p), 0);
	assert_int_equal(kiln_out_write(&o, "lost", 4), 0);
	kiln_out_abort(&o);
	listing(ls, sizeof(ls));
	assert_string_equal(ls, "c.prof");
	expect("c.prof", "kept");
}

static void test_keep_in_place_existing(void **state)
{
	struct kiln_out o;
	char p[128], ls[512];

	(void)state;
	put("d.prof", "before the drop");
	path_of(p, sizeof(p), "d.prof");
	assert_int_equal(kiln_out_open(&o, p), 0);
	assert_int_equal(kiln_out_keep_in_place(&o), 0);
	assert_true(o.place_fd >= 0);
	expect("d.prof", "before the drop");		/* whole */
	expect("d.prof.old", "before the drop");	/* a copy */
	assert_int_equal(kiln_out_write(&o, "after", 5), 0);
	assert_int_equal(kiln_out_commit(&o), 0);	/* the folder is open: as usual */
	expect("d.prof", "after");
	expect("d.prof.old", "before the drop");
	listing(ls, sizeof(ls));
	assert_string_equal(ls, "d.prof d.prof.old");
}

static void test_keep_in_place_new(void **state)
{
	struct kiln_out o;
	char p[128], ls[512];

	(void)state;
	path_of(p, sizeof(p), "e.prof");
	assert_int_equal(kiln_out_open(&o, p), 0);
	assert_int_equal(kiln_out_keep_in_place(&o), 0);
	assert_true(o.placed);
	listing(ls, sizeof(ls));
	assert_string_equal(ls, "e.prof");		/* named now, empty */
	assert_int_equal(kiln_out_write(&o, "data", 4), 0);
	assert_int_equal(kiln_out_commit(&o), 0);
	expect("e.prof", "data");
	/* An output prepared so and given up: the name goes again. */
	path_of(p, sizeof(p), "f.prof");
	assert_int_equal(kiln_out_open(&o, p), 0);
	assert_int_equal(kiln_out_keep_in_place(&o), 0);
	kiln_out_abort(&o);
	listing(ls, sizeof(ls));
	assert_string_equal(ls, "e.prof");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unnamed_until_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_kept_only_at_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_leaves_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_in_place_existing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_in_place_new, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
