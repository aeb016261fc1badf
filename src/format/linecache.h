/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A cache from a piece of input text to an id (format stage), private to
 * the text readers (perf script, collapsed stacks).  The keys point into
 * the reader's input, which stays in memory for the whole read, so a hit
 * costs one hash of the text and one memcmp, and the cache grows with the
 * number of distinct keys (frames, threads), not with the input size.
 */
#ifndef KILN_FORMAT_LINECACHE_H
#define KILN_FORMAT_LINECACHE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/htab.h"

struct kiln_linecache_slot {
	uint64_t hash;
	const char *key;	/* into the input; NULL: empty slot */
	uint32_t len;
	uint32_t id;
};

struct kiln_linecache {
	struct kiln_linecache_slot *slots;
	size_t mask;		/* capacity - 1, a power of two */
	size_t count;
};

#define KILN_LINECACHE_INIT { NULL, 0, 0 }

static inline uint64_t kiln_linecache_hash(const char *key, size_t len)
{
	return kiln_hash(key, len);
}

/* The id stored for key (hash from kiln_linecache_hash()), or 0. */
static inline uint32_t kiln_linecache_find(const struct kiln_linecache *c,
					   const char *key, size_t len,
					   uint64_t hash)
{
	size_t i;

	if (!c->slots)
		return 0;
	for (i = (size_t)hash & c->mask;; i = (i + 1) & c->mask) {
		const struct kiln_linecache_slot *s = &c->slots[i];

		if (!s->key)
			return 0;
		if (s->hash == hash && s->len == len &&
		    !memcmp(s->key, key, len))
			return s->id;
	}
}

/*
 * Remembers id for key; key must stay valid as long as the cache is used
 * and must not be present yet.  0 or -ENOMEM.
 */
static inline int kiln_linecache_add(struct kiln_linecache *c, const char *key,
				     size_t len, uint64_t hash, uint32_t id)
{
	struct kiln_linecache_slot *s;
	size_t i;

	if (len > UINT32_MAX)
		return -ENOMEM;
	/* Load at most 1/2 keeps misses short: most lookups are hits. */
	if (!c->slots || (c->count + 1) * 2 > c->mask + 1) {
		size_t cap = c->slots ? (c->mask + 1) * 2 : 1024, j;
		struct kiln_linecache_slot *n = calloc(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (j = 0; c->slots && j <= c->mask; j++) {
			if (!c->slots[j].key)
				continue;
			for (i = (size_t)c->slots[j].hash & (cap - 1); n[i].key;
			     i = (i + 1) & (cap - 1))
				;
			n[i] = c->slots[j];
		}
		free(c->slots);
		c->slots = n;
		c->mask = cap - 1;
	}
	for (i = (size_t)hash & c->mask; c->slots[i].key; i = (i + 1) & c->mask)
		;
	s = &c->slots[i];
	s->hash = hash;
	s->key = key;
	s->len = (uint32_t)len;
	s->id = id;
	c->count++;
	return 0;
}

static inline void kiln_linecache_release(struct kiln_linecache *c)
{
	free(c->slots);
	c->slots = NULL;
	c->mask = 0;
	c->count = 0;
}

#endif
