/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flame graph layout (render stage), the SVG's side: the boxes of the
 * one layout (flamewalk.c) walked, the rows in use measured, each row's
 * height.  flame.c draws them as SVG; flameint.h is what the two share.
 */
#include <math.h>

#include "profile/tree.h"
#include "render/flameint.h"

/* The SVG's walk of the one layout: the whole tree, narrow sibling runs
 * merged (it cannot ask again when zoomed). */
int kflame_walk(struct flame *f, int (*visit)(void *f, const struct kiln_flame_box *b))
{
	struct kiln_flame_walk w = {
		.t = &f->t, .from = 0, .scale = f->scale,
		.min_width = f->min_width, .merge = true,
	};
	int err = kiln_flame_walk(&w, visit, f);

	return err ? err : f->err;
}

/* First pass: the rows in use, and the largest change of share. */
int kflame_measure(void *ctx, const struct kiln_flame_box *b)
{
	struct flame *f = ctx;

	if (b->depth > f->max_depth)
		f->max_depth = b->depth;
	if (f->t.has_base) {
		double d = fabs(box_change(f, b));

		if (d > f->diff_scale)
			f->diff_scale = d;
	}
	return 0;
}

double kflame_box_y(const struct flame *f, uint32_t depth)
{
	if (f->t.reverse)
		return YPAD_TOP + (double)depth * FRAME_H;
	return f->height - YPAD_BOTTOM - (double)(depth + 1) * FRAME_H;
}
