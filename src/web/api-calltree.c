/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The call tree view of kiln serve's API (web stage): /api/calltree, the
 * selection's tree (top-down, or inverted: leaf-rooted) as an expandable
 * table.  It is sent lazily: the children of one node, at most n of them,
 * heaviest first, and, with open=K, those of the K nodes of its hot path
 * below it (its heaviest child, that one's heaviest child, ...), so that
 * the page opens on the hot path in one request.  A 1M-sample profile
 * costs the page what it shows, never the whole tree.  With min=F the
 * levels of every node at least F of the selection's total wide are sent,
 * depth first, each but the first naming its node by its parent's level
 * and its place there ("up", "at"), not its path (the saved page holds
 * the tree so, save.c; docs/kiln-serve.md).  Without min= and until the
 * view has its whole tree of that orientation (the flame graph builds
 * it), the levels are made on demand from the view's stacks
 * (kiln_tree_expand()).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "util/buf.h"
#include "web/call.h"

#define CT_N_DEFAULT 200	/* children sent per node without n */
#define CT_OPEN_MAX 512		/* hot-path levels one request may open */

struct ct_kid {
	uint32_t node;
	uint32_t pos;		/* place among its siblings (name order) */
};

static int cmp_kid(const void *a, const void *b, void *ctx)
{
	const struct kiln_tree *t = ctx;
	const struct ct_kid *x = a, *y = b;
	int64_t tx = t->nodes[x->node].total, ty = t->nodes[y->node].total;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Appends a frame name to a path as web_tree_walk() reads it. */
static int path_add(struct kiln_buf *path, const char *name)
{
	int err = path->len ? kiln_buf_addc(path, ';') : 0;

	for (; *name && !err; name++) {
		if (*name == ';' || *name == '\\')
			err = kiln_buf_addc(path, '\\');
		if (!err)
			err = kiln_buf_addc(path, *name);
	}
	return err;
}

/*
 * Writes {"path":P,"children":[[name, total, self, children, file, line,
 * kind, module], ...],"more":K,"more_total":V} for node `node` at path P:
 * its first n children by total (ties in name order) of at least
 * min_total, K left out worth V together.  Names, files and modules index "names" (-1: none).  Self in
 * the inverted tree is the function's self value at the first level (a
 * leaf's total) and 0 below it, as in other profilers.  Returns the
 * heaviest child, 0 when none (or out of memory: c->err).
 */
static uint32_t emit_level(struct call *c, const struct kiln_tree *t,
			   uint32_t node, const struct kiln_buf *path, long n,
			   int64_t min_total, struct web_names *nm,
			   struct ct_kid **kids, size_t *cap)
{
	const struct kiln_prof *p = t->prof;
	size_t nk = 0, i, sent = 0;
	int64_t more_total = 0;
	uint32_t ch;

	for (ch = t->nodes[node].child; ch; ch = t->nodes[ch].next) {
		if (kiln_array_grow((void **)kids, cap, nk + 1, sizeof(**kids))) {
			c->err = -ENOMEM;
			return 0;
		}
		(*kids)[nk] = (struct ct_kid){ ch, (uint32_t)nk };
		nk++;
	}
	if (nk)		/* *kids may still be NULL */
		qsort_r(*kids, nk, sizeof(**kids), cmp_kid, (void *)t);
	if (path) {
		call_add(c, "{\"path\":");
		call_add_str(c, path->data ? path->data : "");
	}
	call_add(c, ",\"children\":[");
	for (i = 0; i < nk; i++) {
		const struct kiln_tree_node *nd = &t->nodes[(*kids)[i].node];
		uint32_t file = nd->function ? p->functions[nd->function].filename : 0;
		uint32_t mod = web_node_module(p, nd);
		int64_t self = !t->reverse ? nd->self : nd->depth == 1 ? nd->total : 0;
		uint32_t grand = 0, g;

		if (i >= (size_t)n || nd->total < min_total) {
			more_total += nd->total;
			continue;
		}
		sent++;
		for (g = nd->child; g; g = t->nodes[g].next)
			grand++;
		call_add(c, "%s[%u,%" PRId64 ",%" PRId64 ",%u,%" PRId64 ",%" PRId64
		    ",%u,%" PRId64 "]", i ? "," : "", web_name_ref(c, nm, p, nd->name),
		    nd->total, self, grand,
		    file ? (int64_t)web_name_ref(c, nm, p, file) : -1, nd->line,
		    nd->kind, mod ? (int64_t)web_name_ref(c, nm, p, mod) : -1);
	}
	call_add(c, "],\"more\":%zu,\"more_total\":%" PRId64 "}",
	    nk - sent, more_total);
	return nk ? (*kids)[0].node : 0;
}

/*
 * Writes the level of node, its children of at least min_total only, and,
 * depth first, those of its sent children with children of their own:
 * ",{"up":U,"at":I,...}" each, where U is the index of the parent's level
 * among the levels sent (*nlev counts them) and I the node's place among
 * its children.  The first level is the caller's (path: its own).
 */
static void emit_deep(struct call *c, const struct kiln_tree *t, uint32_t node,
		      const struct kiln_buf *path, long n, int64_t min_total,
		      struct web_names *nm, struct ct_kid **kids, size_t *cap,
		      size_t *nlev)
{
	struct { uint32_t node, at; } *sent = NULL;
	size_t nk = 0, ns = 0, i, me = (*nlev)++;
	uint32_t k;

	emit_level(c, t, node, path, n, min_total, nm, kids, cap);
	for (k = t->nodes[node].child; k; k = t->nodes[k].next)
		nk++;
	if (nk > (size_t)n)
		nk = (size_t)n;
	/* The sent children to go down into, before *kids is reused. */
	if (nk && !c->err && !(sent = malloc(nk * sizeof(*sent))))
		c->err = -ENOMEM;
	for (i = 0; i < nk && !c->err; i++) {
		const struct kiln_tree_node *nd = &t->nodes[(*kids)[i].node];

		if (nd->total < min_total)
			break;
		if (nd->child) {
			sent[ns].node = (*kids)[i].node;
			sent[ns++].at = (uint32_t)i;
		}
	}
	for (i = 0; i < ns && !c->err; i++) {
		call_add(c, ",{\"up\":%zu,\"at\":%u", me, sent[i].at);
		emit_deep(c, t, sent[i].node, NULL, n, min_total, nm, kids, cap, nlev);
	}
	free(sent);
}

/* A partial tree made from the view's stacks a level at a time
 * (kiln_tree_expand()): the stacks through the current node are sel. */
struct lazy {
	struct call *c;
	struct kiln_tree *t;
	struct kiln_tree_paths *ps;
	uint32_t *sel;
	size_t nsel;
};

/* web_path_walk()'s step: the stacks through the child named name. */
static uint32_t lazy_step(void *ctx, uint32_t node, const char *name)
{
	struct lazy *z = ctx;
	struct kiln_frame f = { 0, 0, 0, 0 };
	uint32_t id;

	f.name = kiln_prof_find_str(z->t->prof, name, strlen(name));
	if (!f.name)
		return 0;
	z->nsel = kiln_tree_paths_narrow(z->ps, z->sel, z->nsel,
					 z->t->nodes[node].depth, f.name);
	if (!z->nsel)
		return 0;
	id = kiln_tree_child(z->t, node, &f);
	if (!id)
		z->c->err = -ENOMEM;
	return id;
}

/* The answer's levels from the node at `at` down its hot path (open
 * levels more), as in web_api_calltree(); t is a partial tree made here
 * (lazy) or the view's whole one. */
static int calltree_levels(struct call *c, struct web_view *v, struct kiln_tree *t,
			   struct lazy *z, const char *at, long n, long open,
			   double min)
{
	struct web_names nm = { 0 };
	struct kiln_buf path = KILN_BUF_INIT;
	struct ct_kid *kids = NULL;
	size_t cap = 0;
	uint32_t node;
	long k;

	node = z ? web_path_walk(c, at, lazy_step, z) : web_tree_walk(c, t, at);
	if (node == UINT32_MAX)
		return c->err ? 500 : c->status;
	if (at && kiln_buf_adds(&path, at))
		c->err = -ENOMEM;
	call_add(c, "{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"total\":%" PRId64 ",\"total_str\":", t->nodes[0].total);
	call_add_value_str(c, t->nodes[0].total, call_unit_name(v->prof, v->type));
	call_add(c, ",\"reverse\":%s,\"levels\":[", t->reverse ? "true" : "false");
	if (min > 0) {
		size_t nlev = 0;

		emit_deep(c, t, node, &path, n, (int64_t)ceil(min * (double)t->nodes[0].total),
			  &nm, &kids, &cap, &nlev);
	}
	for (k = 0; min <= 0 && !c->err; k++) {
		uint32_t hot;

		if (k)
			call_add(c, ",");
		if (z && kiln_tree_expand(t, v->prof, z->ps, node, z->sel, z->nsel)) {
			c->err = -ENOMEM;
			break;
		}
		hot = emit_level(c, t, node, &path, n, 0, &nm, &kids, &cap);
		if (!hot || k >= open || !t->nodes[hot].child)
			break;
		if (path_add(&path, kiln_prof_str(v->prof, t->nodes[hot].name)))
			c->err = -ENOMEM;
		if (z)
			z->nsel = kiln_tree_paths_narrow(z->ps, z->sel, z->nsel,
							 t->nodes[node].depth,
							 t->nodes[hot].name);
		node = hot;
	}
	call_add(c, "],");
	web_names_write(c, &nm, v->prof);
	call_add(c, "}\n");
	free(kids);
	free(nm.idx);
	kiln_buf_release(&path);
	return c->err ? 500 : 200;
}

int web_api_calltree(struct call *c)
{
	struct web_view *v;
	struct kiln_tree *t, part = KILN_TREE_INIT;
	struct lazy z = { c, &part, NULL, NULL, 0 };
	long n, open;
	double min;
	bool reverse;
	size_t i;
	int err, st;

	if (call_num_arg(c, "n", 1, 100000, CT_N_DEFAULT, &n) ||
	    call_num_arg(c, "open", 0, CT_OPEN_MAX, 0, &open) ||
	    call_frac_arg(c, "min", 0, &min) ||
	    call_bool_arg(c, "reverse", &reverse) || call_selection_weighed(c, &v))
		return c->status;
	/*
	 * The whole tree when the view has it, or for min= (every node wide
	 * enough: the saved page); else the levels asked, made from the
	 * view's stacks (a 300k-stack selection's inverted tree has 900k
	 * nodes and cost 0.4 s to build; its first levels cost a pass over
	 * the stacks' names).  Both give the same answer (test-tree).
	 */
	if (min > 0 || v->tree[reverse].n) {
		err = kiln_web_view_tree(v, reverse, false, &t, &c->d);
		if (err == -EINVAL)
			return call_fail(c, 400, "%s", c->d.msg);
		if (err) {
			c->err = err;
			return 500;
		}
		/* Read last: an argument's value may live only until the next. */
		return calltree_levels(c, v, t, NULL, call_arg(c, "path"), n, open, min);
	}
	err = kiln_web_view_paths(v, reverse, &z.ps);
	if (!err)
		err = kiln_tree_start(&part, v->prof, reverse);
	if (!err && !(z.sel = malloc((z.ps->n + 1) * sizeof(*z.sel))))
		err = -ENOMEM;
	if (err) {
		kiln_tree_release(&part);
		c->err = err;
		return 500;
	}
	for (i = 0; i < z.ps->n; i++)
		z.sel[i] = (uint32_t)i;
	z.nsel = z.ps->n;
	part.nodes[0].total = z.ps->total;
	st = calltree_levels(c, v, &part, &z, call_arg(c, "path"), n, open, min);
	free(z.sel);
	kiln_tree_release(&part);
	return st;
}
