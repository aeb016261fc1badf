/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call graph (render stage): drawing -- the DOT text with gprof2dot's
 * colours, pprof's legend and labels, and the layout and drawing through
 * graphviz's library (libgvc).  The graph comes built and pruned from
 * callgraph.c; see callgraph.h.
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
#include "util/diag.h"
#include "util/lazylib.h"

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
		err = kiln_buf_addf(b, "Diff: colour by change of total %s "
				       "against the base (total %s): red grew, "
				       "blue shrank\\l",
				    g->base_by_value ? "value" : "share", v1);
	}
	if (!err)
		err = kiln_buf_adds(b, "\"]\n");
	return err;
}

static double node_delta(const struct kiln_callgraph *g,
			 const struct kiln_callgraph_node *n)
{
	int64_t most = g->total > g->base_total ? g->total : g->base_total;

	/* As kiln_tree_change(): heap types by value, the rest by share. */
	if (g->base_by_value)
		return most > 0 ? 100.0 * ((double)n->total - (double)n->base) /
				  (double)most : 0;
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
	if (!err && g->has_base && g->base_by_value) {
		char dv[32];

		kiln_value_str(n->total >= n->base ? n->total - n->base :
			       n->base - n->total, unit, dv, sizeof(dv));
		err = kiln_buf_addf(b, "\\n%s%s since the base",
				    n->total >= n->base ? "+" : "-", dv);
	} else if (!err && g->has_base) {
		err = kiln_buf_addf(b, "\\n%+.2f points", node_delta(g, n));
	}
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

/* graphviz, loaded by the first call graph drawn (util/lazylib.h): the
 * ag* functions are libcgraph's, which libgvc loads. */
#define GV_FNS(X)                                                          \
	X(gvContext, gvContext) X(gvLayout, gvLayout)                      \
	X(gvRenderData, gvRenderData) X(gvFreeRenderData, gvFreeRenderData) \
	X(gvFreeLayout, gvFreeLayout) X(agseterrf, agseterrf)              \
	X(agseterr, agseterr) X(agmemread, agmemread) X(agclose, agclose)
KILN_LAZYLIB(gv, KILN_SONAME_GVC, KILN_PKG_GVC, GV_FNS);
#define GV (gv_fns.f)

static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *gv_ctx;

/* graphviz reports errors through this instead of printing them. */
static int gv_quiet(char *msg)
{
	return 0;
}

int kiln_callgraph_render(const char *dot, size_t len, const char *fmt,
			  struct kiln_buf *out, struct kiln_diag *d)
{
	Agraph_t *gr = NULL;
	char *text, *data = NULL;
	unsigned int dlen = 0;
	int err = 0;

	err = kiln_lazylib_open(&gv, d);
	if (err)
		return err;
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, dot, len);
	text[len] = '\0';
	pthread_mutex_lock(&gv_lock);
	GV.agseterrf(gv_quiet);
	GV.agseterr(AGMAX);
	if (!gv_ctx)
		gv_ctx = GV.gvContext();
	if (!gv_ctx) {
		err = -ENOMEM;
		goto out_unlock;
	}
	gr = GV.agmemread(text);
	if (!gr) {
		err = -EINVAL;
		goto out_unlock;
	}
	if (GV.gvLayout(gv_ctx, gr, "dot")) {
		err = -EINVAL;
		goto out_close;
	}
	if (GV.gvRenderData(gv_ctx, gr, fmt, &data, &dlen) || !data) {
		err = -EINVAL;
		goto out_layout;
	}
	err = kiln_buf_add(out, data, dlen);
	GV.gvFreeRenderData(data);
out_layout:
	GV.gvFreeLayout(gv_ctx, gr);
out_close:
	GV.agclose(gr);
out_unlock:
	pthread_mutex_unlock(&gv_lock);
	free(text);
	return err;
}
