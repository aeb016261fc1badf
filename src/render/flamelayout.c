/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flame graph layout (render stage): the boxes to draw -- one per call
 * tree node as wide as its total, runs of narrow siblings merged or
 * dropped -- walked parents first, the rows in use measured, each row's
 * height.  flame.c draws them as SVG; flameint.h is what the two share.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "profile/tree.h"
#include "render/flameint.h"

/*
 * Visits every box to draw, parents before children: a node, then the
 * merged runs among its children, then its children's subtrees in name
 * order.  Iterative, so deep recursion in the profile cannot overflow
 * the C stack.
 */
int kflame_walk(struct flame *f, void (*visit)(struct flame *, const struct box *))
{
	struct item { uint32_t node; int64_t o; } *stack, *ns;
	size_t n = 0, cap = 256, first, i;
	const struct kiln_tree_node *nodes = f->t.nodes;

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[n++] = (struct item){ 0, 0 };
	while (n && !f->err) {
		struct item it = stack[--n];
		const struct kiln_tree_node *nd = &nodes[it.node];
		struct box b = { it.node, 0, nd->depth, it.o, nd->total,
				 nd->base };
		struct box run = { 0 };
		int64_t o = it.o;
		uint32_t c;

		visit(f, &b);
		first = n;
		for (c = nd->child;; c = nodes[c].next) {
			bool small = c && (double)nodes[c].total * f->scale <
					  f->min_width;

			if (run.nmerged && !small) {
				if ((double)run.v * f->scale >= f->min_width)
					visit(f, &run);
				run.nmerged = 0;
			}
			if (!c)
				break;
			if (small) {
				if (!run.nmerged)
					run = (struct box){ c, 0, nd->depth + 1,
							    o, 0, 0 };
				run.nmerged++;
				run.v += nodes[c].total;
				run.base += nodes[c].base;
			} else {
				if (n == cap) {
					cap *= 2;
					ns = realloc(stack, cap * sizeof(*stack));
					if (!ns) {
						free(stack);
						return -ENOMEM;
					}
					stack = ns;
				}
				stack[n++] = (struct item){ c, o };
			}
			o += nodes[c].total;
		}
		/* Pop the children in name order. */
		for (i = 0; i < (n - first) / 2; i++) {
			struct item tmp = stack[first + i];

			stack[first + i] = stack[n - 1 - i];
			stack[n - 1 - i] = tmp;
		}
	}
	free(stack);
	return f->err;
}

/* First pass: the rows in use, and the largest change of share. */
void kflame_measure(struct flame *f, const struct box *b)
{
	if (b->depth > f->max_depth)
		f->max_depth = b->depth;
	if (f->t.has_base) {
		double d = fabs(share_delta(f, b));

		if (d > f->diff_scale)
			f->diff_scale = d;
	}
}

double kflame_box_y(const struct flame *f, uint32_t depth)
{
	if (f->t.reverse)
		return YPAD_TOP + (double)depth * FRAME_H;
	return f->height - YPAD_BOTTOM - (double)(depth + 1) * FRAME_H;
}
