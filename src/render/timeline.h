/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory over time (render stage): a self-contained SVG chart of the heap
 * size with the largest allocation sites stacked under it, as
 * massif-visualizer and heaptrack_gui draw it.  No script: hovering a
 * band shows its name and size through SVG <title> tooltips.
 */
#ifndef KILN_RENDER_TIMELINE_H
#define KILN_RENDER_TIMELINE_H

#include <stddef.h>

struct kiln_buf;

/* One stacked band: a site's live bytes at the end of each interval. */
struct kiln_timeline_band {
	const char *label;	/* e.g. "make_node <- build <- main" */
	const double *values;	/* n values */
	double peak;		/* its bytes at the heap's peak (tooltip) */
};

struct kiln_timeline {
	const char *title;	/* NULL: "Heap memory over time" */
	const char *subtitle;	/* e.g. the command line; NULL: none */
	size_t n;		/* intervals */
	double interval_s;	/* length of one interval, seconds */
	const double *total;	/* heap size at the end of each interval */
	const double *max;	/* largest heap size within each, or NULL */
	const struct kiln_timeline_band *bands;	/* drawn bottom up */
	size_t nbands;
	double peak, peak_s;	/* the peak, marked; peak 0: no marker */
	int width, height;	/* pixels; 0: 1200 x 600 */
};

/*
 * Appends the SVG to out.  The legend gives each band's largest size.
 * The part of total that no band covers is drawn
 * as one grey "other" band on top; max, when given, as a dashed line.
 * Same input, same bytes.  0, -EINVAL (n is 0 or bands lack values) or
 * -ENOMEM.  The layout is described in docs/kiln-heap.md.
 */
int kiln_timeline_svg(const struct kiln_timeline *tl, struct kiln_buf *out);

/* "512 B", "1.50 KiB", "12.3 MiB", "2.00 GiB" into buf. */
void kiln_bytes_str(double v, char *buf, size_t n);

#endif
