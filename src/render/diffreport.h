/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report of `kiln diff` (render stage): a struct kiln_diff as a text
 * table, JSON or a Markdown comment for a pull request
 * (docs/kiln-diff.md describes each).
 */
#ifndef KILN_RENDER_DIFFREPORT_H
#define KILN_RENDER_DIFFREPORT_H

#include <stddef.h>

struct kiln_diff;
struct kiln_buf;

enum kiln_diffreport_format {
	KILN_DIFFREPORT_TEXT,
	KILN_DIFFREPORT_JSON,
	KILN_DIFFREPORT_MARKDOWN,
};

struct kiln_diffreport_opts {
	enum kiln_diffreport_format format;
	size_t rows;		/* text and Markdown: at most this many rows
				 * (regressions always shown); 0: all */
	const char *type;	/* the sample type compared, "cpu/nanoseconds" */
	const char *svg;	/* the differential flame graph's path, or NULL */
};

/* Appends the report of d to out.  0 or -ENOMEM. */
int kiln_diffreport(const struct kiln_diff *d,
		    const struct kiln_diffreport_opts *o, struct kiln_buf *out);

#endif
