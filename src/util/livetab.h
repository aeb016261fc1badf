/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The live-block table (util stage): live heap blocks by address, open
 * addressing with linear probing, kept at most half full.  The caller's
 * entry type starts with `uint64_t ptr` (0: an empty slot; 0 is never a
 * block's address) and holds whatever else it follows per block.  Used by
 * the trace's encoder (format/heapenc.c, in the profiled process's writer
 * thread) and by the trace analysis (profile/hprof.c).
 *
 * Not for signal handlers or malloc hooks: it grows with malloc.  The
 * hooks' sampled-block set (heap/ring.c) is a table of its own, of memory
 * reserved before the hooks are armed.
 */
#ifndef KILN_UTIL_LIVETAB_H
#define KILN_UTIL_LIVETAB_H

#include <stddef.h>
#include <stdint.h>

struct kiln_livetab {
	unsigned char *slots;	/* mask + 1 entries of esize bytes, or NULL */
	size_t esize;		/* the entry's size */
	size_t first;		/* slots at the first allocation (power of 2) */
	size_t mask;		/* slots - 1 */
	size_t n;		/* blocks in the table */
	/* An entry's offset to its slot without a division: the offset >>
	 * shift times inv, the inverse of the odd esize >> shift modulo
	 * 2^64 (set with the first slots). */
	unsigned shift;
	uint64_t inv;
};

/* An empty table of entries of `type`, first_slots slots once used. */
#define KILN_LIVETAB_INIT(type, first_slots) \
	{ NULL, sizeof(type), (first_slots), 0, 0, 0, 0 }

/* A block address's hash: its home slot in a table of any size is the
 * hash & mask (kiln_livetab_home()). */
static inline uint64_t kiln_livetab_hash(uint64_t ptr)
{
	ptr ^= ptr >> 33;
	ptr *= 0xff51afd7ed558ccdull;
	ptr ^= ptr >> 33;
	return ptr;
}

/* The slot a block address starts probing at. */
static inline size_t kiln_livetab_home(uint64_t ptr, size_t mask)
{
	return (size_t)kiln_livetab_hash(ptr) & mask;
}

/* Slot i's entry (i <= mask); its ptr is 0 when empty. */
static inline void *kiln_livetab_at(const struct kiln_livetab *t, size_t i)
{
	return t->slots + i * t->esize;
}

static inline uint64_t kiln_livetab_ptr_at(const struct kiln_livetab *t, size_t i)
{
	return *(const uint64_t *)(const void *)(t->slots + i * t->esize);
}

/* The entry of block ptr (not 0), NULL if it is not live. */
static inline void *kiln_livetab_find(const struct kiln_livetab *t, uint64_t ptr)
{
	size_t i;

	if (!t->slots)
		return NULL;
	for (i = kiln_livetab_home(ptr, t->mask); kiln_livetab_ptr_at(t, i);
	     i = (i + 1) & t->mask)
		if (kiln_livetab_ptr_at(t, i) == ptr)
			return kiln_livetab_at(t, i);
	return NULL;
}

/* kiln_livetab_reserve()'s growth, out of line.  0 or -ENOMEM. */
int kiln_livetab_grow(struct kiln_livetab *t);

/*
 * Room for one more block: the table doubles (or is first allocated)
 * when it would be more than half full.  0 or -ENOMEM.  Inline: the
 * trace's encoder and the analysis ask at every allocation.
 */
static inline int kiln_livetab_reserve(struct kiln_livetab *t)
{
	/* Without slots n and mask are 0: it grows. */
	if ((t->n + 1) * 2 <= t->mask + 1)
		return 0;
	return kiln_livetab_grow(t);
}

/* Asks the cache for the slot block ptr starts probing at: a batch of
 * events (profile/hprof.c) looks ahead so that the probes find it there.
 * always_inline: gcc 12 takes a function that only prefetches for a pure
 * one and drops its calls before inlining it. */
