/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call graph (render stage): building the graph.  See callgraph.h.
 *
 * The samples are first turned into sequences of node ids (one id per
 * distinct function, or function and line), leaf first, held in one pool.
 * Each pruning step then rebuilds the graph from those sequences with a
 * mask of kept nodes, as pprof rebuilds its graph from the samples: a
 * removed frame between two kept ones makes their edge residual.  The
 * pruning steps are in cgprune.c, the DOT text and graphviz's layout in
 * cgdraw.c; cgint.h is what building and pruning share.
 */
#include "render/callgraph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/top.h"
#include "profile/tree.h"
#include "render/cgint.h"
#include "util/buf.h"
#include "util/htab.h"

/* ---- interning the stacks ---- */

struct info_key {
	const struct work *w;
	const struct info *k;
};

static bool info_eq(const void *ctx, uint32_t id)
{
	const struct info_key *c = ctx;
	const struct info *a = &c->w->info[id];

	return a->name == c->k->name && a->file == c->k->file &&
	       a->line == c->k->line;
}

static uint32_t frame_module(const struct kiln_prof *p, uint32_t loc)
{
	uint32_t m = loc ? p->locations[loc].mapping : 0;

	return m ? p->mappings[m].file : 0;
}

static int intern_node(struct work *w, const struct kiln_frame *f,
		       uint32_t *id)
{
	struct info k = { f->name, 0, 0, 0 };
	struct info_key c = { w, &k };
	uint32_t hash;
	int err;

	if (w->by_line) {
		k.file = f->function ? w->p->functions[f->function].filename : 0;
		k.line = f->line;
	}
	hash = (uint32_t)kiln_hash(&k.name, sizeof(k.name)) ^
	       (uint32_t)(k.file * 0x9E3779B1u) ^
	       (uint32_t)((uint64_t)k.line * 2654435761u);
	*id = kiln_htab_find(&w->index, hash, info_eq, &c);
	if (*id)
		return 0;
	err = kiln_array_grow((void **)&w->info, &w->info_alloc, w->n + 2,
			      sizeof(*w->info));
	if (err)
		return err;
	k.module = frame_module(w->p, f->location);
	w->info[++w->n] = k;
	*id = (uint32_t)w->n;
	return kiln_htab_insert(&w->index, hash, *id);
}

