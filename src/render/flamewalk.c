/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one flame graph layout (render stage): which boxes kiln flame's SVG
 * and kiln serve's page draw, and where.  See kiln_flame_walk() in
 * flame.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "profile/tree.h"
#include "render/flame.h"
#include "util/buf.h"

struct item {
	uint32_t node, depth;
	int64_t x;
};

/* Walk state: the stack of nodes still to visit, the children of the
 * node at hand in drawing order. */
struct walk {
	struct kiln_flame_walk *w;
	struct item *stack;
	size_t n, cap;
	uint64_t *kids;	/* place in name order << 32 | node id */
	size_t kcap;
};

static int cmp_heavy(const void *a, const void *b, void *ctx)
{
	const struct kiln_tree *t = ctx;
	const uint64_t *x = a, *y = b;
	int64_t tx = t->nodes[(uint32_t)*x].total, ty = t->nodes[(uint32_t)*y].total;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	return *x < *y ? -1 : *x > *y;	/* ties: name order (high bits) */
}

/* Node nd's children in drawing order into k->kids; their count, or -1
 * when out of memory. */
static long kids_order(struct walk *k, const struct kiln_tree_node *nd)
{
	const struct kiln_tree *t = k->w->t;
	size_t n = 0;
	uint32_t ch;

	for (ch = nd->child; ch; ch = t->nodes[ch].next) {
		if (KILN_GROW(k->kids, k->kcap, n + 1, 64))
			return -1;
		k->kids[n] = (uint64_t)n << 32 | ch;
		n++;
	}
	if (k->w->heavy && n > 1)
		qsort_r(k->kids, n, sizeof(*k->kids), cmp_heavy, (void *)t);
	return (long)n;
}

static bool wide(const struct kiln_flame_walk *w, int64_t v)
{
	return (double)v * w->scale >= w->min_width;
}

static bool in_window(const struct kiln_flame_walk *w, int64_t x, int64_t v)
{
	return w->hi <= w->lo || (x < w->hi && x + v > w->lo);
}

/* A run of merged siblings ends: visited if wide enough and in the
 * window, else counted out. */
static int end_run(struct walk *k, struct kiln_flame_box *run,
		   int (*visit)(void *, const struct kiln_flame_box *), void *ctx)
{
	int err = 0;

	if (!run->nmerged)
		return 0;
	if (wide(k->w, run->v) && in_window(k->w, run->x, run->v))
		err = visit(ctx, run);
	else
		k->w->dropped += run->nmerged;
	run->nmerged = 0;
	return err;
}

/* Item it's box visited, its runs too, its drawn children pushed so
 * that they come out in drawing order. */
static int step(struct walk *k, struct item it,
		int (*visit)(void *, const struct kiln_flame_box *), void *ctx)
{
	struct kiln_flame_walk *w = k->w;
	const struct kiln_tree_node *nodes = w->t->nodes, *nd = &nodes[it.node];
	struct kiln_flame_box b = { it.node, 0, it.depth, it.x, nd->total, nd->base };
	struct kiln_flame_box run = { 0 };
	size_t first = k->n, lo, hi;
	int64_t x = it.x;
	long nk, i;
	int err = visit(ctx, &b);

	if (err)
		return err;
	nk = kids_order(k, nd);
	if (nk < 0)
		return -ENOMEM;
	for (i = 0; i < nk && !err; i++) {
		uint32_t c = (uint32_t)k->kids[i];
		const struct kiln_tree_node *cn = &nodes[c];

		if (!wide(w, cn->total) && w->merge) {
			if (!run.nmerged)
				run = (struct kiln_flame_box){ c, 0, it.depth + 1, x, 0, 0 };
			run.nmerged++;
			run.v += cn->total;
			run.base += cn->base;
		} else {
			err = end_run(k, &run, visit, ctx);
			if (!wide(w, cn->total) || !in_window(w, x, cn->total)) {
				w->dropped++;
			} else if (KILN_GROW(k->stack, k->cap, k->n + 1, 256)) {
				err = -ENOMEM;
			} else {
				k->stack[k->n++] = (struct item){ c, it.depth + 1, x };
			}
		}
		x += cn->total;
	}
	if (!err)
		err = end_run(k, &run, visit, ctx);
	for (lo = first, hi = k->n; lo + 1 < hi; lo++, hi--) {
		struct item tmp = k->stack[lo];

		k->stack[lo] = k->stack[hi - 1];
		k->stack[hi - 1] = tmp;
	}
	return err;
}

int kiln_flame_walk(struct kiln_flame_walk *w,
		    int (*visit)(void *ctx, const struct kiln_flame_box *b),
		    void *ctx)
{
	struct walk k = { w, NULL, 0, 0, NULL, 0 };
	int err = 0;

	w->dropped = 0;
	if (KILN_GROW(k.stack, k.cap, 1, 256))
		return -ENOMEM;
	k.stack[k.n++] = (struct item){ w->from, 0, 0 };
	while (k.n && !err)
		err = step(&k, k.stack[--k.n], visit, ctx);
	free(k.stack);
	free(k.kids);
	return err;
}
