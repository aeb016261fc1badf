/*
 * Call graph (render stage): building and pruning the graph, DOT text,
 * and layout through graphviz's library.  See callgraph.h.
 *
 * The samples are first turned into sequences of node ids (one id per
 * distinct function, or function and line), leaf first, held in one pool.
 * Each pruning step then rebuilds the graph from those sequences with a
 * mask of kept nodes, as pprof rebuilds its graph from the samples: a
 * removed frame between two kept ones makes their edge residual.
 */
#include "render/callgraph.h"

#include <errno.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/top.h"
#include "util/buf.h"
#include "util/htab.h"

/* A node of the whole graph, before pruning. */
struct info {
	uint32_t name, module, file;
	int64_t line;
};

struct seq {
	uint32_t off, n;	/* node ids in pool, leaf first */
	int64_t v;
};

struct edge {
	uint32_t src, dst;
	int64_t w;
	bool residual, alive;
};

struct work {
	struct kiln_prof *p;
	bool by_line;
	struct info *info;		/* [1..n] */
	size_t n, info_alloc;
	struct kiln_htab index;
	uint32_t *pool;
	size_t npool, pool_alloc;
	struct seq *seqs;
	size_t nseqs, seqs_alloc;

	/* One build: values per node id, edges. */
	int64_t *cum, *flat, *loop;
	bool *loop_res;
	uint32_t *stamp, *loop_stamp;
	struct edge *e;
	size_t ne, e_alloc;
	uint32_t *e_stamp;
	size_t e_stamp_alloc;
	struct kiln_htab e_index;

	/* The graph's nodes (nonzero, kept), in sort order. */
	uint32_t *order;
	size_t norder;
	int64_t *score;
};

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
static int build(struct work *w, const bool *keep)
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

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

/* Drops edges (and self loops) lighter than cutoff; returns how many
 * edges went. */
static size_t trim_edges(struct work *w, int64_t cutoff)
{
	size_t i, dropped = 0;

	for (i = 0; i < w->ne; i++) {
		if (w->e[i].alive && abs64(w->e[i].w) < cutoff) {
			w->e[i].alive = false;
			dropped++;
		}
	}
	for (i = 0; i < w->norder; i++)
		if (abs64(w->loop[w->order[i]]) < cutoff)
			w->loop[w->order[i]] = 0;
	return dropped;
}

/* ---- pprof's entropy order ---- */

/* Sorting takes its context through qsort_r(): no global state, so that
 * graphs can be built on several threads at once. */
static int cmp_entropy(const void *a, const void *b, void *ctx)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct work *w = ctx;
	int64_t sx = abs64(w->score[x]), sy = abs64(w->score[y]);
	const struct info *ix = &w->info[x], *iy = &w->info[y];
	int c;

	if (sx != sy)
		return sx > sy ? -1 : 1;
	c = strcmp(kiln_prof_str(w->p, ix->name), kiln_prof_str(w->p, iy->name));
	if (c)
		return c;
	if (abs64(w->flat[x]) != abs64(w->flat[y]))
		return abs64(w->flat[x]) > abs64(w->flat[y]) ? -1 : 1;
	c = strcmp(kiln_prof_str(w->p, ix->file), kiln_prof_str(w->p, iy->file));
	if (c)
		return c;
	if (ix->line != iy->line)
		return ix->line < iy->line ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * pprof's entropyScore: a node scores its total times the entropy of
 * the split of its incoming flows plus that of its outgoing flows (self
 * counting as one outgoing flow); a node with no incoming or no outgoing
 * edge counts 1 for that side.  Pass-through frames score low.
 */