static inline __attribute__((always_inline)) void
kiln_livetab_prefetch_hash(const struct kiln_livetab *t, uint64_t hash)
{
	const unsigned char *p;

	if (!t->slots)
		return;
	p = t->slots + ((size_t)hash & t->mask) * t->esize;
	__builtin_prefetch(p);
	/* The probe, and a removal's shift, go on into the next slots.  Past
	 * the last slot this asks for memory that is not the table's: a
	 * prefetch never faults, and the address is made as an integer. */
	__builtin_prefetch((const void *)((uintptr_t)p + 64));
}

static inline __attribute__((always_inline)) void
kiln_livetab_prefetch(const struct kiln_livetab *t, uint64_t ptr)
{
	kiln_livetab_prefetch_hash(t, kiln_livetab_hash(ptr));
}

/*
 * One probe for block ptr of that hash, after kiln_livetab_reserve()
 * (a table with slots): the slot of its entry (*found true), or the
 * empty slot where it goes (*found false, for kiln_livetab_put_at()
 * before any other change to the table).  esize is t->esize, a constant
 * where the caller knows it.
 */
static inline __attribute__((always_inline)) size_t
kiln_livetab_probe_hash(const struct kiln_livetab *t, uint64_t ptr, uint64_t hash,
			size_t esize, int *found)
{
	size_t i;
	uint64_t p;

	for (i = (size_t)hash & t->mask;
	     (p = *(const uint64_t *)(const void *)(t->slots + i * esize));
	     i = (i + 1) & t->mask) {
		if (p == ptr) {
			*found = 1;
			return i;
		}
	}
	*found = 0;
	return i;
}

/* The same, the hash (kiln_livetab_hash(ptr)) computed here. */
static inline size_t kiln_livetab_probe(const struct kiln_livetab *t, uint64_t ptr,
					int *found)
{
	return kiln_livetab_probe_hash(t, ptr, kiln_livetab_hash(ptr), t->esize,
				       found);
}

/* Block ptr's new entry at slot i from kiln_livetab_probe(): its ptr is
 * set, the rest is the caller's to fill. */
static inline void *kiln_livetab_put_at(struct kiln_livetab *t, size_t i,
					uint64_t ptr)
{
	void *e = kiln_livetab_at(t, i);

	*(uint64_t *)e = ptr;
	t->n++;
	return e;
}

/*
 * The entry for block ptr, which must not be in the table, after
 * kiln_livetab_reserve(): its ptr is set, the rest is the caller's to
 * fill (left as found: zeroes or a removed entry's bytes).
 */
void *kiln_livetab_put(struct kiln_livetab *t, uint64_t ptr);

/* Removes the entry e; the entries after it in its probe run move back. */
void kiln_livetab_remove(struct kiln_livetab *t, void *e);

/*
 * The same for the entry at slot i, inline, esize being t->esize: where
 * it is a constant the compiler makes the moves a few instructions
 * (the heap analysis removes a block at every free).
 */
static inline __attribute__((always_inline)) void
kiln_livetab_remove_at(struct kiln_livetab *t, size_t i, size_t esize)
{
	size_t j = i;

	*(uint64_t *)(void *)(t->slots + i * esize) = 0;
	t->n--;
	for (;;) {
		uint64_t ptr;
		size_t home;

		j = (j + 1) & t->mask;
		ptr = *(const uint64_t *)(const void *)(t->slots + j * esize);
		if (!ptr)
			return;
		home = kiln_livetab_home(ptr, t->mask);
		/* j moves to the hole unless its home lies in (i, j]. */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			__builtin_memcpy(t->slots + i * esize, t->slots + j * esize, esize);
			*(uint64_t *)(void *)(t->slots + j * esize) = 0;
			i = j;
		}
	}
}

/* Frees the slots; the table is empty and reusable. */
void kiln_livetab_release(struct kiln_livetab *t);

#endif
