/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/sort.c: kiln_sort_by_u64() gives what a stable sort
 * by the key gives (each element also carries its place before the sort,
 * which must stay increasing among equal keys), for element sizes with
 * their own copy loop and others, keys at other offsets, keys that differ
 * in few bytes or in all, and sorted, reversed and random input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/sort.h"

/* An element of `size` bytes: the key at `key`, its original index at 0
 * (or after the key when the key is at 0). */
static void check(size_t n, size_t size, size_t key, int kind, unsigned seed)
{
	size_t idx_at = key ? 0 : 8, i;
	char *v = calloc(n ? n : 1, size);
	uint64_t prev_k = 0, prev_i = 0;

	assert_non_null(v);
	srand(seed);
	for (i = 0; i < n; i++) {
		uint64_t k, ix = i;

		switch (kind) {
		case 0: k = i * 3; break;			/* sorted */
		case 1: k = (uint64_t)(n - i) << 40; break;	/* reversed */
		case 2: k = (uint64_t)(rand() % 7); break;	/* few keys */
		default:					/* anything */
			k = (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^
			    (uint64_t)rand();
		}
		memcpy(v + i * size + key, &k, 8);
		memcpy(v + i * size + idx_at, &ix, 8);
	}
	assert_int_equal(kiln_sort_by_u64(v, n, size, key), 0);
	for (i = 0; i < n; i++) {
		uint64_t k, ix;

		memcpy(&k, v + i * size + key, 8);
		memcpy(&ix, v + i * size + idx_at, 8);
		if (i) {
			assert_true(k >= prev_k);
			if (k == prev_k)
				assert_true(ix > prev_i);	/* stable */
		}
		prev_k = k;
		prev_i = ix;
	}
	free(v);
}

static void test_sizes(void **state)
{
	static const size_t sizes[][2] = {	/* size, key offset */
		{ 16, 8 }, { 16, 0 }, { 24, 0 }, { 24, 16 }, { 40, 24 },
		{ 32, 0 },
	};
	size_t i, n;
	int kind;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (n = 0; n < 3000; n = n * 3 + 1)
			for (kind = 0; kind < 4; kind++)
				check(n, sizes[i][0], sizes[i][1], kind,
				      (unsigned)(i * 100 + n + (size_t)kind));
}

/* Plain keys (size 8): the sort of numbers. */
static void test_plain(void **state)
{
	uint64_t v[1000], w[1000];
	size_t i;

	(void)state;
	srand(5);
	for (i = 0; i < 1000; i++)
		v[i] = w[i] = (uint64_t)rand() * (uint64_t)rand();
	assert_int_equal(kiln_sort_by_u64(v, 1000, 8, 0), 0);
	for (i = 1; i < 1000; i++)
		assert_true(v[i - 1] <= v[i]);
	/* The same numbers. */
	for (i = 0; i < 1000; i++) {
		size_t j;

		for (j = 0; j < 1000 && v[j] != w[i]; j++)
			;
		assert_true(j < 1000);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_plain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
