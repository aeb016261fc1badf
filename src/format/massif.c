/* SPDX-License-Identifier: Apache-2.0 */
/*
 * valgrind massif's output, `massif.out.PID` (format stage), read: the
 * heap tree of the peak snapshot as a heap profile, one sample type
 * space/bytes (the bytes live at the peak, by the stack that allocated
 * them).
 *
 * The file (valgrind's docs, "massif.out" and ms_print) is text:
 *
 *   desc: --massif-out-file=m.out        the options
 *   cmd: ./prog                          the command
 *   time_unit: i                         i, ms or B
 *   #-----------
 *   snapshot=31
 *   #-----------
 *   time=188231
 *   mem_heap_B=100000
 *   mem_heap_extra_B=20000
 *   mem_stacks_B=0
 *   heap_tree=peak                       or detailed, empty
 *   n1: 100000 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.
 *    n1: 100000 0x1091F5: alloc_small (heapbasic.c:29)
 *     n0: 100000 0x109476: main (heapbasic.c:113)
 *
 * A tree line is indented by its depth and says its children's number,
 * its bytes (its children's and its own) and its frame: "0xADDR: FN
 * (FILE:LINE)", "0xADDR: FN (in LIB)", "0xADDR: ???", or "in N places,
 * all below massif's threshold (1.00%)" for what massif folded away.
 * The root is the allocation functions themselves and is not a frame, as
 * kiln's own heap stacks end in the allocation function's caller.
 *
 * Massif keeps a peak tree only when it took a detailed snapshot at the
 * peak; without one (--peak-inaccuracy, or none detailed) the detailed
 * snapshot with the most heap bytes is read, and said in a warning.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/diag.h"
#include "util/buf.h"

/* Deeper trees are refused: valgrind's own limit is --depth=200. */
#define MAX_DEPTH 10000

struct line {
	const char *s;
	size_t len;
	size_t no;		/* 1-based */
};

/* The line at *at (CR and LF stripped); false at the end. */
static bool next_line(const char *data, size_t len, size_t *at, size_t *no,
		      struct line *l)
{
	const char *p, *nl;

	if (*at >= len)
		return false;
	p = data + *at;
	nl = memchr(p, '\n', len - *at);
	l->s = p;
	l->len = nl ? (size_t)(nl - p) : len - *at;
	*at += l->len + (nl != NULL);
	l->no = ++*no;
	while (l->len && l->s[l->len - 1] == '\r')
		l->len--;
	return true;
}

static bool starts(const struct line *l, const char *w)
{
	size_t n = strlen(w);

	return l->len >= n && !memcmp(l->s, w, n);
}

/* The decimal after "key=" of a line, or false. */
static bool key_num(const struct line *l, const char *key, uint64_t *v)
{
	size_t i = strlen(key), n = 0;
	uint64_t x = 0;

	if (!starts(l, key))
		return false;
	for (; i < l->len && l->s[i] >= '0' && l->s[i] <= '9'; i++, n++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(l->s[i] - '0');
	}
	*v = x;
	return n > 0 && i == l->len;
}

bool kiln_massif_detect(const char *data, size_t len)
{
	size_t n = len < 4096 ? len : 4096;

	return len >= 6 && !memcmp(data, "desc:", 5) &&
	       (memmem(data, n, "\ntime_unit:", 11) ||
		memmem(data, n, "\nsnapshot=", 10));
}

struct tree {
	struct kiln_prof *p;
	uint32_t *locs;		/* [1..depth]: frames, root to node */
	int64_t *bytes, *below;	/* each open node's bytes, its children's */
	size_t depth, cap, roots;
	uint32_t below_fn;
};

/* "FN (FILE:LINE)", "FN (in LIB)", "???": a location at addr. */
static uint32_t frame_loc(struct kiln_prof *p, uint64_t addr, const char *s,
			  size_t n)
{
	const char *fn = s, *file = NULL, *paren;
	size_t fl = n, filel = 0;
	int64_t line = 0;
	struct kiln_line ln;

	if (n && s[n - 1] == ')') {
		/* The last " (": a C++ name has parentheses of its own. */
		for (paren = s + n - 1; paren > s; paren--)
			if (paren[0] == '(' && paren[-1] == ' ')
				break;
		if (paren > s) {
			const char *in = paren + 1, *end = s + n - 1, *colon;

			fl = (size_t)(paren - 1 - s);
			if (end - in > 3 && !memcmp(in, "in ", 3)) {
				file = in + 3;
				filel = (size_t)(end - file);
			} else {
				colon = end;
				while (colon > in && colon[-1] != ':')
					colon--;
				file = in;
				filel = (size_t)(end - in);
				if (colon > in && colon < end) {
					const char *d;

					/* Digits past 10^8 are refused below: not
					 * multiplied into an overflow (libFuzzer
					 * found a line of 100 digits). */
					for (d = colon; d < end && *d >= '0' && *d <= '9'; d++)
						if (line < 100000000)
							line = line * 10 + (*d - '0');
					if (d == end && line < 100000000) {
						filel = (size_t)(colon - 1 - in);
					} else {
						line = 0;
					}
				}
			}
		}
	}
	ln.function = kiln_prof_function(p, kiln_prof_intern(p, fn, fl),
					 kiln_prof_intern(p, fn, fl),
					 kiln_prof_intern(p, file ? file : "", filel), 0);
	ln.line = line;
	return kiln_prof_location(p, 0, addr, &ln, 1);
}

