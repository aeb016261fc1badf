/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stack transforms (profile stage): the text form read into a list, and
 * the list applied to every sample's stack.  See transform.h.
 *
 * A stack is worked on as frames, root first, each remembering which
 * position of the original stack (a location) it came from; a transform
 * removes frames, cuts the stack or puts one made-up frame in place of a
 * run (a collapsed library).  The frames left are turned back into
 * locations: a location all of whose frames are left is itself again, one
 * that lost some of its inline frames becomes a location with the frames
 * left (same mapping and address, as kiln_prof_hide() does).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/transform.h"
#include "util/buf.h"
#include "util/diag.h"

static const struct {
	const char *code, *words;
	bool path;
} kinds[] = {
	[KILN_TF_FOCUS_SUBTREE] = { "f", "focus on subtree", true },
	[KILN_TF_FOCUS_FUNCTION] = { "ff", "focus on function", false },
	[KILN_TF_MERGE_FUNCTION] = { "mf", "merge function", false },
	[KILN_TF_MERGE_CALL_NODE] = { "mcn", "merge call node", true },
	[KILN_TF_DROP_FUNCTION] = { "df", "drop function", false },
	[KILN_TF_COLLAPSE_LIB] = { "cl", "collapse library", false },
	[KILN_TF_COLLAPSE_RECURSION] = { "rec", "collapse recursion", false },
	[KILN_TF_COLLAPSE_DIRECT_RECURSION] = { "drec", "collapse direct recursion", false },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const char *kiln_tf_code(enum kiln_tf_kind k)
{
	return (size_t)k < NKINDS ? kinds[k].code : "?";
}

const char *kiln_tf_words(enum kiln_tf_kind k)
{
	return (size_t)k < NKINDS ? kinds[k].words : "?";
}

void kiln_tf_release(struct kiln_tf_list *l)
{
	free(l->items);
	free(l->buf);
	free(l->names);
	memset(l, 0, sizeof(*l));
}

/* The kind of code [s, s + n), or -1. */
static int kind_of(const char *s, size_t n)
{
	size_t k;

	for (k = 0; k < NKINDS; k++)
		if (strlen(kinds[k].code) == n && !memcmp(kinds[k].code, s, n))
			return (int)k;
	return -1;
}

/*
 * Pass over text: cuts items at unescaped ';', names at unescaped '/'
 * (in a path item), unescapes into buf.  Two passes: the first (buf
 * NULL) counts items and names.
 */
int kiln_tf_parse(struct kiln_tf_list *l, const char *text,
		  struct kiln_diag *d)
{
	size_t len = text ? strlen(text) : 0, i, nitems = 0, nnames = 0;
	char *w;
	int err = 0;

	kiln_tf_release(l);
	if (!len)
		return 0;
	/* At most one item and one name per separator, plus one. */
	for (i = 0; i < len; i++)
		if (text[i] == ';' || text[i] == '/')
			nnames++;
	nnames++;
	l->buf = malloc(len + 1);
	l->names = calloc(nnames, sizeof(*l->names));
	l->items = calloc(nnames, sizeof(*l->items));
	if (!l->buf || !l->names || !l->items) {
		kiln_tf_release(l);
		return -ENOMEM;
	}
	w = l->buf;
	nnames = 0;
	i = 0;
	while (i < len && !err) {
		size_t start = i, colon;
		struct kiln_tf *t;
		int k;

		/* The code: up to the first ':' (codes hold no escapes). */
		while (i < len && text[i] != ':' && text[i] != ';')
			i++;
		colon = i;
		if (colon == start && i < len && text[i] == ';') {
			i++;		/* an empty item: skipped */
			continue;
		}
		k = kind_of(text + start, colon - start);
		if (colon >= len || text[colon] != ':' || k < 0) {
			size_t e = colon;

			while (e < len && text[e] != ';')
				e++;
			err = kiln_diag(d, "bad transform '%.*s': want CODE:ARG, CODE one "
					"of f ff mf mcn df cl rec drec", (int)(e - start),
					text + start);
			break;
		}
		t = &l->items[nitems++];
		t->kind = (enum kiln_tf_kind)k;
		t->names = l->names + nnames;
		t->n = 0;
		i = colon + 1;
		l->names[nnames++] = w;
		t->n = 1;
		for (; i < len && text[i] != ';'; i++) {
			if (text[i] == '\\' && i + 1 < len) {
				*w++ = text[++i];
			} else if (text[i] == '/' && kinds[k].path) {
				*w++ = '\0';
				l->names[nnames++] = w;
				t->n++;
			} else {
				*w++ = text[i];
			}
		}
		*w++ = '\0';
		if (i < len)
			i++;	/* the ';' */
		if (!*t->names[t->n - 1] && (t->n == 1 || !kinds[k].path))
			err = kiln_diag(d, "bad transform '%s:': it names nothing",
					kinds[k].code);
	}
	l->n = nitems;
	if (err)
		kiln_tf_release(l);
	return err;
}

/* One frame of a stack being rewritten. */
struct tframe {
	uint32_t name;		/* string id */
	uint32_t function;	/* 0 unknown or made-up */
	int64_t line;
	uint32_t loc;		/* the original location, or a made-up one */
	uint32_t pos;		/* its position in the original stack;
				 * UINT32_MAX for a made-up frame */
};

/* One transform, its names as the profile's string ids (0: no frame can
 * have it) and, for a library, which mappings are of it. */
struct ttf {
	enum kiln_tf_kind kind;
	uint32_t *ids;
	size_t n;
	uint8_t *maps;		/* [nmappings + 1] for KILN_TF_COLLAPSE_LIB */
	uint32_t *libloc;	/* made-up location per mapping, 0 not yet */
	const char *base;	/* the library's base name */
	uint32_t base_id, base_fn;	/* its string and function, made once */
};

struct tstate {
	struct kiln_prof *p;
	struct ttf *t;
	size_t nt;
	struct tframe *a, *b;	/* the frames and a second buffer */
	size_t cap;
	/* Per location of the profile as it came (nlook of them): whether
	 * a transform looks at it (looked_at()): 0 not known yet, 1 no,
	 * 2 yes.  NULL: every stack expanded. */
	uint8_t *look;
	size_t nlook;
	bool focus;		/* the list focuses (f, ff) */
};

bool kiln_tf_expand_every;

static const char *base_name(const char *s)
{
	const char *b = strrchr(s, '/');

	return b ? b + 1 : s;
}

/* Whether a mapping's file is the module `want` (its path or base
 * name). */
static bool module_is(const char *file, const char *want)
{
	if (!*file)
		return false;
	return !strcmp(file, want) || !strcmp(base_name(file), base_name(want));
}

static int prepare(struct tstate *st, const struct kiln_tf_list *l)
{
	struct kiln_prof *p = st->p;
	size_t i, j;

	st->t = calloc(l->n ? l->n : 1, sizeof(*st->t));
	if (!st->t)
		return -ENOMEM;
	st->nt = l->n;
	for (i = 0; i < l->n; i++) {
		struct ttf *t = &st->t[i];

		t->kind = l->items[i].kind;
		t->n = l->items[i].n;
		t->ids = calloc(t->n, sizeof(*t->ids));
		if (!t->ids)
			return -ENOMEM;
		/* Interned, not looked up: a name an earlier transform of
		 * the list makes (a collapsed library's) must match too. */
		for (j = 0; j < t->n; j++)
			t->ids[j] = kiln_prof_interns(p, l->items[i].names[j]);
		if (p->err)
			return p->err;
		if (t->kind != KILN_TF_COLLAPSE_LIB)
			continue;
		t->base = base_name(l->items[i].names[0]);
		t->maps = calloc(p->nmappings + 1, 1);
		t->libloc = calloc(p->nmappings + 1, sizeof(*t->libloc));
		if (!t->maps || !t->libloc)
			return -ENOMEM;
		for (j = 1; j <= p->nmappings; j++)
			t->maps[j] = module_is(kiln_prof_str(p, p->mappings[j].file),
					       l->items[i].names[0]);
	}
	return 0;
}

static void release(struct tstate *st)
{
	size_t i;

	free(st->look);
	for (i = 0; st->t && i < st->nt; i++) {
		free(st->t[i].ids);
		free(st->t[i].maps);
		free(st->t[i].libloc);
	}
	free(st->t);
	free(st->a);
	free(st->b);
}

/* Whether frames a[0..n) start with the path t->ids. */
static bool has_prefix(const struct tframe *a, size_t n, const struct ttf *t)
{
	size_t i;

	if (n < t->n)
		return false;
	for (i = 0; i < t->n; i++)
		if (!t->ids[i] || a[i].name != t->ids[i])
			return false;
	return true;
}

/* The made-up frame of a collapsed library for a run starting in
 * location loc; 0 out of memory. */
static uint32_t lib_loc(struct kiln_prof *p, struct ttf *t, uint32_t loc,
			uint32_t *fn)
{
	uint32_t m = p->locations[loc].mapping;
	struct kiln_line line = { 0, 0 };

	if (!t->base_fn) {
		t->base_id = kiln_prof_interns(p, t->base);
		t->base_fn = kiln_prof_function(p, t->base_id, 0, 0, 0);
	}
	line.function = t->base_fn;
	*fn = line.function;
	if (!line.function)
		return 0;
	if (!t->libloc[m])
		t->libloc[m] = kiln_prof_location(p, m, 0, &line, 1);
	return t->libloc[m];
}

/*
 * Applies transform t to frames a[0..*n) (root first), writing into b;
 * returns false when the sample goes.  -ENOMEM through *err.
 */
static bool apply(struct tstate *st, struct ttf *t, const struct tframe *a,
		  size_t n, struct tframe *b, size_t *nb, int *err)
{
	struct kiln_prof *p = st->p;
	uint32_t f = t->ids[0];
	size_t i, k = 0, first = SIZE_MAX, last = SIZE_MAX;

	switch (t->kind) {
	case KILN_TF_FOCUS_SUBTREE:
		if (!has_prefix(a, n, t))
			return false;
		for (i = t->n - 1; i < n; i++)
			b[k++] = a[i];
		break;
	case KILN_TF_FOCUS_FUNCTION:
		for (i = 0; i < n && first == SIZE_MAX; i++)
			if (f && a[i].name == f)
				first = i;
		if (first == SIZE_MAX)
			return false;
		for (i = first; i < n; i++)
			b[k++] = a[i];
		break;
	case KILN_TF_MERGE_FUNCTION:
		for (i = 0; i < n; i++)
			if (!f || a[i].name != f)
				b[k++] = a[i];
		break;
	case KILN_TF_MERGE_CALL_NODE: {
		bool hit = has_prefix(a, n, t);

		for (i = 0; i < n; i++)
			if (!hit || i != t->n - 1)
				b[k++] = a[i];
		break;
	}
	case KILN_TF_DROP_FUNCTION:
		for (i = 0; i < n; i++)
			if (f && a[i].name == f)
				return false;
		memcpy(b, a, n * sizeof(*a));
		k = n;
		break;
	case KILN_TF_COLLAPSE_LIB:
		for (i = 0; i < n; i++) {
			uint32_t m = a[i].pos == UINT32_MAX ? 0 :
				p->locations[a[i].loc].mapping;

			if (!m || !t->maps[m]) {
				b[k++] = a[i];
				continue;
			}
			/* The run's first frame stands for the run. */
			if (k && b[k - 1].pos == UINT32_MAX - 1)
				continue;
			b[k].loc = lib_loc(p, t, a[i].loc, &b[k].function);
			if (!b[k].loc) {
				*err = -ENOMEM;
				return false;
			}
			b[k].name = t->base_id;
			b[k].line = 0;
			b[k].pos = UINT32_MAX - 1;	/* a run, for now */
			k++;
		}
		for (i = 0; i < k; i++)
			if (b[i].pos == UINT32_MAX - 1)
				b[i].pos = UINT32_MAX;
		break;
	case KILN_TF_COLLAPSE_RECURSION:
		for (i = 0; i < n; i++)
			if (f && a[i].name == f) {
				if (first == SIZE_MAX)
					first = i;
				last = i;
			}
		for (i = 0; i < n; i++)
			if (first == SIZE_MAX || i <= first || i > last)
				b[k++] = a[i];
		break;
	case KILN_TF_COLLAPSE_DIRECT_RECURSION:
		for (i = 0; i < n; i++)
			if (!f || !k || a[i].name != f || b[k - 1].name != f)
				b[k++] = a[i];
		break;
	}
	*nb = k;
	return true;
}

/*
 * Whether a transform of the list looks at location loc: one of its
 * frames has a name the list names, or it is in a collapsed library.
 * A stack none of whose locations is looked at comes out of every
 * transform as it went in (merge, drop, collapse and merge-call-node
 * keep it whole), unless the list focuses (f, ff: such a stack goes):
 * then it is neither expanded nor rebuilt.  Each location is judged
 * once, when a stack first holds it, so the fallback names its frames
 * get are interned in the order expanding every stack would intern
 * them.  0 no, 1 yes, or -ENOMEM.
 */
static int looked_at(struct tstate *st, uint32_t loc, struct kiln_frame **fr,
		     size_t *fcap)
{
	struct kiln_prof *p = st->p;
	bool hit = false;
	long nf, j;
	size_t k, i;

	if (st->look[loc])
		return st->look[loc] - 1;
	nf = kiln_prof_loc_frames(p, loc, fr, fcap);
	if (nf < 0)
		return (int)nf;
	for (k = 0; k < st->nt && !hit; k++) {
		const struct ttf *t = &st->t[k];

		if (t->kind == KILN_TF_COLLAPSE_LIB) {
			hit = t->maps[p->locations[loc].mapping];
			continue;
		}
		for (j = 0; j < nf && !hit; j++)
			for (i = 0; i < t->n && !hit; i++)
				hit = (*fr)[j].name == t->ids[i];
	}
	st->look[loc] = hit ? 2 : 1;
	return hit;
}

/* Whether a transform looks at a location of sample s (stack in
 * stacks): 0 no, 1 yes, or -ENOMEM. */
static int sample_looked_at(struct tstate *st, const struct kiln_sample *s,
			    const uint32_t *stacks, struct kiln_frame **fr,
			    size_t *fcap)
{
	const uint32_t *locs = stacks + s->stack;
	int hit = 0;

	for (uint32_t d = 0; d < s->depth && !hit; d++)
		hit = locs[d] < st->nlook ? looked_at(st, locs[d], fr, fcap) : 1;
	/* (The rest of the stack is judged when a later stack holds it:
	 * expanding this one interns its fallback names in order.) */
	return hit;
}

/*
 * The stack of frames a[0..n) (root first) as location ids, leaf first,
 * into *out (grown): each original position's frames left, as that
 * location or a new one with those frames.  Returns the depth, or -1
 * (out of memory).
 */
static long relocate(struct kiln_prof *p, const struct tframe *a, size_t n,
		     uint32_t **out, size_t *cap, struct kiln_line **lines,
		     size_t *lcap)
{
	size_t depth = 0, i = n;

	if (KILN_GROW(*out, *cap, n + 1, 64))
		return -1;
	while (i > 0) {
		size_t end = i, start, nl, j;
		const struct kiln_location *loc;
		uint32_t id;

		/* Frames of one position: a run, innermost last here. */
		start = i - 1;
		while (start > 0 && a[start - 1].pos == a[end - 1].pos &&
		       a[end - 1].pos != UINT32_MAX)
			start--;
		i = start;
		nl = end - start;
		loc = &p->locations[a[start].loc];
		if (a[start].pos == UINT32_MAX || !loc->nlines || nl == loc->nlines) {
			(*out)[depth++] = a[start].loc;
			continue;
		}
		if (KILN_GROW(*lines, *lcap, nl, 16))
			return -1;
		for (j = 0; j < nl; j++) {	/* innermost first */
			(*lines)[j].function = a[end - 1 - j].function;
			(*lines)[j].line = a[end - 1 - j].line;
		}
		id = kiln_prof_location(p, loc->mapping, loc->address, *lines,
					(uint32_t)nl);
		if (!id)
			return -1;
		(*out)[depth++] = id;
	}
	return (long)depth;
}

/* Sample s's frames, root first, into st->a; the count or -ENOMEM. */
static long expand(struct tstate *st, const struct kiln_sample *s,
		   uint32_t *old_stacks, struct kiln_frame **fr, size_t *fcap)
{
	struct kiln_prof *p = st->p;
	uint32_t *cur = p->stacks;
	const uint32_t *locs = s->depth ? old_stacks + s->stack : NULL;
	long nf, j;
	uint32_t pos = 0, left;

	p->stacks = old_stacks;
	nf = kiln_prof_frames(p, s, fr, fcap);
	p->stacks = cur;
	if (nf < 0)
		return nf;
	if ((size_t)nf + 1 > st->cap) {
		size_t cap = ((size_t)nf + 1) * 2;
		struct tframe *a = realloc(st->a, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		st->a = a;
		a = realloc(st->b, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		st->b = a;
		st->cap = cap;
	}
	/* kiln_prof_frames() gives each location max(nlines, 1) frames, leaf
	 * first: positions counted as it does. */
	left = 0;
	for (j = 0; j < nf; j++) {
		const struct kiln_frame *f = &(*fr)[j];
		struct tframe *t = &st->a[nf - 1 - j];

		if (!left) {
			while (locs[pos] != f->location)
				pos++;	/* never past: frames follow locs */
			left = p->locations[f->location].nlines ?
				p->locations[f->location].nlines : 1;
		}
		t->name = f->name;
		t->function = f->function;
		t->line = f->line;
		t->loc = f->location;
		t->pos = pos;
		if (!--left)
			pos++;
	}
	return nf;
}

int kiln_prof_transform(struct kiln_prof *p, const struct kiln_tf_list *l)
{
	struct tstate st = { p };
	struct kiln_prof_samples o;
	struct kiln_frame *fr = NULL;
	struct kiln_line *lines = NULL;
	uint32_t *stack = NULL;
	size_t fcap = 0, scap = 0, lcap = 0, i, k;
	int err;

	if (!l || !l->n)
		return 0;
	err = prepare(&st, l);
	if (err) {
		release(&st);
		return err;
	}
	st.nlook = p->nlocations + 1;
	st.look = calloc(st.nlook, 1);
	if (!st.look) {
		release(&st);
		return -ENOMEM;
	}
	for (k = 0; k < st.nt; k++)
		st.focus |= st.t[k].kind == KILN_TF_FOCUS_SUBTREE ||
			    st.t[k].kind == KILN_TF_FOCUS_FUNCTION;
	o = kiln_prof_take_samples(p);
	for (i = 0; i < o.n && !err && !p->err; i++) {
		const struct kiln_sample *s = &o.samples[i];
		int looked = sample_looked_at(&st, s, o.stacks, &fr, &fcap);
		long nf, depth;
		size_t n;
		bool keep = true;

		if (looked < 0) {
			err = looked;
			break;
		}
		if (!looked && !kiln_tf_expand_every) {	/* as it was, or out of focus */
			if (!st.focus)
				kiln_prof_readd(p, &o, i, s->depth ? o.stacks + s->stack :
						NULL, s->depth, o.values + i * p->ntypes,
						s->labels);
			continue;
		}
		nf = expand(&st, s, o.stacks, &fr, &fcap);
		n = nf > 0 ? (size_t)nf : 0;
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		for (k = 0; k < st.nt && keep && !err; k++) {
			struct tframe *swap;
			size_t nb = 0;

			keep = apply(&st, &st.t[k], st.a, n, st.b, &nb, &err);
			swap = st.a;
			st.a = st.b;
			st.b = swap;
			n = nb;
		}
		if (!keep || err)
			continue;
		depth = relocate(p, st.a, n, &stack, &scap, &lines, &lcap);
		if (depth < 0) {
			err = -ENOMEM;
			break;
		}
		kiln_prof_readd(p, &o, i, depth ? stack : NULL, (uint32_t)depth,
				o.values + i * p->ntypes, o.samples[i].labels);
	}
	kiln_prof_samples_free(p, &o);
	free(fr);
	free(lines);
	free(stack);
	release(&st);
	return err ? err : p->err;
}
