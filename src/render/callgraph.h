/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call graph (render stage): the graph behind `kiln callgraph` and the
 * call graph view of `kiln serve`, built from the profile model, written
 * as DOT text and laid out and drawn in process by graphviz's library.
 *
 * Owner: the callgraph work (issue 13).  Callers: src/cli/cmd-callgraph.c
 * and the web UI (src/web/).  The three steps are separate so that a
 * server can keep a graph, or its DOT text, and draw it in any format:
 *
 *     struct kiln_callgraph g = KILN_CALLGRAPH_INIT;
 *     kiln_callgraph_build(&g, p, type, &opts);     // the graph, pruned
 *     kiln_callgraph_dot(&g, &dot_opts, &dot);       // DOT text
 *     kiln_callgraph_render(dot.data, dot.len, "svg", &svg);
 *     kiln_callgraph_release(&g);
 *
 * The graph: a node per function name (or per function, file and line
 * with by_line), with its self value (samples where it is the leaf) and
 * total value (samples with it anywhere on the stack, counted once per
 * sample however deep the recursion).  An edge caller -> callee weighs
 * the samples whose stack has that call, once per sample.  Pruning
 * follows google/pprof's report (internal/graph and internal/report):
 * nodes whose total is below node_fraction of the whole are removed
 * first, then at most max_nodes nodes are kept, chosen by pprof's
 * entropy score (entry and leaf nodes, and nodes that split or join
 * flows, before pass-through frames).  The graph is rebuilt from the
 * samples after each step, so that a call through removed frames becomes
 * a residual edge (drawn dashed) from the nearest kept caller to the
 * nearest kept callee: the graph stays connected.  Edges below
 * edge_fraction of the whole are then dropped, and residual edges whose
 * callee is still reachable from their caller another way are removed.
 * Direct recursion (f calling f) is a self loop on f; pprof leaves those
 * out, kiln draws them.  Recursion and cycles are never an error.
 *
 * Ownership: struct kiln_callgraph is embedded by the caller; build
 * fills arrays that it owns and release frees them.  Names are string ids
 * of the profile p given to build: p must outlive the graph (and the base
 * profile of a diff must live until build returns).
 *
 * Thread safety: build and dot keep no global state, but build interns
 * the names of unsymbolized frames into p (as kiln_prof_frames() does):
 * two builds on the same profile must not run at once; on different
 * profiles they may.  graphviz's library is not thread-safe, so
 * kiln_callgraph_render() takes a process-wide lock around its use of it.
 */
#ifndef KILN_RENDER_CALLGRAPH_H
#define KILN_RENDER_CALLGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_diag;
struct kiln_prof;
struct kiln_buf;

struct kiln_callgraph_opts {
	double node_fraction;	/* drop nodes below this share of the total */
	double edge_fraction;	/* drop edges below this share */
	int max_nodes;		/* keep at most this many nodes; 0: all */
	bool by_line;		/* a node per source line */
	/* --diff: colours from the change of each node's total share
	 * against this profile's (matched by name).  NULL: none. */
	struct kiln_prof *base;
	int base_type;
};

/* pprof's and `kiln callgraph`'s defaults. */
#define KILN_CALLGRAPH_OPTS_INIT { 0.005, 0.001, 80, false, NULL, 0 }

struct kiln_callgraph_node {
	uint32_t name;		/* string id of the function name */
	uint32_t module;	/* string id of the mapping's file, 0 if none */
	uint32_t file;		/* string id of the source file, by_line only */
	int64_t line;		/* by_line only */
	int64_t self;		/* value where this is the leaf frame */
	int64_t total;		/* value of samples with it on the stack */
	int64_t loop;		/* self loop (direct recursion) weight, 0 none */
	bool loop_residual;	/* the loop goes through removed frames */
	int64_t base;		/* diff: the base profile's total, raw */
};

struct kiln_callgraph_edge {
	uint32_t src, dst;	/* node indexes: caller, callee (src != dst) */
	int64_t weight;		/* samples with this call, once per sample */
	bool residual;		/* goes over removed frames: drawn dashed */
};

struct kiln_callgraph {
	/* Kept nodes, in pprof's final (entropy) order. */
	struct kiln_callgraph_node *nodes;
	size_t nnodes;
	/* Kept edges, heaviest first. */
	struct kiln_callgraph_edge *edges;
	size_t nedges;
	int64_t total;		/* sum of the type's values, whole profile */
	int64_t node_cutoff;	/* nodes with total below it were dropped */
	int64_t edge_cutoff;	/* edges with weight below it were dropped */
	size_t nodes_all;	/* nodes before any pruning */
	size_t nodes_dropped;	/* by node_cutoff */
	size_t nodes_before_top; /* after node_cutoff, before max_nodes */
	size_t edges_dropped;	/* by edge_cutoff (last step) */
	bool has_base;
	int64_t base_total;	/* diff: the base profile's whole total */
	bool base_by_value;	/* diff: compared by value (heap types), not
				 * by share (kiln_type_diff_by_value()) */
	int type;		/* sample type index in prof */
	struct kiln_prof *prof;	/* names live in its string table */
};

#define KILN_CALLGRAPH_INIT { 0 }

/*
 * Builds the pruned call graph of sample type `type` of p into g
 * (released first).  o NULL: the defaults.  p is not const: frames of
 * unsymbolized locations get their names interned.
 * 0, -EINVAL (type out of range, bad option) or -ENOMEM.
 */
int kiln_callgraph_build(struct kiln_callgraph *g, struct kiln_prof *p,
			 int type, const struct kiln_callgraph_opts *o);
/* Frees the arrays; g is empty and reusable. */
void kiln_callgraph_release(struct kiln_callgraph *g);

struct kiln_callgraph_dot_opts {
	const char *title;	/* first legend line, e.g. the file name */
	/* Links in SVG output: a node's URL is this prefix followed by its
	 * name, URL-escaped (kiln serve's focus links).  NULL: none. */
	const char *href_prefix;
};

/*
 * Appends the graph as DOT text to out: nodes labelled name, module,
 * total % and self %, coloured by total on gprof2dot's blue-to-red scale
 * (by change of share with a base), font sized by self; edges labelled
 * with their percentage, width by weight, residual ones dashed; a legend
 * node with the totals and what was dropped.  o may be NULL.
 * 0 or -ENOMEM.
 */
int kiln_callgraph_dot(const struct kiln_callgraph *g,
		       const struct kiln_callgraph_dot_opts *o,
		       struct kiln_buf *out);

/*
 * Lays out DOT text with graphviz's dot layout and appends the drawing in
 * format fmt ("svg", "png", "pdf", or any format of graphviz's plugins)
 * to out, in process.  0, -EINVAL (DOT syntax error, unknown format,
 * layout failure), -ENOMEM, or -ENOENT when graphviz's library cannot be
 * loaded (it is loaded by the first call; d, which may be NULL, says
 * which library and package).
 */
int kiln_callgraph_render(const char *dot, size_t len, const char *fmt,
			  struct kiln_buf *out, struct kiln_diag *d);

#endif
