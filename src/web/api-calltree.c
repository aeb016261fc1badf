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
 * the tree so, save.c; docs/kiln-serve.md).
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

int web_api_calltree(struct call *c)
{
	struct web_view *v;
	struct kiln_tree *t;
	struct web_names nm = { 0 };
	struct kiln_buf path = KILN_BUF_INIT;
	struct ct_kid *kids = NULL;
	size_t cap = 0;
	const char *at;
	uint32_t node;
	long n, open, k;
	double min;
	bool reverse;
	int err;

	if (call_num_arg(c, "n", 1, 100000, CT_N_DEFAULT, &n) ||
	    call_num_arg(c, "open", 0, CT_OPEN_MAX, 0, &open) ||
	    call_frac_arg(c, "min", 0, &min) ||
	    call_bool_arg(c, "reverse", &reverse) || call_selection(c, &v))
		return c->status;
	err = kiln_web_view_tree(v, reverse, false, &t, &c->d);
	if (err == -EINVAL)
		return call_fail(c, 400, "%s", c->d.msg);
	if (err) {
		c->err = err;
		return 500;
	}
	/* Read last: an argument's value may live only until the next. */
	at = call_arg(c, "path");
	node = web_tree_walk(c, t, at);
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
	call_add(c, ",\"reverse\":%s,\"levels\":[", reverse ? "true" : "false");
	if (min > 0) {
		size_t nlev = 0;

		emit_deep(c, t, node, &path, n, (int64_t)ceil(min * (double)t->nodes[0].total),
			  &nm, &kids, &cap, &nlev);
	}
	for (k = 0; min <= 0 && !c->err; k++) {
		uint32_t hot;

		if (k)
			call_add(c, ",");
		hot = emit_level(c, t, node, &path, n, 0, &nm, &kids, &cap);
		if (!hot || k >= open || !t->nodes[hot].child)
			break;
		if (path_add(&path, kiln_prof_str(v->prof, t->nodes[hot].name)))
			c->err = -ENOMEM;
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
