/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unwinder's chain cache (unwind stage): a thread's recent call
 * chains, each known by where its walk started and the stack words the
 * walk read (cfi-walk.c notes them), found again without walking.  For
 * the heap hooks, which unwind at every allocation from a few call sites
 * reached again and again the same way: a hit compares a dozen words of
 * the stack instead of walking it, hashing it and probing the stack
 * table.  Async-signal-safe: no allocation, no locks; one thread's own
 * cache.  See cfi.h and docs/heap.md ("Stacks: the chain cache").
 */
#include "unwind/cfiint.h"

#include <stdint.h>

#define SETS (KILN_CFI_CHAINS / KILN_CFI_CHAIN_WAYS)

/* The first entry of the set of chains starting at (pc, sp). */
static inline struct kiln_cfi_chain *set_of(struct kiln_cfi_chains *ch,
					    uint64_t pc, uint64_t sp)
{
	uint64_t h = (pc ^ (sp * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull;

	return &ch->e[((h >> 32) % SETS) * KILN_CFI_CHAIN_WAYS];
}

/* The stack word at sp + off (volatile: the program's to change). */
static inline uint64_t word_at(uint64_t sp, uint32_t off)
{
	return *(const volatile uint64_t *)(uintptr_t)(sp + off);
}

/* Whether chain e starts at r and finds its words on the stack again. */
static inline bool same(const struct kiln_cfi_chain *e,
			const struct kiln_cfi_regs *r, uint64_t lo, uint64_t hi,
			uint64_t gen)
{
	uint32_t i, n = e->n;
	uint64_t d = 0;

	if (e->pc != r->pc || e->sp != r->sp || e->lo != lo || e->hi != hi ||
	    e->gen != gen || (e->fp_used && e->fp != r->fp))
		return false;
	/* The words lie in [sp, hi) of this thread's stack (the walk read
	 * them there), which is mapped while sp and hi are the same: all
	 * are read, two a step, their differences or'ed (no branch per
	 * word; a hit reads them all anyway). */
	for (i = 0; i + 1 < n; i += 2)
		d |= (word_at(r->sp, e->off[i]) ^ e->word[i]) |
		     (word_at(r->sp, e->off[i + 1]) ^ e->word[i + 1]);
	if (i < n)
		d |= word_at(r->sp, e->off[i]) ^ e->word[i];
	return !d;
}

uint32_t kiln_cfi_chain_find(struct kiln_cfi *c, struct kiln_cfi_chains *ch,
			     const struct kiln_cfi_regs *r, uint64_t stack_lo,
			     uint64_t stack_hi)
{
	const struct kiln_cfi_chain *e = set_of(ch, r->pc, r->sp);
	uint64_t gen = __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);

	for (int w = 0; w < KILN_CFI_CHAIN_WAYS; w++)
		if (same(&e[w], r, stack_lo, stack_hi, gen)) {
			ch->hits++;
			return e[w].value;
		}
	ch->misses++;
	return 0;
}

void kiln_cfi_chain_put(struct kiln_cfi_chains *ch, uint32_t value)
{
	const struct kiln_cfi_chain *l = &ch->last;
	struct kiln_cfi_chain *e;
	int w;

	/* pc 0: the walk may go otherwise next time (or none was noted);
	 * offsets are 32 bits. */
	if (!l->pc || !value || l->n > KILN_CFI_CHAIN_WORDS || l->hi < l->sp ||
	    l->hi - l->sp > UINT32_MAX)
		return;
	e = set_of(ch, l->pc, l->sp);
	/* An empty way, else each in turn. */
	for (w = 0; w < KILN_CFI_CHAIN_WAYS && e[w].pc; w++)
		;
	if (w == KILN_CFI_CHAIN_WAYS)
		w = (int)(ch->next++ % KILN_CFI_CHAIN_WAYS);
	e += w;
	e->pc = 0;
	e->sp = l->sp;
	e->fp = l->fp;
	e->fp_used = l->fp_used;
	e->lo = l->lo;
	e->hi = l->hi;
	e->gen = l->gen;
	e->value = value;
	e->n = l->n;
	for (uint32_t i = 0; i < l->n; i++) {
		e->off[i] = l->off[i];
		e->word[i] = l->word[i];
	}
	e->pc = l->pc;
	ch->last.pc = 0;
}