static int sort_entropy(struct work *w)
{
	size_t n = w->n + 1, i;
	int64_t *in_tot = calloc(n, sizeof(*in_tot));
	int64_t *out_tot = calloc(n, sizeof(*out_tot));
	double *in_s = calloc(n, sizeof(*in_s));
	double *out_s = calloc(n, sizeof(*out_s));
	bool *has_in = calloc(n, sizeof(*has_in));
	bool *has_out = calloc(n, sizeof(*has_out));
	int err = 0;

	if (!in_tot || !out_tot || !in_s || !out_s || !has_in || !has_out) {
		err = -ENOMEM;
		goto out_free;
	}
	for (i = 0; i < n; i++)
		out_tot[i] = w->flat[i];
	for (i = 0; i < w->ne; i++) {
		const struct edge *e = &w->e[i];

		if (!e->alive)
			continue;
		has_out[e->src] = has_in[e->dst] = true;
		if (e->w > 0) {
			out_tot[e->src] += e->w;
			in_tot[e->dst] += e->w;
		}
	}
	for (i = 0; i < w->ne; i++) {
		const struct edge *e = &w->e[i];
		double f;

		if (!e->alive)
			continue;
		if (out_tot[e->src]) {
			f = (double)abs64(e->w) / (double)out_tot[e->src];
			out_s[e->src] += -f * log2(f);
		}
		if (in_tot[e->dst]) {
			f = (double)abs64(e->w) / (double)in_tot[e->dst];
			in_s[e->dst] += -f * log2(f);
		}
	}
	for (i = 0; i < w->norder; i++) {
		uint32_t x = w->order[i];
		double sc = 0;

		sc += has_in[x] ? in_s[x] : 1;
		if (!has_out[x]) {
			sc += 1;
		} else {
			sc += out_s[x];
			if (w->flat[x] > 0 && out_tot[x]) {
				double f = (double)w->flat[x] / (double)out_tot[x];

				sc += -f * log2(f);
			}
		}
		w->score[x] = (int64_t)(sc * (double)w->cum[x]) + w->flat[x];
	}
	qsort_r(w->order, w->norder, sizeof(*w->order), cmp_entropy, w);
out_free:
	free(in_tot);
	free(out_tot);
	free(in_s);
	free(out_s);
	free(has_in);
	free(has_out);
	return err;
}

/* ---- removing redundant residual edges ---- */

static int cmp_edge_weight(const struct work *w, const struct edge *a,
			  const struct edge *b)
{
	int c;

	if (a->w != b->w)
		return abs64(a->w) > abs64(b->w) ? -1 : 1;
	c = strcmp(kiln_prof_str(w->p, w->info[a->src].name),
		   kiln_prof_str(w->p, w->info[b->src].name));
	if (c)
		return c;
	return strcmp(kiln_prof_str(w->p, w->info[a->dst].name),
		      kiln_prof_str(w->p, w->info[b->dst].name));
}

static int cmp_edge_idx(const void *a, const void *b, void *ctx)
{
	const struct work *w = ctx;

	return cmp_edge_weight(w, &w->e[*(const uint32_t *)a],
			       &w->e[*(const uint32_t *)b]);
}

/*
 * pprof's RemoveRedundantEdges: from the last node in order back, each
 * node's incoming residual edges, lightest first (stopping at the first
 * non-residual one), are removed when the caller still reaches the node
 * through other edges.
 */
static int remove_redundant(struct work *w)
{
	size_t n = w->n + 1, i, k;
	uint32_t *first = calloc(n + 1, sizeof(*first));
	uint32_t *in = malloc((w->ne + 1) * sizeof(*in));
	uint32_t *seen = calloc(n, sizeof(*seen));
	uint32_t *queue = malloc(n * sizeof(*queue));
	uint32_t gen = 0;
	int err = 0;

	if (!first || !in || !seen || !queue) {
		err = -ENOMEM;
		goto out_free;
	}
	/* Incoming edges grouped by callee, heaviest first. */
	for (i = 0; i < w->ne; i++)
		first[w->e[i].dst + 1]++;
	for (i = 1; i <= n; i++)
		first[i] += first[i - 1];
	{
		uint32_t *fill = calloc(n, sizeof(*fill));

		if (!fill) {
			err = -ENOMEM;
			goto out_free;
		}
		for (i = 0; i < w->ne; i++)
			in[first[w->e[i].dst] + fill[w->e[i].dst]++] = (uint32_t)i;
		free(fill);
	}
	for (i = 0; i < n; i++)
		qsort_r(in + first[i], first[i + 1] - first[i], sizeof(*in),
			cmp_edge_idx, w);
	for (k = w->norder; k-- > 0;) {
		uint32_t node = w->order[k];
		uint32_t j;

		for (j = first[node + 1]; j-- > first[node];) {
			struct edge *e = &w->e[in[j]];
			size_t head = 0, tail = 0;
			bool found = false;

			if (!e->alive)
				continue;
			if (!e->residual)
				break;
			/* Can e->src reach node without e? */
			gen++;
			seen[node] = gen;
			queue[tail++] = node;
			while (head < tail && !found) {
				uint32_t x = queue[head++], m;

				for (m = first[x]; m < first[x + 1]; m++) {
					const struct edge *ie = &w->e[in[m]];

					if (ie == e || !ie->alive ||
					    seen[ie->src] == gen)
						continue;
					if (ie->src == e->src) {
						found = true;
						break;
					}
					seen[ie->src] = gen;
					queue[tail++] = ie->src;
				}
			}
			if (found)
				e->alive = false;
		}
	}
out_free:
	free(first);
	free(in);
	free(seen);
	free(queue);
	return err;
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
	return build(w, keep);
}

