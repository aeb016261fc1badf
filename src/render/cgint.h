/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The call graph's building state (render stage), shared by callgraph.c
 * (the samples interned into node sequences, one build of the graph from
 * them, the pipeline) and cgprune.c (the pruning steps on a build).
 */
#ifndef KILN_RENDER_CGINT_H
#define KILN_RENDER_CGINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/htab.h"

struct kiln_prof;

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

static inline int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

/* One build of the graph from the sequences, nodes masked by keep (NULL:
 * all); callgraph.c. */
int kcg_build(struct work *w, const bool *keep);

/* cgprune.c; the edge order (heavier first) is also the exported one. */
int kcg_cmp_edge_weight(const struct work *w, const struct edge *a,
			const struct edge *b);
size_t kcg_trim_edges(struct work *w, int64_t cutoff);
int kcg_sort_entropy(struct work *w);
int kcg_remove_redundant(struct work *w);

#endif
