/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sorting by a 64-bit key (util stage): a stable LSD radix sort, for
 * arrays of many elements whose order is a number (record times, symbol
 * addresses), where qsort's merge sort spends its time in calls to a
 * comparison function.
 */
#ifndef KILN_UTIL_SORT_H
#define KILN_UTIL_SORT_H

#include <stddef.h>

/*
 * Sorts the n elements of size bytes at base by the uint64_t at byte
 * offset key of each (aligned for it), stably: what qsort() with a
 * comparison of those keys gives when it merge-sorts (glibc's, with
 * memory).  One pass over the elements per byte in which the keys
 * differ.  0, or -ENOMEM with base unchanged.
 */
int kiln_sort_by_u64(void *base, size_t n, size_t size, size_t key);

#endif
