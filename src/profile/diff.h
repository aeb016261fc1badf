/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comparison of two sets of profiles with confidence intervals (profile
 * stage): the statistics behind `kiln diff` (docs/kiln-diff.md).
 *
 * Each function's share of its profile's total, flat (as the leaf) and
 * cumulative (anywhere in the stack, once per sample), is averaged over
 * the profiles of a side; the change is NEW's share minus BASE's, in
 * percentage points.  Its uncertainty comes from a bootstrap: each
 * replicate redraws every profile's samples (Poisson weights, so a stack
 * seen n times is seen Poisson(n) times) and, when a side has two or more
 * profiles, the profiles themselves (with replacement): the run-to-run
 * spread of repeated benchmarks is then part of the interval.  The
 * intervals are simultaneous over every tested function and both columns
 * (a max-|t| bootstrap: the quantile of the largest studentized deviation
 * of a replicate), so the chance that any tested function is called
 * changed while none is stays below 1 - confidence.
 */
#ifndef KILN_PROFILE_DIFF_H
#define KILN_PROFILE_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_prof;

struct kiln_diff_opts {
	double confidence;	/* of the simultaneous intervals; 0: 0.95 */
	unsigned resamples;	/* bootstrap replicates; 0: 1000 */
	uint64_t seed;		/* same inputs and seed, same numbers */
	double fail_on;		/* points; < 0: no regression verdict */
	double min_samples;	/* a function is tested with at least this
				 * many samples on one side; 0: 10 */
};

#define KILN_DIFF_OPTS_INIT { 0.95, 1000, 1, -1.0, 10.0 }

enum kiln_diff_verdict {
	KILN_DIFF_UNTESTED,	/* too few samples on both sides */
	KILN_DIFF_SAME,		/* the interval holds 0 */
	KILN_DIFF_GREW,		/* the interval is above 0 */
	KILN_DIFF_SHRANK,	/* the interval is below 0 */
};

/* One column (flat or cum) of one function; shares in percent. */
struct kiln_diff_stat {
	double base, new;	/* mean share on each side */
	double delta;		/* new - base, points */
	double lo, hi;		/* simultaneous interval of delta */
	double se;		/* bootstrap standard error of delta */
	double base_samples, new_samples;	/* samples behind the shares */
	enum kiln_diff_verdict verdict;
	/* With fail_on >= 0: grew for sure, and by fail_on or more for all
	 * the data can tell (hi >= fail_on). */
	bool regression;
};

struct kiln_diff_row {
	const char *name;	/* owned by the struct kiln_diff */
	struct kiln_diff_stat flat, cum;
};

struct kiln_diff {
	/* Sorted: regressions first, then by the larger |delta| of the two
	 * columns, then by name. */
	struct kiln_diff_row *rows;
	size_t n;
	size_t nbase, nnew;		/* profiles on each side */
	double base_samples, new_samples;	/* samples on each side */
	bool by_profiles;		/* profiles resampled too (a side had 2+) */
	size_t ntested;			/* columns in the family */
	double crit;			/* interval = delta +- crit * se */
	size_t nregressions;		/* rows with a regression */
	struct kiln_diff_opts opts;	/* as used (defaults filled in) */
	struct kiln_prof *names;	/* owns the rows' names */
};

#define KILN_DIFF_INIT { 0 }

/*
 * Compares profiles base[0..nbase) with new[0..nnew), sample type
 * base_types[i] of base[i] and new_types[i] of new[i] (the index each
 * profile has for the one type asked).  The number of samples behind a
 * value is read from the profile's count type (samples/count, or any
 * .../count), else value / period, else one per stack (docs/kiln-diff.md).
 * o may be NULL (KILN_DIFF_OPTS_INIT).  The profiles are not const:
 * unsymbolized frames get their "[module]" names interned.
 * 0, -EINVAL (no side, a bad option, a type index out of range) or
 * -ENOMEM.  d is filled on success; kiln_diff_release() frees it.
 */
int kiln_diff_build(struct kiln_diff *d, struct kiln_prof **base,
		    const int *base_types, size_t nbase, struct kiln_prof **new,
		    const int *new_types, size_t nnew,
		    const struct kiln_diff_opts *o);
void kiln_diff_release(struct kiln_diff *d);

#endif