static int cmp_out_edges(const void *a, const void *b, void *ctx)
{
	const struct kiln_callgraph_edge *x = a, *y = b;
	struct edge ex = { x->src, x->dst, x->weight, 0, 0 };
	struct edge ey = { y->src, y->dst, y->weight, 0, 0 };

	return cmp_edge_weight(ctx, &ex, &ey);
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
	err = build(&w, NULL);
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
	err = sort_entropy(&w);
	if (err)
		goto out_release;
	if (o->max_nodes > 0) {
		/* pprof trims edges before choosing (they weigh in the
		 * entropy score); when no node goes, those edges count as
		 * dropped (pprof's legend forgets them). */
		g->edges_dropped = trim_edges(&w, g->edge_cutoff);
		if ((size_t)o->max_nodes < w.norder) {
			g->edges_dropped = 0;
			err = keep_only(&w, keep, (size_t)o->max_nodes);
			if (!err)
				err = sort_entropy(&w);
			if (err)
				goto out_release;
		}
	}

	g->edges_dropped += trim_edges(&w, g->edge_cutoff);
	err = remove_redundant(&w);
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

/* ---- DOT ---- */

static double hue_to_rgb(double m1, double m2, double h)
{
	if (h < 0)
		h += 1;
	else if (h > 1)
		h -= 1;
	if (h * 6 < 1)
		return m1 + (m2 - m1) * h * 6;
	if (h * 2 < 1)
		return m2;
	if (h * 3 < 2)
		return m1 + (m2 - m1) * (2.0 / 3.0 - h) * 6;
	return m1;
}

/*
 * gprof2dot's default colour map ("color"): hue, saturation and lightness
 * move linearly from dark blue (2/3, 0.8, 0.25) at 0 to saturated red
 * (0, 1, 0.5) at 1, gamma 1.
 */
static void temperature(double x, char out[8])
{
	double h, s, l, m1, m2, r, gr, b;

	if (!(x > 0))
		x = 0;
	if (x > 1)
		x = 1;
	h = 2.0 / 3.0 + x * (0 - 2.0 / 3.0);
	s = 0.8 + x * (1.0 - 0.8);
	l = 0.25 + x * (0.5 - 0.25);
	m2 = l <= 0.5 ? l * (s + 1) : l + s - l * s;
	m1 = l * 2 - m2;
	r = hue_to_rgb(m1, m2, h + 1.0 / 3.0);
	gr = hue_to_rgb(m1, m2, h);
	b = hue_to_rgb(m1, m2, h - 1.0 / 3.0);
	snprintf(out, 8, "#%02x%02x%02x", (int)lround(r * 255),
		 (int)lround(gr * 255), (int)lround(b * 255));
}

/*
 * Growth colour: near white when a node's share did not change, towards
 * red as it grew and towards blue as it shrank, full at `scale` points.
 */
static void growth(double delta, double scale, char out[8])
{
	double a = fabs(delta) / scale;
	int r, gr, b;

	if (a > 1)
		a = 1;
	if (delta > 0) {
		r = 245;
		gr = 245 - (int)lround(195 * a);
		b = 245 - (int)lround(195 * a);
	} else {
		r = 245 - (int)lround(205 * a);
		gr = 245 - (int)lround(155 * a);
		b = 245;
	}
	snprintf(out, 8, "#%02x%02x%02x", r, gr, b);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

/* Appends s inside a DOT double-quoted string, at most max bytes of it
 * (then "..."); 0 max: all. */
static int add_escaped(struct kiln_buf *b, const char *s, size_t max)
{
	size_t i, len = strlen(s);
	int err = 0;

	if (max && len > max) {
		/* Do not cut a UTF-8 sequence. */
		while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
			max--;
	}
	for (i = 0; i < len && !err; i++) {
		char c = s[i];

		if (max && i == max) {
			err = kiln_buf_adds(b, "...");
			break;
		}
		if (c == '"' || c == '\\')
			err = kiln_buf_addc(b, '\\');
		if (!err)
			err = kiln_buf_addc(b, c == '\n' || c == '\r' ? ' ' : c);
	}
	return err;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int add_url(struct kiln_buf *b, const char *prefix, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	int err = kiln_buf_adds(b, " URL=\"");

	if (!err)
		err = add_escaped(b, prefix, 0);
	for (; *name && !err; name++) {
		unsigned char c = (unsigned char)*name;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_.~", c)) {
			err = kiln_buf_addc(b, (char)c);
		} else {
			char e[4] = { '%', hex[c >> 4], hex[c & 15], 0 };

			err = kiln_buf_adds(b, e);
		}
	}
	if (!err)
		err = kiln_buf_addc(b, '"');
	return err;
}

static int add_legend(const struct kiln_callgraph *g,
		      const struct kiln_callgraph_dot_opts *o,
		      const char *unit, struct kiln_buf *b)
{
	const struct kiln_prof *p = g->prof;
	char v1[32], v2[32];
	int64_t shown = 0;
	size_t i;
	int err;

	for (i = 0; i < g->nnodes; i++)
		shown += g->nodes[i].self;
	err = kiln_buf_adds(b, "  legend [shape=box style=filled fillcolor=\"#ffffff\" "
			       "fontsize=14 tooltip=\"kiln callgraph\" label=\"");
	if (!err && o && o->title) {
		err = add_escaped(b, o->title, 200);
		if (!err)
			err = kiln_buf_adds(b, "\\l");
	}
	kiln_value_str(g->total, unit, v1, sizeof(v1));
	if (!err) {
		err = kiln_buf_adds(b, "Type: ");
		if (!err)
			err = add_escaped(b, kiln_prof_str(p, p->types[g->type].type), 0);
	}
	if (!err)
		err = kiln_buf_addf(b, "\\lTotal: %s\\l", v1);
	kiln_value_str(shown, unit, v2, sizeof(v2));
	if (!err)
		err = kiln_buf_addf(b, "Showing %zu nodes accounting for %s, "
				       "%.2f%% of %s\\l", g->nnodes, v2,
				    pct(shown, g->total), v1);
	kiln_value_str(g->node_cutoff, unit, v1, sizeof(v1));
	if (!err && g->nodes_dropped)
		err = kiln_buf_addf(b, "Dropped %zu node%s (total < %s)\\l",
				    g->nodes_dropped,
				    g->nodes_dropped == 1 ? "" : "s", v1);
	kiln_value_str(g->edge_cutoff, unit, v1, sizeof(v1));
	if (!err && g->edges_dropped)
		err = kiln_buf_addf(b, "Dropped %zu edge%s (weight < %s)\\l",
				    g->edges_dropped,
				    g->edges_dropped == 1 ? "" : "s", v1);
	if (!err && g->nnodes < g->nodes_before_top)
		err = kiln_buf_addf(b, "Showing top %zu nodes out of %zu\\l",
				    g->nnodes, g->nodes_before_top);
	if (!err)
		err = kiln_buf_adds(b, "Dashed edges go through removed frames\\l");
	if (!err && g->has_base) {
		kiln_value_str(g->base_total, unit, v1, sizeof(v1));
		err = kiln_buf_addf(b, "Diff: colour by change of total share "
				       "against the base (total %s): red grew, "
				       "blue shrank\\l", v1);
	}
	if (!err)
		err = kiln_buf_adds(b, "\"]\n");
	return err;
}

static double node_delta(const struct kiln_callgraph *g,
			 const struct kiln_callgraph_node *n)
{
	return pct(n->total, g->total) - pct(n->base, g->base_total);
}

static int add_node(const struct kiln_callgraph *g,
		    const struct kiln_callgraph_dot_opts *o, size_t i,
		    const char *unit, int64_t max_self, double diff_scale,
		    struct kiln_buf *b)
{
	const struct kiln_prof *p = g->prof;
	const struct kiln_callgraph_node *n = &g->nodes[i];
	const char *name = kiln_prof_str(p, n->name);
	char fill[8], tv[32], sv[32];
	double fs = 10;
	int err;

	if (max_self > 0 && n->self > 0)
		fs += 14 * sqrt((double)n->self / (double)max_self);
	if (g->has_base)
		growth(node_delta(g, n), diff_scale, fill);
	else
		temperature(g->total ? (double)n->total / (double)g->total : 0,
			    fill);
	kiln_value_str(n->total, unit, tv, sizeof(tv));
	kiln_value_str(n->self, unit, sv, sizeof(sv));
	err = kiln_buf_addf(b, "  N%zu [label=\"", i + 1);
	if (!err)
		err = add_escaped(b, name, 80);
	if (!err && n->file) {
		err = kiln_buf_adds(b, "\\n");
		if (!err)
			err = add_escaped(b, basename_of(kiln_prof_str(p, n->file)), 80);
		if (!err)
			err = kiln_buf_addf(b, ":%" PRId64, n->line);
	}
	if (!err && n->module) {
		err = kiln_buf_adds(b, "\\n");
		if (!err)
			err = add_escaped(b, basename_of(kiln_prof_str(p, n->module)), 60);
	}
	if (!err)
		err = kiln_buf_addf(b, "\\ntotal %.2f%% (%s)\\nself %.2f%% (%s)",
				    pct(n->total, g->total), tv,
				    pct(n->self, g->total), sv);
	if (!err && g->has_base)
		err = kiln_buf_addf(b, "\\n%+.2f points", node_delta(g, n));
	if (!err)
		err = kiln_buf_addf(b, "\" fontsize=%.1f fillcolor=\"%s\" "
				       "fontcolor=\"%s\" tooltip=\"", fs, fill,
				    g->has_base ? "#000000" : "#ffffff");
	if (!err)
		err = add_escaped(b, name, 0);
	if (!err && n->file) {
		err = kiln_buf_addc(b, ' ');
		if (!err)
			err = add_escaped(b, kiln_prof_str(p, n->file), 0);
		if (!err)
			err = kiln_buf_addf(b, ":%" PRId64, n->line);
	}
	if (!err)
		err = kiln_buf_addf(b, " (total %s, self %s)\"", tv, sv);
	if (!err && o && o->href_prefix)
		err = add_url(b, o->href_prefix, name);
	if (!err)
		err = kiln_buf_adds(b, "]\n");
	return err;
}

static int add_edge(const struct kiln_callgraph *g, uint32_t src,
		    uint32_t dst, int64_t wt, bool residual, const char *unit,
		    int64_t max_w, struct kiln_buf *b)
{
	const struct kiln_prof *p = g->prof;
	double pw = max_w > 0 ? 0.5 + 4.5 * (double)wt / (double)max_w : 1;
	char col[8], v[32];
	int err;

	if (pw < 0.5)
		pw = 0.5;
	temperature(g->total ? (double)wt / (double)g->total : 0, col);
	kiln_value_str(wt, unit, v, sizeof(v));
	err = kiln_buf_addf(b, "  N%u -> N%u [label=\" %.2f%%\" penwidth=%.2f "
			       "arrowsize=%.2f color=\"%s\" weight=%d%s "
			       "tooltip=\"", src + 1, dst + 1,
			    pct(wt, g->total), pw, 0.5 * sqrt(pw), col,
			    1 + (int)(100 * (double)wt / (double)(g->total ? g->total : 1)),
			    residual ? " style=dashed" : "");
	if (!err)
		err = add_escaped(b, kiln_prof_str(p, g->nodes[src].name), 200);
	if (!err)
		err = kiln_buf_adds(b, " -> ");
	if (!err)
		err = add_escaped(b, kiln_prof_str(p, g->nodes[dst].name), 200);
	if (!err)
		err = kiln_buf_addf(b, " (%s%s)\"]\n", v,
				    residual ? ", through removed frames" : "");
	return err;
}

int kiln_callgraph_dot(const struct kiln_callgraph *g,
		       const struct kiln_callgraph_dot_opts *o,
		       struct kiln_buf *b)
{
	const struct kiln_prof *p = g->prof;
	const char *unit = p && p->ntypes ?
		kiln_prof_str(p, p->types[g->type].unit) : "";
	int64_t max_self = 0, max_w = 0;
	double diff_scale = 1;
	size_t i;
	int err;

	for (i = 0; i < g->nnodes; i++) {
		if (g->nodes[i].self > max_self)
			max_self = g->nodes[i].self;
		if (g->nodes[i].loop > max_w)
			max_w = g->nodes[i].loop;
		if (g->has_base && fabs(node_delta(g, &g->nodes[i])) > diff_scale)
			diff_scale = fabs(node_delta(g, &g->nodes[i]));
	}
	for (i = 0; i < g->nedges; i++)
		if (g->edges[i].weight > max_w)
			max_w = g->edges[i].weight;
	err = kiln_buf_adds(b, "digraph \"kiln callgraph\" {\n"
			       "  graph [fontname=\"Helvetica\" ranksep=0.35 nodesep=0.3]\n"
			       "  node [fontname=\"Helvetica\" shape=box style=\"filled\" "
			       "margin=\"0.12,0.06\"]\n"
			       "  edge [fontname=\"Helvetica\" fontsize=10]\n");
	if (!err && p)
		err = add_legend(g, o, unit, b);
	for (i = 0; i < g->nnodes && !err; i++)
		err = add_node(g, o, i, unit, max_self, diff_scale, b);
	for (i = 0; i < g->nedges && !err; i++)
		err = add_edge(g, g->edges[i].src, g->edges[i].dst,
			       g->edges[i].weight, g->edges[i].residual, unit,
			       max_w, b);
	for (i = 0; i < g->nnodes && !err; i++)
		if (g->nodes[i].loop)
			err = add_edge(g, (uint32_t)i, (uint32_t)i,
				       g->nodes[i].loop, g->nodes[i].loop_residual,
				       unit, max_w, b);
	if (!err)
		err = kiln_buf_adds(b, "}\n");
	return err;
}

/* ---- layout and drawing through libgvc ---- */

static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *gv_ctx;

/* graphviz reports errors through this instead of printing them. */
static int gv_quiet(char *msg)
{
	return 0;
}

int kiln_callgraph_render(const char *dot, size_t len, const char *fmt,
			  struct kiln_buf *out)
{
	Agraph_t *gr = NULL;
	char *text, *data = NULL;
	unsigned int dlen = 0;
	int err = 0;

	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, dot, len);
	text[len] = '\0';
	pthread_mutex_lock(&gv_lock);
	agseterrf(gv_quiet);
	agseterr(AGMAX);
	if (!gv_ctx)
		gv_ctx = gvContext();
	if (!gv_ctx) {
		err = -ENOMEM;
		goto out_unlock;
	}
	gr = agmemread(text);
	if (!gr) {
		err = -EINVAL;
		goto out_unlock;
	}
	if (gvLayout(gv_ctx, gr, "dot")) {
		err = -EINVAL;
		goto out_close;
	}
	if (gvRenderData(gv_ctx, gr, fmt, &data, &dlen) || !data) {
		err = -EINVAL;
		goto out_layout;
	}
	err = kiln_buf_add(out, data, dlen);
	gvFreeRenderData(data);
out_layout:
	gvFreeLayout(gv_ctx, gr);
out_close:
	agclose(gr);
out_unlock:
	pthread_mutex_unlock(&gv_lock);
	free(text);
	return err;
}
