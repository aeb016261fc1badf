/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Detection, inside format/ (format stage): what format/detect.c weighs a
 * file by, for the read-any-file entry point (read.c).  The rest of kiln
 * goes by format.h.
 */
#ifndef KILN_FORMAT_DETECT_H
#define KILN_FORMAT_DETECT_H

#include <stdbool.h>
#include <stddef.h>

#include "format/format.h"

/* Rows the table may have (a candidates array's size). */
#define KILN_FMT_MAX_ROWS 32

/* Detection scores of KILN_FMT_CONFIDENT and above: told by a magic
 * number or a header of the format's own. */
#define KILN_FMT_CONFIDENT 50

/* What detection looks at, worked out once per file. */
struct kiln_fmt_sniff {
	const char *data;
	size_t len;
	bool text;		/* no control bytes in the first 4 KiB */
	bool json;		/* text whose first non-blank byte is { or [ */
	const char *line;	/* the first line not blank nor a comment */
	size_t ll;
	enum kiln_fmt legacy;	/* kiln_legacy_detect() */
};

/* A format data might be, its reader, and how likely. */
struct kiln_fmt_cand {
	const struct kiln_fmt_info *f;
	kiln_fmt_reader read;
	int score;
};

/* Looks at len bytes of data (decompressed, UTF-8), which stay the
 * caller's. */
void kiln_fmt_sniff_init(struct kiln_fmt_sniff *s, const char *data,
			 size_t len);
/* Fills c (KILN_FMT_MAX_ROWS of room) with the formats s might be,
 * likeliest first, ties in the table's order; returns their number. */
size_t kiln_fmt_candidates(const struct kiln_fmt_sniff *s,
			   struct kiln_fmt_cand *c);

#endif
