/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open-addressing hash index (util stage).  It maps a 32-bit hash to
 * 32-bit ids (1-based, 0 is "empty") of entries that the caller keeps in
 * its own arrays; the caller compares keys.  Used to intern strings,
 * functions, locations and stacks, so memory grows with distinct items.
 */
#ifndef KILN_UTIL_HTAB_H
#define KILN_UTIL_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

struct kiln_htab_slot {
	uint32_t hash;
	uint32_t id;
};

struct kiln_htab {
	struct kiln_htab_slot *slots;
	size_t mask;	/* capacity - 1; capacity is a power of two */
	size_t count;
};

#define KILN_HTAB_INIT { NULL, 0, 0 }

void kiln_htab_init(struct kiln_htab *h);
void kiln_htab_release(struct kiln_htab *h);
/* Adds id under hash (no check for duplicates).  0 or -ENOMEM. */
int kiln_htab_insert(struct kiln_htab *h, uint32_t hash, uint32_t id);

static inline uint64_t kiln_hash(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

static inline uint64_t kiln_hash_seed(const void *p, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, len, seed);
}

/*
 * Returns the id stored under hash for which eq(ctx, id) is true, or 0.
 */
static inline uint32_t kiln_htab_find(const struct kiln_htab *h, uint32_t hash,
				      bool (*eq)(const void *ctx, uint32_t id),
				      const void *ctx)
{
	size_t i;

	if (!h->slots)
		return 0;
	for (i = hash & h->mask;; i = (i + 1) & h->mask) {
		const struct kiln_htab_slot *s = &h->slots[i];

		if (!s->id)
			return 0;
		if (s->hash == hash && eq(ctx, s->id))
			return s->id;
	}
}

#endif