/* Closes the nodes deeper than depth: each one's own bytes (not its
 * children's) become a sample of its stack. */
static int close_to(struct tree *t, size_t depth)
{
	uint32_t stack[MAX_DEPTH];

	while (t->depth > depth) {
		size_t d = t->depth - 1, i;
		int64_t self = t->bytes[d] - t->below[d];

		if (self > 0) {
			int64_t v = self;

			/* A child is its parent's caller: locs[1] is the leaf. */
			for (i = 0; i < d; i++)
				stack[i] = t->locs[i + 1];
			if (kiln_prof_add_sample(t->p, stack, (uint32_t)d, &v, 0) < 0)
				return -ENOMEM;
		}
		if (d > 0)
			t->below[d - 1] += t->bytes[d];
		t->depth = d;
	}
	return 0;
}

/* Reads one tree line "  nK: BYTES FRAME" at the indent it has. */
static int tree_line(struct tree *t, const struct line *l, struct kiln_diag *d)
{
	const char *s = l->s, *end = l->s + l->len, *q;
	size_t depth = 0;
	int64_t bytes = 0;
	uint64_t addr = 0;
	uint32_t loc = 0;
	int err;

	while (s < end && *s == ' ')
		s++, depth++;
	if (s == end || *s != 'n')
		return kiln_diag(d, "line %zu: a heap tree line \"nN: BYTES ...\" "
				 "expected", l->no);
	for (q = s + 1; q < end && *q >= '0' && *q <= '9'; q++)
		;
	if (q == s + 1 || q + 1 >= end || q[0] != ':' || q[1] != ' ')
		return kiln_diag(d, "line %zu: a heap tree line \"nN: BYTES ...\" "
				 "expected", l->no);
	for (s = q + 2; s < end && *s >= '0' && *s <= '9'; s++) {
		if (bytes > (INT64_MAX - 9) / 10)
			return kiln_diag(d, "line %zu: byte count out of range", l->no);
		bytes = bytes * 10 + (*s - '0');
	}
	if (s == q + 2 || (s < end && *s != ' '))
		return kiln_diag(d, "line %zu: a byte count expected after \"nN: \"",
				 l->no);
	if (depth > t->depth)
		return kiln_diag(d, "line %zu: indented %zu, deeper than its parent's "
				 "child (%zu)", l->no, depth, t->depth);
	if (depth >= MAX_DEPTH)
		return kiln_diag(d, "line %zu: deeper than %d frames", l->no,
				 MAX_DEPTH);
	if (depth == 0 && t->roots++)
		return kiln_diag(d, "line %zu: a second root in one heap tree", l->no);
	err = close_to(t, depth);
	if (err)
		return err;
	if (s < end)
		s++;
	if (depth > 0) {
		if (end - s >= 3 && !memcmp(s, "in ", 3)) {
			/* Folded below the threshold: one frame for all. */
			struct kiln_line ln = { t->below_fn, 0 };

			loc = kiln_prof_location(t->p, 0, 0, &ln, 1);
		} else {
			if (end - s > 2 && s[0] == '0' && s[1] == 'x') {
				for (q = s + 2; q < end && q - s < 18 &&
				     ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') ||
				      (*q >= 'A' && *q <= 'F')); q++)
					addr = addr * 16 + (uint64_t)(*q <= '9' ? *q - '0' :
							(*q | 0x20) - 'a' + 10);
				if (q + 1 < end && q[0] == ':' && q[1] == ' ')
					s = q + 2;
				else
					return kiln_diag(d, "line %zu: \"0xADDRESS: FUNCTION\" "
							 "expected", l->no);
			}
			loc = frame_loc(t->p, addr, s, (size_t)(end - s));
		}
	}
	/* Three arrays side by side: one capacity, each grown from it. */
	if (depth >= t->cap) {
		size_t cl = t->cap, cb = t->cap, cw = t->cap;

		if (KILN_GROW(t->locs, cl, depth + 1, 64) ||
		    KILN_GROW(t->bytes, cb, depth + 1, 64) ||
		    KILN_GROW(t->below, cw, depth + 1, 64))
			return -ENOMEM;
		t->cap = cl;
	}
	t->locs[depth] = loc;
	t->bytes[depth] = bytes;
	t->below[depth] = 0;
	t->depth = depth + 1;
	return kiln_prof_error(t->p);
}

/* A snapshot's header, and where its tree (if any) starts. */
struct snap {
	uint64_t num, heap;
	size_t tree_at, tree_no;	/* offset and line number before it */
	bool peak, detailed;
};

