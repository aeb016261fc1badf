/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of kiln_array_grow_from() and KILN_GROW (util/buf.h), the one
 * growable-array helper: capacity
 * doubling from the first size, room for what is asked at once, a refused
 * size that leaves the array as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "util/buf.h"

static void test_doubles_from_first(void **state)
{
	int *v = NULL;
	size_t cap = 0, i;

	(void)state;
	assert_int_equal(KILN_GROW(v, cap, 1, 8), 0);
	assert_int_equal(cap, 8);
	for (i = 0; i < 8; i++)
		v[i] = (int)i;
	assert_int_equal(KILN_GROW(v, cap, 8, 8), 0);	/* fits: no change */
	assert_int_equal(cap, 8);
	assert_int_equal(KILN_GROW(v, cap, 9, 8), 0);
	assert_int_equal(cap, 16);
	for (i = 0; i < 8; i++)
		assert_int_equal(v[i], (int)i);		/* kept across realloc */
	free(v);
}

static void test_room_at_once(void **state)
{
	char *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(KILN_GROW(v, cap, 1000, 16), 0);
	assert_int_equal(cap, 1024);			/* 16 doubled to >= 1000 */
	assert_int_equal(KILN_GROW(v, cap, 1025, 16), 0);
	assert_int_equal(cap, 2048);
	free(v);
}

static void test_zero_first(void **state)
{
	long *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(KILN_GROW(v, cap, 3, 0), 0);
	assert_true(cap >= 3);
	free(v);
}

static void test_too_large_changes_nothing(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(KILN_GROW(v, cap, 4, 4), 0);
	v[3] = 42;
	/* More elements than bytes can count: refused before realloc. */
	assert_int_equal(KILN_GROW(v, cap, SIZE_MAX / 4, 4), -ENOMEM);
	assert_int_equal(KILN_GROW(v, cap, SIZE_MAX, 4), -ENOMEM);
	assert_int_equal(cap, 4);
	assert_int_equal(v[3], 42);
	free(v);
}

/* kiln_buf_grow_most(): doubling, but never past the ceiling; always
 * room for one more byte (the reader's limit check needs it). */
static void test_buf_grow_most(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;

	(void)state;
	assert_int_equal(kiln_buf_grow_most(&b, 100, 1000), 0);
	assert_true(b.cap >= 101 && b.cap <= 1000);
	b.len = 600;
	assert_int_equal(kiln_buf_grow_most(&b, 600, 1000), 0);
	assert_int_equal(b.cap, 1000);			/* not 2048 */
	b.len = 999;
	assert_int_equal(kiln_buf_grow_most(&b, 64, 1000), 0);
	assert_int_equal(b.cap, 1001);			/* one byte and the NUL */
	kiln_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubles_from_first),
		cmocka_unit_test(test_room_at_once),
		cmocka_unit_test(test_zero_first),
		cmocka_unit_test(test_too_large_changes_nothing),
		cmocka_unit_test(test_buf_grow_most),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
