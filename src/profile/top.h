/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flat and cumulative aggregation (profile stage): the data behind
 * `kiln top`, by function or by source line.
 */
#ifndef KILN_PROFILE_TOP_H
#define KILN_PROFILE_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_prof;

struct kiln_top_row {
	uint32_t name;		/* string id of the function name */
	uint32_t file;		/* string id, by-line rows only */
	int64_t line;		/* by-line rows only */
	uint32_t location;	/* location id, by-address rows only */
	uint64_t address;	/* its address, by-address rows only */
	int64_t flat;		/* value where this is the leaf frame */
	int64_t cum;		/* value of samples with it anywhere in the stack,
				 * each sample counted once */
};

struct kiln_top {
	struct kiln_top_row *rows;
	size_t n;
	int64_t total;		/* sum of the type's values over all samples */
};

#define KILN_TOP_INIT { NULL, 0, 0 }

/* What a row stands for (pprof's -functions, -lines, -addresses). */
enum kiln_top_by {
	KILN_TOP_FUNCTIONS,	/* a function name */
	KILN_TOP_LINES,		/* a function, file and line */
	KILN_TOP_ADDRESSES,	/* a location (its address) and function name:
				 * frames named by their module ("[libfoo.so]",
				 * docs/symbols.md) stay apart by address */
};

/*
 * Aggregates sample type `type` of p by `by`, rows sorted by flat value
 * (by cum with by_cum), ties by name (then file and line, or address).
 * 0 or -ENOMEM.
 */
int kiln_top_build(struct kiln_top *t, struct kiln_prof *p, int type,
		   enum kiln_top_by by, bool by_cum);
/* The same with w[i] as sample i's value (NULL: the values of type): a
 * selection's table without a copy of its samples (kiln_prof_weights()). */
int kiln_top_build_w(struct kiln_top *t, struct kiln_prof *p, int type,
		     enum kiln_top_by by, bool by_cum, const int64_t *w);
void kiln_top_release(struct kiln_top *t);

/*
 * Formats a value with its unit the way pprof does: "1.97s", "520ms",
 * "1.50MB", "1234".  unit is the sample type's unit string.
 */
void kiln_value_str(int64_t v, const char *unit, char *buf, size_t n);

#endif