int kiln_massif_read(struct kiln_prof *p, const char *data, size_t len,
		     struct kiln_diag *d)
{
	static const char *const types[] = { "space/bytes" };
	struct snap cur = { 0 }, best = { 0 };
	struct tree t = { p };
	struct line l;
	size_t at = 0, no = 0, nsnap = 0;
	bool in_snap = false, have = false;
	uint64_t v;
	int err;

	err = kiln_text_check(data, len, d);
	if (err)
		return err;
	if (!next_line(data, len, &at, &no, &l) || !starts(&l, "desc:"))
		return kiln_diag(d, "line 1: \"desc:\" expected (massif's first line)");
	while (next_line(data, len, &at, &no, &l)) {
		if (!l.len || l.s[0] == '#')
			continue;
		if (starts(&l, "desc:") || starts(&l, "cmd:") ||
		    starts(&l, "time_unit:")) {
			if (in_snap)
				return kiln_diag(d, "line %zu: '%.*s' inside a snapshot",
						 l.no, 10, l.s);
			if (starts(&l, "cmd:")) {
				char c[512];
				size_t n = l.len - 4 < sizeof(c) - 1 ? l.len - 4 : sizeof(c) - 1;

				memcpy(c, l.s + 4, n);
				c[n] = '\0';
				if (kiln_prof_add_comment(p, c[0] == ' ' ? c + 1 : c))
					return -ENOMEM;
			}
			continue;
		}
		if (key_num(&l, "snapshot=", &v)) {
			if (v != nsnap)
				return kiln_diag(d, "line %zu: snapshot %" PRIu64 " where "
						 "%zu was due", l.no, v, nsnap);
			nsnap++;
			memset(&cur, 0, sizeof(cur));
			cur.num = v;
			in_snap = true;
			continue;
		}
		if (!in_snap)
			return kiln_diag(d, "line %zu: \"snapshot=N\" expected", l.no);
		if (key_num(&l, "time=", &v) || key_num(&l, "mem_heap_extra_B=", &v) ||
		    key_num(&l, "mem_stacks_B=", &v))
			continue;
		if (key_num(&l, "mem_heap_B=", &v)) {
			cur.heap = v;
			continue;
		}
		if (starts(&l, "heap_tree=")) {
			const char *k = l.s + 10;
			size_t kl = l.len - 10;

			cur.peak = kl == 4 && !memcmp(k, "peak", 4);
			cur.detailed = kl == 8 && !memcmp(k, "detailed", 8);
			if (!cur.peak && !cur.detailed &&
			    !(kl == 5 && !memcmp(k, "empty", 5)))
				return kiln_diag(d, "line %zu: heap_tree=%.*s (peak, "
						 "detailed or empty expected)", l.no,
						 (int)(kl > 20 ? 20 : kl), k);
			cur.tree_at = at;
			cur.tree_no = no;
			/* The peak tree wins; else the fullest detailed one. */
			if (cur.peak || (cur.detailed && (!have || (!best.peak &&
							  cur.heap > best.heap)))) {
				if (!(have && best.peak))
					best = cur;
				have = true;
			}
			in_snap = false;
			/* Skip the tree (checked when it is the one read). */
			while (at < len && (data[at] == ' ' || data[at] == 'n')) {
				if (!next_line(data, len, &at, &no, &l))
					break;
			}
			continue;
		}
		if (l.s[0] == ' ' || l.s[0] == 'n')
			return kiln_diag(d, "line %zu: a heap tree before \"heap_tree=\"",
					 l.no);
		return kiln_diag(d, "line %zu: unknown line '%.*s'", l.no,
				 (int)(l.len > 40 ? 40 : l.len), l.s);
	}
	if (!nsnap)
		return kiln_diag(d, "line %zu: no snapshot in the file", no);
	if (!have)
		return kiln_diag(d, "line %zu: no snapshot with a heap tree "
				 "(heap_tree=peak or detailed): nothing to read", no);
	err = kiln_prof_set_types_str(p, types, 1);
	if (err)
		return err;
	p->period_type = p->types[0];
	p->period = 1;
	t.below_fn = kiln_prof_function(p, kiln_prof_interns(p, "(below massif's threshold)"),
					kiln_prof_interns(p, "(below massif's threshold)"), 0, 0);
	at = best.tree_at;
	no = best.tree_no;
	err = 0;
	while (at < len && (data[at] == ' ' || data[at] == 'n') &&
	       next_line(data, len, &at, &no, &l)) {
		err = tree_line(&t, &l, d);
		if (err)
			goto out_free;
	}
	err = close_to(&t, 0);
	if (!err && !best.peak && d)
		snprintf(d->warn, sizeof(d->warn), "no peak snapshot's tree: read snapshot %" PRIu64
			 " (%" PRIu64 " bytes), the fullest detailed one", best.num,
			 best.heap);
out_free:
	free(t.locs);
	free(t.bytes);
	free(t.below);
	return err ? err : kiln_prof_error(p);
}
