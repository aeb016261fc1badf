/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flame graph rendering (render stage): one self-contained interactive
 * SVG per profile.
 */
#ifndef KILN_RENDER_FLAME_H
#define KILN_RENDER_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

struct kiln_prof;
struct kiln_buf;
struct kiln_tree;

struct kiln_flame_opts {
	/* NULL: "Flame Graph" ("Icicle Graph" reversed, "Differential
	 * Flame Graph" with a base) */
	const char *title;
	const char *subtitle;	/* NULL: the sample type and the total */
	bool reverse;		/* leaf-rooted stacks drawn top-down (icicle) */
	int width;		/* pixels; 0: 1200 */
	/* Differential graph: widths from p, colours from the change
	 * against base (red grew, blue shrank).  NULL for a plain graph. */
	struct kiln_prof *base;
	int base_type;
	/* Match base by function, not by path (kiln_tree_add_base_by_function()). */
	bool diff_by_function;
	/* How a box is compared with the base: 0 as its sample type is
	 * (kiln_type_diff_by_value(): heap types by value, the rest by
	 * share), 1 by value (base subtracted), -1 by share (normalized). */
	int diff_compare;
	/* Pixels: runs of sibling frames narrower than this are merged into
	 * one "[N small frames]" box, or left out when the run itself is
	 * narrower, so the SVG stays small for huge profiles.  0: 1.0. */
	double min_width;
};

/*
 * Appends the SVG of profile p, sample type index `type`, to out.
 * Same input, same bytes.  o may be NULL (defaults).  p is not const:
 * unsymbolized frames get their "[module]" names interned.
 * 0, -EINVAL (a sample type index out of range) or -ENOMEM.
 * The layout and the script are described in docs/kiln-flame.md.
 */
int kiln_flame_svg(struct kiln_prof *p, int type,
		   const struct kiln_flame_opts *o, struct kiln_buf *out);

/*
 * The one palette of kiln's flame graphs: the colour of a frame named
 * name (len bytes) of kind, as 0xRRGGBB -- warm red to yellow for the
 * program's own code, teal and green for shared libraries, blue and
 * violet for the kernel, grey for the rest; the name's hash varies the
 * shade, the same name always the same colour.  kiln flame's SVG draws
 * with it and kiln serve sends it with every node of its flame graphs,
 * icicles and sandwich (the page and the saved page draw what they get).
 */
uint32_t kiln_flame_rgb(const char *name, size_t len, enum kiln_kind kind);
/* The same for a frame of profile p: a profile with no mapping at all
 * (collapsed stacks) cannot tell code apart, its frames are the
 * program's. */
uint32_t kiln_flame_node_rgb(const struct kiln_prof *p, const char *name,
			     size_t len, enum kiln_kind kind);
/*
 * A differential graph's colour of a frame whose share (percent of its
 * profile's total) changed by delta points against the base: grey-white
 * unchanged, red grew, blue shrank, full at scale points (kiln flame and
 * kiln serve: the largest change among the frames drawn, at least 1).
 */
uint32_t kiln_flame_diff_rgb(double delta, double scale);

/*
 * The one layout of kiln's flame graphs (render/flamewalk.c): kiln
 * flame's SVG and kiln serve's page (/api/flame, and so the saved page)
 * place their boxes with it.  A box per call tree node drawn, as wide as
 * its total, x the value left of it within the root drawn; children in
 * name order (or heaviest first), drawn when at least min_width pixels
 * wide and, with a window, when they overlap it.  With merge (the SVG,
 * which cannot ask again when zoomed), a run of narrower siblings is one
 * "[N small frames]" box where the run itself is wide enough; the page
 * leaves them out (it asks the server again at each zoom).
 */
struct kiln_flame_box {
	uint32_t node;		/* tree node; for a merged run, its first */
	uint32_t nmerged;	/* 0: a node; else the run's length */
	uint32_t depth;		/* below the root drawn (0) */
	int64_t x, v;		/* offset and width in value units */
	int64_t base;		/* raw base value (diff) */
};

struct kiln_flame_walk {
	const struct kiln_tree *t;
	uint32_t from;		/* the root drawn */
	double scale;		/* pixels per value unit */
	double min_width;	/* pixels */
	bool heavy;		/* siblings heaviest first, else by name */
	bool merge;		/* narrow sibling runs as one box */
	int64_t lo, hi;		/* window in the root's value; hi <= lo: all */
	size_t dropped;		/* out: boxes left out (narrow, outside) */
};

/*
 * Visits every box of w's layout, parents first: a node, the merged runs
 * among its children, then its children's subtrees in their order.
 * Iterative (deep recursion in a profile cannot overflow the C stack).
 * Stops at the first visit that returns non-zero.  0, that value, or
 * -ENOMEM.
 */
int kiln_flame_walk(struct kiln_flame_walk *w,
		    int (*visit)(void *ctx, const struct kiln_flame_box *b),
		    void *ctx);

#endif
