/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flame graph's state (render stage), shared by flamelayout.c (the
 * boxes: walk (flamewalk.c's layout), measure, rows) and flame.c (the SVG drawn from them).
 */
#ifndef KILN_RENDER_FLAMEINT_H
#define KILN_RENDER_FLAMEINT_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/tree.h"
#include "render/flame.h"
#include "util/buf.h"

struct kiln_prof;

#define FONT_SIZE	12
#define GLYPH_WIDTH	(FONT_SIZE * 0.59)	/* estimated, as FlameGraph does */
#define FRAME_H		16			/* row pitch; boxes are 1 px less */
#define XPAD		10
#define YPAD_TOP	64			/* title, subtitle, buttons */
#define YPAD_BOTTOM	36			/* details line, "Matched" */
#define DEFAULT_WIDTH	1200
#define SEARCH_COLOUR	"rgb(230,0,230)"

struct flame {
	struct kiln_prof *p;
	struct kiln_tree t;
	struct kiln_buf *out;
	const char *type, *unit;	/* of the sample type drawn */
	int width, height;
	double scale;			/* pixels per value unit */
	double min_width;
	uint32_t max_depth;		/* deepest box drawn */
	double diff_scale;		/* change (points) of full colour */
	bool by_value;			/* the base compared by value, not share */
	int err;			/* sticky -ENOMEM */
};

static inline double pct(int64_t v, int64_t total)
{
	return total > 0 ? 100.0 * (double)v / (double)total : 0;
}

/* A box's change against the base, in points (kiln_tree_change(): of
 * share, or by value for heap types). */
static inline double box_change(const struct flame *f, const struct kiln_flame_box *b)
{
	return kiln_tree_change(&f->t, b->v, b->base, f->by_value);
}

/* flamelayout.c */
int kflame_walk(struct flame *f, int (*visit)(void *f, const struct kiln_flame_box *b));
int kflame_measure(void *f, const struct kiln_flame_box *b);
double kflame_box_y(const struct flame *f, uint32_t depth);

#endif
