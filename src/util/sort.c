/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sorting by a 64-bit key (util stage).  See sort.h.
 */
#include "util/sort.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_at(const char *e, size_t key)
{
	uint64_t k;

	memcpy(&k, e + key, sizeof(k));
	return k;
}

/*
 * One counting pass of byte b: src to dst by count[] (prefix sums).  The
 * element copy has a constant size where it can, so that it is a move or
 * two, not a call.
 */
#define PASS(sz)							\
	for (i = 0; i < n; i++) {					\
		const char *e = src + i * (sz);				\
									\
		memcpy(dst + count[b][(key_at(e, key) >> shift) & 0xff]++ * (sz), \
		       e, (sz));					\
	}

int kiln_sort_by_u64(void *base, size_t n, size_t size, size_t key)
{
	size_t count[8][256], i, b;	/* 16 KiB */
	char *src = base, *dst, *buf;
	uint64_t first, diff = 0;

	if (n < 2)
		return 0;
	buf = malloc(n * size);
	if (!buf)
		return -ENOMEM;
	dst = buf;
	memset(count, 0, sizeof(count));
	first = key_at(src, key);
	for (i = 0; i < n; i++) {
		uint64_t k = key_at(src + i * size, key);

		diff |= k ^ first;
		for (b = 0; b < 8; b++)
			count[b][(k >> (8 * b)) & 0xff]++;
	}
	for (b = 0; b < 8; b++) {
		size_t sum = 0, c, v;
		unsigned shift = (unsigned)(8 * b);
		char *t;

		if (!((diff >> shift) & 0xff))
			continue;	/* every key has the same byte here */
		for (v = 0; v < 256; v++) {
			c = count[b][v];
			count[b][v] = sum;
			sum += c;
		}
		switch (size) {
		case 8: PASS(8); break;
		case 16: PASS(16); break;
		case 24: PASS(24); break;
		default: PASS(size); break;
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != base)
		memcpy(base, src, n * size);
	free(buf);
	return 0;
}
