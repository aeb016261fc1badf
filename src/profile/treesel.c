/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A selection's tree made from the tree of every sample (profile stage):
 * kiln serve makes a selection of its input for each focus, ignore and
 * time range asked; building each one's tree looks up every frame of
 * every kept sample.  The tree of every sample is built once
 * (kiln_tree_all_build()) and each selection's taken from it by its
 * samples' leaves: no frame is looked up.  See tree.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"

void kiln_tree_sel_release(struct kiln_tree_sel *s)
{
	free(s->self);
	free(s->total);
	free(s->claim);
	free(s->order);
	free(s->newid);
	free(s->chain);
	memset(s, 0, sizeof(*s));
}

/* s's arrays for a's n nodes and depth: kept when they are (no page
 * of them touched anew), else made.  0 or -ENOMEM. */
static int sel_size(struct kiln_tree_sel *s, const struct kiln_tree_all *a)
{
	size_t n = a->t.n, depth = (size_t)a->t.max_depth + 1;

	if (s->self && s->n == n && s->depth == depth)
		return 0;
	kiln_tree_sel_release(s);
	s->self = malloc(n * sizeof(*s->self));
	s->total = malloc(n * sizeof(*s->total));
	s->claim = malloc(n * sizeof(*s->claim));
	s->order = malloc(n * sizeof(*s->order));
	s->newid = malloc(n * sizeof(*s->newid));
	s->chain = malloc(depth * sizeof(*s->chain));
	if (!s->self || !s->total || !s->claim || !s->order || !s->newid || !s->chain) {
		kiln_tree_sel_release(s);
		return -ENOMEM;
	}
	s->n = n;
	s->depth = depth;
	return 0;
}

/*
 * The nodes the selection reaches, in the order a build of its samples
 * makes them: sample by sample, the nodes it is the first to reach, from
 * the root's side.  Returns how many (the root first).
 */
static size_t reach(const struct kiln_tree_all *a, const struct kiln_prof *p,
		    const int64_t *w, struct kiln_tree_sel *s)
{
	const struct kiln_tree_node *nd = a->t.nodes;
	size_t i, m = 0, k;
	uint32_t x;

	for (i = 0; i < a->t.n; i++)
		s->claim[i] = UINT32_MAX;
	s->claim[0] = 0;
	s->order[m++] = 0;
	for (i = 0; i < p->nsamples; i++) {
		if (w[i] <= 0)
			continue;
		k = 0;
		for (x = a->leaf[i]; x && s->claim[x] == UINT32_MAX; x = nd[x].parent) {
			s->claim[x] = (uint32_t)i;
			s->chain[k++] = x;
		}
		while (k)
			s->order[m++] = s->chain[--k];
	}
	return m;
}

/* Node x's first frame from sample i, whose frames (nf of them, leaf
 * first) are fr. */
static void first_frame(struct kiln_tree_node *n, const struct kiln_prof *p,
			const struct kiln_frame *fr, long nf, bool reverse)
{
	const struct kiln_frame *f = &fr[reverse ? n->depth - 1 : (uint32_t)nf - n->depth];

	n->location = f->location;
	n->function = f->function;
	n->line = f->line;
	n->kind = kiln_prof_loc_kind(p, f->location);
}

int kiln_tree_select(struct kiln_tree *t, const struct kiln_tree_all *a,
		     struct kiln_prof *p, const int64_t *w,
		     struct kiln_tree_sel *scratch)
{
	const struct kiln_tree_node *nd = a->t.nodes;
	struct kiln_frame *fr = NULL;
	struct kiln_tree_sel own = { 0 }, *sp = scratch ? scratch : &own;
	size_t n = a->t.n, i, m = 0, cap = 0;
	uint32_t loaded = UINT32_MAX, *tail = NULL;
	long nf = 0;
	int err = 0;

	kiln_tree_release(t);
	t->prof = p;
	t->reverse = a->t.reverse;
	if (p->nsamples != a->nsamples || !n)
		return -EINVAL;
	err = sel_size(sp, a);
	if (err)
		goto out;
	memset(sp->self, 0, n * sizeof(*sp->self));
	/* Self values at the leaves, totals summed from the end (children
	 * come after their parents), as a build sums them. */
	for (i = 0; i < p->nsamples; i++)
		if (w[i] > 0)
			sp->self[a->leaf[i]] = kiln_sat_add(sp->self[a->leaf[i]], w[i]);
	memcpy(sp->total, sp->self, n * sizeof(*sp->total));
	for (i = n; i-- > 1;)
		sp->total[nd[i].parent] = kiln_sat_add(sp->total[nd[i].parent], sp->total[i]);
	m = reach(a, p, w, sp);
	t->nodes = malloc(m * sizeof(*t->nodes));
	tail = calloc(m, sizeof(*tail));	/* each node's last child so far */
	if (!t->nodes || !tail) {
		err = -ENOMEM;
		goto out;
	}
	t->n = t->alloc = (uint32_t)m;
	for (i = 0; i < m; i++)
		sp->newid[sp->order[i]] = (uint32_t)i;
	for (i = 0; i < m && !err; i++) {
		uint32_t x = sp->order[i];
		struct kiln_tree_node *c = &t->nodes[i];

		*c = nd[x];
		c->parent = x ? sp->newid[nd[x].parent] : 0;
		c->child = c->next = 0;
		c->total = sp->total[x];
		c->self = sp->self[x];
		c->base = 0;
		if (c->depth > t->max_depth)
			t->max_depth = c->depth;
		/* Made by another sample in a: this selection's first one
		 * through it names its frame. */
		if (x && a->first[x] != sp->claim[x]) {
			if (sp->claim[x] != loaded) {
				nf = kiln_prof_frames(p, &p->samples[sp->claim[x]], &fr, &cap);
				if (nf < (long)c->depth) {
					err = nf < 0 ? (int)nf : -EINVAL;
					break;
				}
				loaded = sp->claim[x];
			}
			first_frame(c, p, fr, nf, t->reverse);
		}
	}
	/* Children in a's order, which is by name (kiln_tree_build()'s). */
	for (i = 0; i < m && !err; i++) {
		uint32_t x = sp->order[i], ch;

		for (ch = nd[x].child; ch; ch = nd[ch].next) {
			uint32_t k;

			if (sp->claim[ch] == UINT32_MAX)
				continue;
			k = sp->newid[ch];
			if (tail[i])
				t->nodes[tail[i]].next = k;
			else
				t->nodes[i].child = k;
			tail[i] = k;
		}
	}
	t->sorted = true;
out:
	free(tail);
	free(fr);
	kiln_tree_sel_release(&own);
	if (err)
		kiln_tree_release(t);
	return err;
}
