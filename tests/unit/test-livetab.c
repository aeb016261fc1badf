/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/livetab.h, the live-block table: random inserts and
 * removals (colliding addresses included, across several growths)
 * checked against a plain array, lookups of absent blocks, the table kept
 * at most half full, and entries moved intact by growth and removal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/livetab.h"

struct blk {
	uint64_t ptr;
	uint64_t size;
	uint32_t tag;
};

#define N 20000

/* Deterministic: srandom() below fixes glibc's sequence. */
static uint64_t next(void)
{
	return (uint64_t)random() << 31 | (uint64_t)random();
}

static void check_all(const struct kiln_livetab *t, const uint64_t *ptrs,
		      const uint8_t *in, size_t n)
{
	size_t i, live = 0;

	for (i = 0; i < n; i++) {
		struct blk *b = kiln_livetab_find(t, ptrs[i]);

		if (in[i]) {
			live++;
			assert_non_null(b);
			assert_true(b->ptr == ptrs[i]);
			assert_true(b->size == ptrs[i] * 3);
			assert_int_equal(b->tag, (uint32_t)i);
		} else {
			assert_null(b);
		}
	}
	assert_int_equal(t->n, live);
	assert_true(t->n * 2 <= t->mask + 1);
}

static void random_ops(void **state)
{
	struct kiln_livetab t = KILN_LIVETAB_INIT(struct blk, 16);
	uint64_t *ptrs = calloc(N, sizeof(*ptrs));
	uint8_t *in = calloc(N, 1);
	size_t i, k;

	(void)state;
	srandom(1);
	assert_null(kiln_livetab_find(&t, 0x1000));
	for (i = 0; i < N; i++)
		/* Distinct: scattered 16-byte blocks (an odd multiplier is a
		 * bijection modulo 2^24), and every 7th a page apart. */
		ptrs[i] = i % 7 ? 0x7f0000000000ull +
				  (((uint64_t)i * 2654435761u) & 0xffffff) * 16
			       : 0x100000ull + (uint64_t)i * 4096;
	for (k = 0; k < 4 * N; k++) {
		i = (size_t)(next() % N);
		if (in[i]) {
			kiln_livetab_remove(&t, kiln_livetab_find(&t, ptrs[i]));
			in[i] = 0;
		} else if (!kiln_livetab_find(&t, ptrs[i])) {
			struct blk *b;

			assert_int_equal(kiln_livetab_reserve(&t), 0);
			b = kiln_livetab_put(&t, ptrs[i]);
			b->size = ptrs[i] * 3;
			b->tag = (uint32_t)i;
			in[i] = 1;
		}
		if (k % 5000 == 0)
			check_all(&t, ptrs, in, N);
	}
	check_all(&t, ptrs, in, N);
	kiln_livetab_release(&t);
	assert_null(t.slots);
	assert_int_equal(t.n, 0);
	free(ptrs);
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
