/*
 * Flame graph rendering (render stage): one self-contained interactive
 * SVG per profile.
 */
#ifndef KILN_RENDER_FLAME_H
#define KILN_RENDER_FLAME_H

#include <stdbool.h>

struct kiln_prof;
struct kiln_buf;

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

#endif
