/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` sample runs (format stage): a sample's frame lines, the
 * tab-indented lines after its header, found as a whole 64 bytes at a
 * time, passed over unread by the reader's first pass
 * (kiln_perfscript_skip_frames()), and read at once by its second when
 * the same run was read before (kiln_perfscript_run_find()).  The reader
 * that walks the lines is perfscript.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "format/linecache.h"
#include "format/perfscriptint.h"
#include "util/buf.h"

/* The positions of c in the 64 bytes at p (bit i: p[i] == c). */
#ifdef __SSE2__
static inline uint64_t mask64(const char *p, __m128i c)
{
	uint64_t m = 0;
	int i;

	for (i = 0; i < 4; i++) {
		__m128i x = _mm_loadu_si128((const __m128i *)(p + 16 * i));

		m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, c))
		     << (16 * i);
	}
	return m;
}
#endif

/*
 * The bulk skip of a sample's frame lines: from s, the start of a line
 * inside a sample that begins with a tab, the start of the first line
 * that does not both begin with a tab and end, before its newline, with
 * something other than white space; *n: the lines passed.  The first
 * pass passes over such lines unread, the second reads them as one run
 * (run_find()).  The newlines are found 64 bytes at a time, without a
 * call per line (a mask of the bytes before and after each newline
 * costs more than looking at them).
 */
const char *kiln_perfscript_skip_frames(const char *s, const char *end,
				       size_t *n)
{
	const char *ls = s, *nl;
	size_t k = 0;

#ifdef __SSE2__
	const __m128i cnl = _mm_set1_epi8('\n');
	const char *p = s;

	/* p[-1] is in the data (s follows a header line), p[64] too. */
	for (; end - p > 64; p += 64) {
		uint64_t m = mask64(p, cnl);

		for (; m; m &= m - 1) {
			const char *x = p + __builtin_ctzll(m);

			if (is_ws(x[-1]) || x[-1] == '\r')
				goto out;	/* the line ends in white space */
			k++;
			ls = x + 1;
			if (*ls != '\t')
				goto out;
		}
	}
#endif
	while (ls < end && *ls == '\t' &&
	       (nl = memchr(ls, '\n', (size_t)(end - ls))) &&
	       !is_ws(nl[-1]) && nl[-1] != '\r') {
		k++;
		ls = nl + 1;
	}
#ifdef __SSE2__
out:
#endif
	*n = k;
	return ls;
}

/*
 * The second pass's cache of runs of frame lines: a sample's frame lines
 * (those kiln_perfscript_skip_frames() passes over), seen before as a whole, give the
 * stack they gave then, for one hash and one memcmp of their text instead
 * of a lookup per line.  Only runs whose every line was a frame that
 * parsed are kept, so a hit does what reading the lines would have done:
 * each frame text's location is the one its first occurrence made.
 */

/* Runs shorter than this are read line by line; longer ones are not
 * kept (a hash of a megabyte of frames would seldom hit again). */
#define RUN_MIN 2
#define RUN_MAX ((size_t)1 << 20)

/*
 * At s, the first line after a header (inside a sample, starting with a
 * tab): where the run of frame lines at s ends, its stack pushed, if the
 * cache has it (*n: its lines, r->good counted); else NULL, with rt set
 * to note the run when the lines have been read.
 */
const char *kiln_perfscript_run_find(struct reader *r, const char *s,
				     size_t *n, struct run_try *rt)
{
	const char *t = kiln_perfscript_skip_frames(s, r->end, n);
	size_t len = (size_t)(t - s);
	uint64_t h;
	uint32_t id;
	const struct run *ru;

	if (*n < RUN_MIN || len > RUN_MAX)
		return NULL;
	h = kiln_linecache_hash(s, len);
	id = kiln_linecache_find(&r->runs, s, len, h);
	if (!id) {
		rt->start = s;
		rt->end = t;
		rt->n = *n;
		rt->hash = h;
		return NULL;
	}
	ru = &r->run[id - 1];
	if (KILN_GROW(r->stack, r->stack_alloc, ru->depth, 128)) {
		r->p->err = -ENOMEM;
		return NULL;
	}
	memcpy(r->stack, r->run_locs + ru->first, ru->depth * sizeof(*r->stack));
	r->depth = ru->depth;
	r->good += *n;
	return t;
}

/* The lines of run rt read: kept if each one was a frame.  0 or -ENOMEM. */
int kiln_perfscript_run_end(struct reader *r, struct run_try *rt)
{
	size_t len = (size_t)(rt->end - rt->start);
	struct run *ru;

	rt->end = NULL;
	if (r->depth != rt->n)
		return 0;	/* a srcline, a branch, a bad line: not kept */
	if (KILN_GROW(r->run, r->run_alloc, r->nrun + 1, 1024) ||
	    KILN_GROW(r->run_locs, r->run_locs_alloc, r->nrun_locs + r->depth,
		       16384))
		return -ENOMEM;
	ru = &r->run[r->nrun];
	ru->first = r->nrun_locs;
	ru->depth = (uint32_t)r->depth;
	memcpy(r->run_locs + r->nrun_locs, r->stack, r->depth * sizeof(*r->stack));
	if (kiln_linecache_add(&r->runs, rt->start, len, rt->hash,
			       (uint32_t)r->nrun + 1))
		return -ENOMEM;
	r->nrun++;
	r->nrun_locs += r->depth;
	return 0;
}

const char *kiln_perfscript_runs(struct reader *r, const char *s, bool scan,
				 bool in_sample, bool fresh,
				 struct run_try *rt, size_t *n, int *err)
{
	const char *t;

	*n = 0;
	*err = 0;
	if (rt->end == s) {
		*err = kiln_perfscript_run_end(r, rt);
		if (*err)
			return s;
	}
	if (s >= r->end || *s != '\t')
		return s;
	if (fresh) {
		/* The second pass, after a header: the run's stack at once
		 * if it was read before. */
		t = kiln_perfscript_run_find(r, s, n, rt);
		if (t)
			return t;
		*n = 0;
		return s;
	}
	if (scan && in_sample)
		return kiln_perfscript_skip_frames(s, r->end, n);
	return s;
}
