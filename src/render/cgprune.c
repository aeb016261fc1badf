/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call graph (render stage): pruning, as pprof prunes -- edges under the
 * cutoff trimmed, nodes ordered by pprof's entropy score, residual edges
 * that a path of kept edges already explains removed.  Each step works on
 * one build of the graph (cgint.h, built by callgraph.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "profile/profile.h"
#include "render/cgint.h"

/* Drops edges (and self loops) lighter than cutoff; returns how many
 * edges went. */
size_t kcg_trim_edges(struct work *w, int64_t cutoff)
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
int kcg_sort_entropy(struct work *w)
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

int kcg_cmp_edge_weight(const struct work *w, const struct edge *a,
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

	return kcg_cmp_edge_weight(w, &w->e[*(const uint32_t *)a],
			       &w->e[*(const uint32_t *)b]);
}

/*
 * pprof's RemoveRedundantEdges: from the last node in order back, each
 * node's incoming residual edges, lightest first (stopping at the first
 * non-residual one), are removed when the caller still reaches the node
 * through other edges.
 */
int kcg_remove_redundant(struct work *w)
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
