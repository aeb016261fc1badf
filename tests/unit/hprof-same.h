/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the heap analysis's unit tests (test-hprof, test-heapread): two
 * analyses that must agree, compared measure by measure, bit for bit.
 * Include after <cmocka.h>.
 */
#ifndef KILN_TESTS_HPROF_SAME_H
#define KILN_TESTS_HPROF_SAME_H

#include "profile/hprof.h"

/* Every measure of a and b: totals, memory over time, size classes, and
 * each stack's values and history. */
static inline void hprof_same(const struct kiln_hprof *a,
			      const struct kiln_hprof *b)
{
	size_t i;

	assert_memory_equal(&a->tot, &b->tot, sizeof(a->tot));
	assert_int_equal(a->nsites, b->nsites);
	assert_int_equal(a->nbuckets, b->nbuckets);
	assert_int_equal(a->bucket_ns, b->bucket_ns);
	assert_int_equal(a->nmaps, b->nmaps);
	assert_memory_equal(a->total_end, b->total_end, a->nbuckets * sizeof(double));
	assert_memory_equal(a->total_max, b->total_max, a->nbuckets * sizeof(double));
	assert_memory_equal(a->calls_n, b->calls_n, a->nbuckets * sizeof(double));
	assert_memory_equal(a->temp_n, b->temp_n, a->nbuckets * sizeof(double));
	assert_memory_equal(a->size_calls, b->size_calls, sizeof(a->size_calls));
	assert_memory_equal(a->size_bytes, b->size_bytes, sizeof(a->size_bytes));
	for (i = 1; i <= a->nsites; i++) {
		const struct kiln_hprof_site *x = &a->sites[i], *y = &b->sites[i];

		assert_memory_equal(&x->calls, &y->calls, sizeof(double));
		assert_memory_equal(&x->bytes, &y->bytes, sizeof(double));
		assert_memory_equal(&x->temporary, &y->temporary, sizeof(double));
		assert_memory_equal(&x->live_bytes, &y->live_bytes, sizeof(double));
		assert_memory_equal(&x->live_objs, &y->live_objs, sizeof(double));
		assert_memory_equal(&x->peak_bytes, &y->peak_bytes, sizeof(double));
		assert_memory_equal(&x->peak_objs, &y->peak_objs, sizeof(double));
		assert_int_equal(x->nhist, y->nhist);
		if (x->nhist)
			assert_memory_equal(x->hist, y->hist, x->nhist * sizeof(*x->hist));
	}
}

#endif