static int intern_samples(struct work *w, int type)
{
	struct kiln_prof *p = w->p;
	struct kiln_frame *frames = NULL;
	size_t cap = 0, i;
	int err = 0;

	for (i = 0; i < p->nsamples; i++) {
		int64_t v = kiln_prof_value(p, i, (size_t)type);
		long nf, j;

		if (!v)
			continue;
		nf = kiln_prof_frames(p, &p->samples[i], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		err = kiln_array_grow((void **)&w->pool, &w->pool_alloc,
				      w->npool + (size_t)nf, sizeof(*w->pool));
		if (!err)
			err = kiln_array_grow((void **)&w->seqs, &w->seqs_alloc,
					      w->nseqs + 1, sizeof(*w->seqs));
		if (err)
			break;
		w->seqs[w->nseqs++] = (struct seq){ (uint32_t)w->npool,
						    (uint32_t)nf, v };
		for (j = 0; j < nf && !err; j++)
			err = intern_node(w, &frames[j], &w->pool[w->npool++]);
		if (err)
			break;
	}
	free(frames);
	return err;
}

/* ---- one build of the graph from the sequences ---- */

struct edge_key {
	const struct work *w;
	uint32_t src, dst;
};

static bool edge_eq(const void *ctx, uint32_t id)
{
	const struct edge_key *k = ctx;
	const struct edge *e = &k->w->e[id - 1];

	return e->src == k->src && e->dst == k->dst;
}

static uint32_t edge_hash(uint32_t src, uint32_t dst)
{
	uint32_t k[2] = { src, dst };

	return (uint32_t)kiln_hash(k, sizeof(k));
}

static int find_edge(struct work *w, uint32_t src, uint32_t dst, uint32_t *id)
{
	struct edge_key k = { w, src, dst };
	uint32_t hash = edge_hash(src, dst);
	int err;

	*id = kiln_htab_find(&w->e_index, hash, edge_eq, &k);
	if (*id)
		return 0;
	err = kiln_array_grow((void **)&w->e, &w->e_alloc, w->ne + 1,
			      sizeof(*w->e));
	if (err)
		return err;
	if (w->e_stamp_alloc < w->e_alloc) {
		uint32_t *s = realloc(w->e_stamp, w->e_alloc * sizeof(*s));

		if (!s)
			return -ENOMEM;
		w->e_stamp = s;
		w->e_stamp_alloc = w->e_alloc;
	}
	w->e[w->ne] = (struct edge){ src, dst, 0, false, true };
	w->e_stamp[w->ne] = 0;
	*id = (uint32_t)++w->ne;
	return kiln_htab_insert(&w->e_index, hash, *id);
}

/*
 * Builds the graph with only the nodes in keep (NULL: all), as pprof's
 * newGraph does: totals once per sample, edges once per sample between
 * consecutive kept frames (residual when frames were skipped between
 * them), self values only where the leaf frame is kept.
 */
int kcg_build(struct work *w, const bool *keep)
{
	size_t n = w->n + 1, s, i;
	int err;

	memset(w->cum, 0, n * sizeof(*w->cum));
	memset(w->flat, 0, n * sizeof(*w->flat));
	memset(w->loop, 0, n * sizeof(*w->loop));
	memset(w->loop_res, 0, n * sizeof(*w->loop_res));
	memset(w->stamp, 0, n * sizeof(*w->stamp));
	memset(w->loop_stamp, 0, n * sizeof(*w->loop_stamp));
	w->ne = 0;
	kiln_htab_release(&w->e_index);
	for (s = 0; s < w->nseqs; s++) {
		const struct seq *q = &w->seqs[s];
		uint32_t parent = 0, mark = (uint32_t)s + 1;
		bool residual = false;
		size_t j;

		for (j = q->n; j-- > 0;) {
			uint32_t node = w->pool[q->off + j];

			if (keep && !keep[node]) {
				residual = true;
				continue;
			}
			if (w->stamp[node] != mark) {
				w->stamp[node] = mark;
				w->cum[node] += q->v;
			}
			if (parent && parent != node) {
				uint32_t id;

				err = find_edge(w, parent, node, &id);
				if (err)
					return err;
				if (w->e_stamp[id - 1] != mark) {
					w->e_stamp[id - 1] = mark;
					w->e[id - 1].w += q->v;
					if (residual)
						w->e[id - 1].residual = true;
				}
			} else if (parent) {
				if (w->loop_stamp[node] != mark) {
					w->loop_stamp[node] = mark;
					w->loop[node] += q->v;
					if (residual)
						w->loop_res[node] = true;
				}
			}
			parent = node;
			residual = false;
		}
		if (parent && !residual)
			w->flat[parent] += q->v;
	}
	w->norder = 0;
	for (i = 1; i < n; i++)
		if ((!keep || keep[i]) && (w->cum[i] || w->flat[i]))
			w->order[w->norder++] = (uint32_t)i;
	return 0;
}

/* ---- the diff base ---- */

struct base_key {
	const struct kiln_prof *bp;
	const struct kiln_top_row *rows;
	const char *name, *file;
	int64_t line;
};

static bool base_eq(const void *ctx, uint32_t id)
{
	const struct base_key *k = ctx;
	const struct kiln_top_row *r = &k->rows[id - 1];

	return r->line == k->line &&
	       !strcmp(kiln_prof_str(k->bp, r->name), k->name) &&
	       !strcmp(kiln_prof_str(k->bp, r->file), k->file);
}

static uint32_t base_hash(const char *name, int64_t line)
{
	return (uint32_t)kiln_hash(name, strlen(name)) ^
	       (uint32_t)((uint64_t)line * 2654435761u);
}

static int add_base(struct kiln_callgraph *g, const struct kiln_callgraph_opts *o)
{
	struct kiln_top t = KILN_TOP_INIT;
	struct kiln_htab index = KILN_HTAB_INIT;
	size_t i;
	int err;

	if (o->base_type < 0 || (size_t)o->base_type >= o->base->ntypes)
		return -EINVAL;
	err = kiln_top_build(&t, o->base, o->base_type,
			     o->by_line ? KILN_TOP_LINES : KILN_TOP_FUNCTIONS, false);
	if (err)
		return err;
	for (i = 0; i < t.n && !err; i++)
		err = kiln_htab_insert(&index,
			base_hash(kiln_prof_str(o->base, t.rows[i].name),
				  t.rows[i].line), (uint32_t)i + 1);
	for (i = 0; i < g->nnodes && !err; i++) {
		struct kiln_callgraph_node *nd = &g->nodes[i];
		struct base_key k = { o->base, t.rows,
				      kiln_prof_str(g->prof, nd->name),
				      kiln_prof_str(g->prof, nd->file), nd->line };
		uint32_t id = kiln_htab_find(&index, base_hash(k.name, k.line),
					     base_eq, &k);

		nd->base = id ? t.rows[id - 1].cum : 0;
	}
	g->has_base = true;
	g->base_total = t.total;
	g->base_by_value = kiln_type_diff_by_value(
		kiln_prof_str(o->base, o->base->types[o->base_type].type),
		kiln_prof_str(o->base, o->base->types[o->base_type].unit));
	kiln_htab_release(&index);
	kiln_top_release(&t);
	return err;
}

/* ---- the pipeline ---- */

static void work_release(struct work *w)
{
	free(w->info);
	kiln_htab_release(&w->index);
	free(w->pool);
	free(w->seqs);
	free(w->cum);
	free(w->flat);
	free(w->loop);
	free(w->loop_res);
	free(w->stamp);
	free(w->loop_stamp);
	free(w->e);
	free(w->e_stamp);
	kiln_htab_release(&w->e_index);
	free(w->order);
	free(w->score);
}

static int keep_only(struct work *w, bool *keep, size_t count)
{
	size_t i;

	memset(keep, 0, (w->n + 1) * sizeof(*keep));
	for (i = 0; i < count; i++)
		keep[w->order[i]] = true;
	return kcg_build(w, keep);
}

static int cmp_out_edges(const void *a, const void *b, void *ctx)
{
	const struct kiln_callgraph_edge *x = a, *y = b;
	struct edge ex = { x->src, x->dst, x->weight, 0, 0 };
	struct edge ey = { y->src, y->dst, y->weight, 0, 0 };

	return kcg_cmp_edge_weight(ctx, &ex, &ey);
}

static int export(struct kiln_callgraph *g, struct work *w)
{
	uint32_t *idx = calloc(w->n + 1, sizeof(*idx));
	size_t i, ne = 0;

	if (!idx)
		return -ENOMEM;
	g->nodes = calloc(w->norder ? w->norder : 1, sizeof(*g->nodes));
	for (i = 0; i < w->ne; i++)
		ne += w->e[i].alive;
	g->edges = calloc(ne ? ne : 1, sizeof(*g->edges));
	if (!g->nodes || !g->edges) {
		free(idx);
		return -ENOMEM;
	}
	for (i = 0; i < w->norder; i++) {
		uint32_t x = w->order[i];
		const struct info *in = &w->info[x];

		idx[x] = (uint32_t)i;
		g->nodes[i] = (struct kiln_callgraph_node){
			in->name, in->module, in->file, in->line, w->flat[x],
			w->cum[x], w->loop[x], w->loop_res[x], 0 };
	}
	g->nnodes = w->norder;
	/* Sorted by the info ids first (names compared through w), then
	 * mapped to the exported indexes. */
	for (i = 0; i < w->ne; i++) {
		const struct edge *e = &w->e[i];

		if (e->alive)
			g->edges[g->nedges++] = (struct kiln_callgraph_edge){
				e->src, e->dst, e->w, e->residual };
	}
	qsort_r(g->edges, g->nedges, sizeof(*g->edges), cmp_out_edges, w);
	for (i = 0; i < g->nedges; i++) {
		g->edges[i].src = idx[g->edges[i].src];
		g->edges[i].dst = idx[g->edges[i].dst];
	}
	free(idx);
	return 0;
}

int kiln_callgraph_build(struct kiln_callgraph *g, struct kiln_prof *p,
			 int type, const struct kiln_callgraph_opts *o)
{
	static const struct kiln_callgraph_opts defaults = KILN_CALLGRAPH_OPTS_INIT;
	struct work w = { 0 };
	bool *keep = NULL;
	size_t n, i;
	int err;

	kiln_callgraph_release(g);
	if (!o)
		o = &defaults;
	if (type < 0 || (size_t)type >= p->ntypes || o->max_nodes < 0 ||
	    !(o->node_fraction >= 0 && o->node_fraction <= 1) ||
	    !(o->edge_fraction >= 0 && o->edge_fraction <= 1))
		return -EINVAL;
	g->prof = p;
	g->type = type;
	w.p = p;
	w.by_line = o->by_line;
	err = intern_samples(&w, type);
	if (err)
		goto out_release;
	n = w.n + 1;
	w.cum = malloc(n * sizeof(*w.cum));
	w.flat = malloc(n * sizeof(*w.flat));
	w.loop = malloc(n * sizeof(*w.loop));
	w.loop_res = malloc(n * sizeof(*w.loop_res));
	w.stamp = malloc(n * sizeof(*w.stamp));
	w.loop_stamp = malloc(n * sizeof(*w.loop_stamp));
	w.order = malloc(n * sizeof(*w.order));
	w.score = calloc(n, sizeof(*w.score));
	keep = malloc(n * sizeof(*keep));
	if (!w.cum || !w.flat || !w.loop || !w.loop_res || !w.stamp ||
	    !w.loop_stamp || !w.order || !w.score || !keep) {
		err = -ENOMEM;
		goto out_release;
	}

	/* The whole graph: its total and the cutoffs. */
	err = kcg_build(&w, NULL);
	if (err)
		goto out_release;
	for (i = 0; i < w.norder; i++)
		g->total += w.flat[w.order[i]];
	g->nodes_all = w.norder;
	g->node_cutoff = abs64((int64_t)((double)g->total * o->node_fraction));
	g->edge_cutoff = abs64((int64_t)((double)g->total * o->edge_fraction));

	/* Nodes below the cutoff. */
	if (g->node_cutoff > 0) {
		size_t kept = 0;

		for (i = 0; i < w.norder; i++)
			if (abs64(w.cum[w.order[i]]) >= g->node_cutoff)
				w.order[kept++] = w.order[i];
		if (kept != w.norder) {
			g->nodes_dropped = w.norder - kept;
			err = keep_only(&w, keep, kept);
			if (err)
				goto out_release;
		}
	}
	g->nodes_before_top = w.norder;

	/* At most max_nodes, by entropy score. */
	err = kcg_sort_entropy(&w);
	if (err)
		goto out_release;
	if (o->max_nodes > 0) {
		/* pprof trims edges before choosing (they weigh in the
		 * entropy score); when no node goes, those edges count as
		 * dropped (pprof's legend forgets them). */
		g->edges_dropped = kcg_trim_edges(&w, g->edge_cutoff);
		if ((size_t)o->max_nodes < w.norder) {
			g->edges_dropped = 0;
			err = keep_only(&w, keep, (size_t)o->max_nodes);
			if (!err)
				err = kcg_sort_entropy(&w);
			if (err)
				goto out_release;
		}
	}

	g->edges_dropped += kcg_trim_edges(&w, g->edge_cutoff);
	err = kcg_remove_redundant(&w);
	if (!err)
		err = export(g, &w);
	if (!err && o->base)
		err = add_base(g, o);
out_release:
	free(keep);
	work_release(&w);
	if (err)
		kiln_callgraph_release(g);
	return err;
}

void kiln_callgraph_release(struct kiln_callgraph *g)
{
	free(g->nodes);
	free(g->edges);
	memset(g, 0, sizeof(*g));
}
