/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The live-block table (util stage): see livetab.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/livetab.h"

static void set_ptr(struct kiln_livetab *t, size_t i, uint64_t ptr)
{
	memcpy(t->slots + i * t->esize, &ptr, sizeof(ptr));
}

int kiln_livetab_grow(struct kiln_livetab *t)
{
	size_t cap = t->slots ? t->mask + 1 : 0, ncap, i, k;
	unsigned char *n;

	if ((t->n + 1) * 2 <= cap)
		return 0;
	ncap = cap ? cap * 2 : t->first;
	n = calloc(ncap, t->esize);
	if (!n)
		return -ENOMEM;
	/* Written before the probes read it: calloc's fresh pages would
	 * otherwise be the zero page, then copied on the first insert into
	 * each (a TLB flush of every CPU running the program each time). */
	memset(n, 0, ncap * t->esize);
	for (i = 0; i < cap; i++) {
		uint64_t ptr = kiln_livetab_ptr_at(t, i);

		if (!ptr)
			continue;
		for (k = kiln_livetab_home(ptr, ncap - 1);
		     *(const uint64_t *)(const void *)(n + k * t->esize);
		     k = (k + 1) & (ncap - 1))
			;
		memcpy(n + k * t->esize, kiln_livetab_at(t, i), t->esize);
	}
	free(t->slots);
	t->slots = n;
	t->mask = ncap - 1;
	if (!t->inv) {
		uint64_t d = t->esize >> __builtin_ctzll(t->esize), x = d;
		int k;

		/* Newton's steps, each doubling the bits that are right. */
		for (k = 0; k < 6; k++)
			x *= 2 - d * x;
		t->shift = (unsigned)__builtin_ctzll(t->esize);
		t->inv = x;
	}
	return 0;
}

void *kiln_livetab_put(struct kiln_livetab *t, uint64_t ptr)
{
	size_t i;

	for (i = kiln_livetab_home(ptr, t->mask); kiln_livetab_ptr_at(t, i);
	     i = (i + 1) & t->mask)
		;
	set_ptr(t, i, ptr);
	t->n++;
	return kiln_livetab_at(t, i);
}

void kiln_livetab_remove(struct kiln_livetab *t, void *e)
{
	size_t i = (size_t)(((uint64_t)((unsigned char *)e - t->slots) >> t->shift) *
			    t->inv);

	kiln_livetab_remove_at(t, i, t->esize);
}

void kiln_livetab_release(struct kiln_livetab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->n = 0;
}
