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
	const char *title;	/* NULL: "Flame Graph" */
	const char *subtitle;	/* NULL: none */
	bool reverse;		/* leaf-rooted stacks drawn top-down (icicle) */
	int width;		/* pixels; 0: 1200 */
	/* Differential graph: widths from p, colours from the change
	 * against base (red grew, blue shrank).  NULL for a plain graph. */
	struct kiln_prof *base;
	int base_type;
};

/*
 * Appends the SVG of profile p, sample type index `type`, to out.
 * Same input, same bytes.  0 or -ENOMEM.
 */
int kiln_flame_svg(struct kiln_prof *p, int type,
		   const struct kiln_flame_opts *o, struct kiln_buf *out);

#endif
