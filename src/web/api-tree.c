/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tree views of kiln serve's API (web stage): /api/flame (flame graph
 * nodes at least `min` pixels wide under a zoom root, with the search's
 * matched share) and /api/sandwich (callers and callees of one function,
 * merged over the tree).  Only what one view draws is sent.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <regex.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "render/flame.h"
#include "util/buf.h"
#include "web/call.h"

/* ---- tree nodes, shared by the flame graph and the sandwich ---- */

/* A search regex: "(?i)" in front makes it case-insensitive. */
struct search {
	bool on;
	regex_t re;
	uint8_t *cache;		/* string id -> 0 unknown, 1 no, 2 yes */
	size_t ncache;
};

static int search_init(struct call *c, struct search *s,
		       const struct kiln_prof *p)
{
	const char *src = call_arg(c, "search");
	int flags = REG_EXTENDED | REG_NOSUB, rc;
	char msg[256];

	memset(s, 0, sizeof(*s));
	if (!src || !*src)
		return 0;
	if (!strncmp(src, "(?i)", 4)) {
		flags |= REG_ICASE;
		src += 4;
	}
	rc = regcomp(&s->re, src, flags);
	if (rc) {
		regerror(rc, &s->re, msg, sizeof(msg));
		call_fail(c, 400, "bad search regular expression '%s': %s",
		     call_arg(c, "search"), msg);
		return -1;
	}
	s->on = true;
	return 0;
}

/* Whether string id name matches; p's strings may grow between calls. */
static bool search_match(struct search *s, const struct kiln_prof *p,
			 uint32_t name)
{
	if (!s->on)
		return false;
	if (name >= s->ncache) {
		size_t n = p->nstrs + 64;
		uint8_t *nc = realloc(s->cache, n);

		if (!nc)
			return !regexec(&s->re, kiln_prof_str(p, name), 0, NULL, 0);
		memset(nc + s->ncache, 0, n - s->ncache);
		s->cache = nc;
		s->ncache = n;
	}
	if (!s->cache[name])
		s->cache[name] = regexec(&s->re, kiln_prof_str(p, name), 0,
					 NULL, 0) ? 1 : 2;
	return s->cache[name] == 2;
}

static void search_release(struct search *s)
{
	if (s->on)
		regfree(&s->re);
	free(s->cache);
}

/*
 * The value of the samples with a frame matching the search, each counted
 * once (the totals of the outermost matching nodes): in the whole tree
 * (returned) and under node `root` (*in_root; ancestors of root do not
 * count there).  One pass over the node array in index order: a node is
 * always added after its parent, so the parent's flags are known.
 * -1 when out of memory.
 */
static int64_t matched(const struct kiln_tree *t, uint32_t root,
		       struct search *s, int64_t *in_root)
{
	enum { MATCH = 1, INSIDE = 2, SUB = 4, INSIDE_SUB = 8 };
	uint8_t *f;
	int64_t all = 0, sub = 0;
	uint32_t i;

	*in_root = 0;
	if (!s->on)
		return 0;
	f = calloc(t->n ? t->n : 1, 1);
	if (!f)
		return -1;
	f[0] = root ? 0 : SUB;
	for (i = 1; i < t->n; i++) {
		const struct kiln_tree_node *n = &t->nodes[i];
		uint32_t par = n->parent;
		uint8_t pf = f[par], x = 0;

		if (par >= i) {		/* never: nodes come after their parent */
			free(f);
			return -1;
		}
		if (search_match(s, t->prof, n->name))
			x |= MATCH;
		if ((pf & INSIDE) || (par && (pf & MATCH)))
			x |= INSIDE;
		if (i == root || (pf & SUB))
			x |= SUB;
		if (i != root && (pf & SUB) && ((pf & INSIDE_SUB) || (par && (pf & MATCH))))
			x |= INSIDE_SUB;
		f[i] = x;
		if ((x & MATCH) && !(x & INSIDE))
			all += n->total;
		if ((x & MATCH) && (x & SUB) && !(x & INSIDE_SUB))
			sub += n->total;
	}
	free(f);
	*in_root = sub;
	return all;
}

uint32_t web_name_ref(struct call *c, struct web_names *nm,
		      const struct kiln_prof *p, uint32_t s)
{
	if (s >= nm->nidx) {
		size_t n = p->nstrs + 64;
		uint32_t *ni = realloc(nm->idx, n * sizeof(*ni));

		if (!ni) {
			c->err = -ENOMEM;
			return 0;
		}
		memset(ni + nm->nidx, 0, (n - nm->nidx) * sizeof(*ni));
		nm->idx = ni;
		nm->nidx = n;
	}
	if (!nm->idx[s]) {
		/* names are written after the nodes: remember the order */
		nm->idx[s] = ++nm->n;
	}
	return nm->idx[s] - 1;
}

void web_names_write(struct call *c, struct web_names *nm,
		     const struct kiln_prof *p)
{
	uint32_t *order = calloc(nm->n + 1, sizeof(*order));
	size_t s;
	uint32_t i;

	if (!order) {
		c->err = -ENOMEM;
		return;
	}
	for (s = 0; s < nm->nidx; s++)
		if (nm->idx[s])
			order[nm->idx[s] - 1] = (uint32_t)s;
	call_add(c, "\"names\":[");
	for (i = 0; i < nm->n; i++) {
		call_add(c, i ? "," : "");
		call_add_str(c, kiln_prof_str(p, order[i]));
	}
	call_add(c, "]");
	free(order);
}

uint32_t web_node_module(const struct kiln_prof *p,
			 const struct kiln_tree_node *n)
{
	const struct kiln_location *l;

	if (!n->location || n->location > p->nlocations)
		return 0;
	l = &p->locations[n->location];
	return l->mapping ? p->mappings[l->mapping].file : 0;
}

/* How a flame graph is laid out (render/flame.h, the one layout): children
 * in name order, or heaviest first (left-heavy); and the window drawn,
 * [lo, hi) in the zoom root's value from its left edge (a wheel or drag
 * zoom: nodes outside it are not sent, nodes inside at least min_px wide
 * when the window spans width_px). */
struct emit_win {
	bool heavy;
	int64_t lo, hi;
};

/* How nodes are compared with the diff base (kiln_tree_change()). */
enum diff_mode { DIFF_NONE, DIFF_SHARE, DIFF_VALUE };

/* Node i's change against the base, in percentage points. */
static double node_change(const struct kiln_tree *t, uint32_t i,
			  enum diff_mode diff)
{
	return kiln_tree_change(t, t->nodes[i].total, t->nodes[i].base,
				diff == DIFF_VALUE);
}

struct emit_ctx {
	struct call *c;
	const struct kiln_tree *t;
	enum diff_mode diff;
	double dscale;		/* the differential colours' scale */
	struct search *s;
	struct web_names *nm;
	uint32_t maxdepth;
	size_t count;
};

/* The largest change among the nodes drawn, at least one point (kiln
 * flame's rule: the same walk, render/flamelayout.c). */
static int measure_delta(void *ctx, const struct kiln_flame_box *b)
{
	struct emit_ctx *e = ctx;
	double d = fabs(node_change(e->t, b->node, e->diff));

	if (d > e->dscale)
		e->dscale = d;
	return 0;
}

/* One node: [name, depth, x, total, self, kind, module, file, line,
 * match, rgb(, base)]. */
static int emit_node(void *ctx, const struct kiln_flame_box *b)
{
	struct emit_ctx *e = ctx;
	struct call *c = e->c;
	const struct kiln_tree *t = e->t;
	const struct kiln_prof *p = t->prof;
	const struct kiln_tree_node *nd = &t->nodes[b->node];
	uint32_t file = nd->function ? p->functions[nd->function].filename : 0;
	uint32_t mod = web_node_module(p, nd);
	/* -1: no name (the root, drawn as "all"), module or file */
	int64_t iname = b->node ? (int64_t)web_name_ref(c, e->nm, p, nd->name) : -1;
	int64_t imod = mod ? (int64_t)web_name_ref(c, e->nm, p, mod) : -1;
	int64_t ifile = file ? (int64_t)web_name_ref(c, e->nm, p, file) : -1;

	call_add(c, "%s[%" PRId64 ",%u,%" PRId64 ",%" PRId64 ",%" PRId64
	    ",%u,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d",
	    e->count++ ? "," : "", iname, b->depth, b->x, nd->total,
	    nd->self, nd->kind, imod, ifile, nd->line,
	    b->node && search_match(e->s, p, nd->name));
	/* The colour kiln flame draws the frame in (the one palette:
	 * render/flame.h); the root's is the page's own. */
	call_add(c, ",%" PRIu32, !b->node ? 0 : e->diff ?
		 kiln_flame_diff_rgb(node_change(t, b->node, e->diff), e->dscale) :
		 kiln_flame_node_rgb(p, kiln_prof_str(p, nd->name),
				     kiln_prof_strlen(p, nd->name),
				     (enum kiln_kind)nd->kind));
	/* The diff base's value on the same path: as it is where values
	 * are compared, else scaled to this profile's total (shares). */
	if (e->diff == DIFF_VALUE)
		call_add(c, ",%" PRId64, nd->base);
	else if (e->diff)
		call_add(c, ",%.0f", kiln_tree_base_scaled(t, b->node));
	call_add(c, "]");
	if (b->depth > e->maxdepth)
		e->maxdepth = b->depth;
	return c->err;
}

/*
 * Writes "nodes":[[name, depth, x, total, ...], ...] (emit_node()) for
 * the subtree of node `from` as the one flame graph layout places it
 * (render/flame.h: depth-first, children in name order or w's, x the
 * value left of the node within `from`, only nodes at least min_px wide
 * when `from` (or w's window) spans width_px, with w only those that
 * overlap its window; narrow runs are not merged: the page asks again
 * when zoomed).  Name, module and file are indexes in "names".
 * *maxdepth gets the deepest written depth, *dropped the count of
 * children left out.
 */
static void emit_nodes(struct call *c, const struct kiln_tree *t,
		       uint32_t from, double width_px, double min_px,
		       enum diff_mode diff,
		       const struct emit_win *w, struct search *s,
		       struct web_names *nm, uint32_t *maxdepth, size_t *dropped)
{
	int64_t span = w && w->hi > w->lo ? w->hi - w->lo : t->nodes[from].total;
	struct kiln_flame_walk lay = {
		.t = t, .from = from, .min_width = min_px,
		.scale = span > 0 ? width_px / (double)span : 0,
		.heavy = w && w->heavy,
		.lo = w ? w->lo : 0, .hi = w ? w->hi : 0,
	};
	struct emit_ctx e = { c, t, diff, 1.0, s, nm, 0, 0 };
	int err = 0;

	if (diff) {
		/* Over the whole subtree, not the window: a zoom keeps the
		 * colours. */
		struct kiln_flame_walk all = lay;

		all.lo = all.hi = 0;
		err = kiln_flame_walk(&all, measure_delta, &e);
	}
	call_add(c, "\"nodes\":[");
	if (!err)
		err = kiln_flame_walk(&lay, emit_node, &e);
	if (err && !c->err)
		c->err = err;
	call_add(c, "]");
	*maxdepth = e.maxdepth;
	*dropped = lay.dropped;
}

uint32_t web_path_walk(struct call *c, const char *path,
		       uint32_t (*step)(void *ctx, uint32_t node, const char *name),
		       void *ctx)
{
	struct kiln_buf name = KILN_BUF_INIT;
	uint32_t cur = 0;
	const char *s = path;

	if (!path || !*path)
		return 0;
	for (;;) {
		if (*s == '\\' && s[1]) {
			s++;
		} else if (*s == ';' || !*s) {
			uint32_t next = name.len ? step(ctx, cur, name.data) : 0;

			if (!next) {
				if (c->err)
					break;
				call_fail(c, 404, "no frame '%s' on the path '%.*s' "
				     "(a root path names frames from the outermost, "
				     "separated by ';')", name.len ? name.data : "",
				     (int)(s - path), path);
				kiln_buf_release(&name);
				return UINT32_MAX;
			}
			cur = next;
			kiln_buf_reset(&name);
			if (!*s)
				break;
			s++;
			continue;
		}
		if (kiln_buf_addc(&name, *s)) {
			c->err = -ENOMEM;
			break;
		}
		s++;
	}
	kiln_buf_release(&name);
	return c->err ? UINT32_MAX : cur;
}

static uint32_t tree_step(void *ctx, uint32_t node, const char *name)
{
	return kiln_tree_find(ctx, node, name);
}

uint32_t web_tree_walk(struct call *c, const struct kiln_tree *t,
		       const char *path)
{
	return web_path_walk(c, path, tree_step, (void *)t);
}

/* ---- /api/flame ---- */

int web_api_flame(struct call *c)
{
	struct web_view *v;
	struct kiln_tree *t;
	struct search s;
	struct web_names nm = { 0 };
	uint32_t root, i, maxdepth, *chain = NULL;
	size_t dropped, nchain = 0, ccap = 0;
	long width, min;
	bool reverse, diff, absolute;
	enum diff_mode mode = DIFF_NONE;
	int64_t m_all, m_root;
	struct emit_win w = { false, 0, 0 };
	double x0, x1;
	int err;

	if (call_num_arg(c, "width", 1, WEB_WIDTH_MAX, 1200, &width) ||
	    call_num_arg(c, "min", 1, WEB_WIDTH_MAX, 1, &min) ||
	    call_bool_arg(c, "reverse", &reverse) || call_bool_arg(c, "diff", &diff) ||
	    call_bool_arg(c, "heavy", &w.heavy) ||
	    call_bool_arg(c, "absolute", &absolute) ||
	    call_frac_arg(c, "x0", 0, &x0) || call_frac_arg(c, "x1", 1, &x1))
		return c->status;
	if (x1 <= x0)
		return call_fail(c, 400, "bad window: x0 %g is not left of x1 %g", x0, x1);
	if (call_selection_weighed(c, &v))
		return c->status;
	err = kiln_web_view_tree(v, reverse, diff, &t, &c->d);
	if (err == -EINVAL)
		return call_fail(c, 400, "%s", c->d.msg);
	if (err) {
		c->err = err;
		return 500;
	}
	/* Without absolute=: as the sample type is compared (heap sizes
	 * and counts by value, as pprof's -base; times by share), as the
	 * top table does. */
	if (diff)
		mode = (call_arg(c, "absolute") && *call_arg(c, "absolute") ?
			absolute : t->base_by_value) ? DIFF_VALUE : DIFF_SHARE;
	root = web_tree_walk(c, t, call_arg(c, "root"));
	if (root == UINT32_MAX)
		return c->status;
	if (search_init(c, &s, v->prof))
		return c->status;
	m_all = matched(t, root, &s, &m_root);
	if (m_all < 0 || m_root < 0)
		c->err = -ENOMEM;
	call_add(c, "{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"total\":%" PRId64 ",\"total_str\":", t->nodes[0].total);
	call_add_value_str(c, t->nodes[0].total, call_unit_name(v->prof, v->type));
	call_add(c, ",\"reverse\":%s,\"width\":%ld", reverse ? "true" : "false", width);
	if (diff)
		call_add(c, ",\"base_total\":%" PRId64 ",\"absolute\":%s",
			 t->base_total, mode == DIFF_VALUE ? "true" : "false");
	/* The zoom root's ancestors, outermost first, for breadcrumbs. */
	for (i = root; i; i = t->nodes[i].parent) {
		if (kiln_array_grow((void **)&chain, &ccap, nchain + 1,
				    sizeof(*chain))) {
			c->err = -ENOMEM;
			break;
		}
		chain[nchain++] = i;
	}
	call_add(c, ",\"path\":[");
	for (i = 0; i < nchain; i++) {
		const struct kiln_tree_node *nd = &t->nodes[chain[nchain - 1 - i]];

		call_add(c, "%s{\"name\":", i ? "," : "");
		call_add_str(c, kiln_prof_str(v->prof, nd->name));
		call_add(c, ",\"total\":%" PRId64 "}", nd->total);
	}
	call_add(c, "],\"matched\":%" PRId64 ",\"matched_root\":%" PRId64 ",",
	    m_all, m_root);
	/* The window in the zoom root's value (x0, x1: its fractions). */
	w.lo = (int64_t)(x0 * (double)t->nodes[root].total);
	w.hi = (int64_t)(x1 * (double)t->nodes[root].total + 0.5);
	if (w.hi <= w.lo)
		w.hi = w.lo + 1;
	emit_nodes(c, t, root, (double)width, (double)min, mode, &w, &s, &nm,
		   &maxdepth, &dropped);
	call_add(c, ",\"depth\":%u,\"dropped\":%zu,", maxdepth, dropped);
	web_names_write(c, &nm, v->prof);
	call_add(c, "}\n");
	free(chain);
	free(nm.idx);
	search_release(&s);
	return 200;
}

/* ---- /api/sandwich ---- */

static struct kiln_frame node_frame(const struct kiln_tree_node *n)
{
	return (struct kiln_frame){ n->name, n->function, n->location, n->line };
}

/*
 * Callers and callees of function `name` merged over every place where it
 * is the outermost frame of that name (so a recursive function counts
 * each sample once): callers is leaf-rooted (name, its caller, ...),
 * callees root-down from name.  Both roots' totals are name's cum.
 */
static int sandwich(const struct kiln_tree *t, uint32_t name,
		    struct kiln_tree *callers, struct kiln_tree *callees)
{
	uint8_t *above = calloc(t->n ? t->n : 1, 1);	/* name on the path above */
	struct { uint32_t from, to; } *stack = NULL;
	size_t cap = 0, n;
	uint32_t i, a, cur;
	int err;

	if (!above)
		return -ENOMEM;
	err = kiln_tree_start(callers, t->prof, true);
	if (!err)
		err = kiln_tree_start(callees, t->prof, false);
	/* Parents come before their children in the node array. */
	for (i = 1; i < t->n && !err; i++) {
		const struct kiln_tree_node *nd = &t->nodes[i];
		struct kiln_frame f;

		above[i] = nd->parent && (above[nd->parent] ||
					  t->nodes[nd->parent].name == name);
		if (nd->name != name || above[i])
			continue;
		callers->nodes[0].total += nd->total;
		callees->nodes[0].total += nd->total;
		cur = 0;
		for (a = i; a && !err; a = t->nodes[a].parent) {
			f = node_frame(&t->nodes[a]);
			cur = kiln_tree_child(callers, cur, &f);
			if (!cur)
				err = -ENOMEM;
			else
				callers->nodes[cur].total += nd->total;
		}
		if (cur)
			callers->nodes[cur].self += nd->total;
		/* The subtree under this occurrence, merged by names. */
		f = node_frame(nd);
		cur = kiln_tree_child(callees, 0, &f);
		if (!cur || kiln_array_grow((void **)&stack, &cap, 1, sizeof(*stack))) {
			err = -ENOMEM;
			break;
		}
		n = 0;
		stack[n].from = i;
		stack[n++].to = cur;
		while (n && !err) {
			uint32_t from = stack[n - 1].from, to = stack[n - 1].to, ch;

			n--;
			callees->nodes[to].total += t->nodes[from].total;
			callees->nodes[to].self += t->nodes[from].self;
			for (ch = t->nodes[from].child; ch; ch = t->nodes[ch].next) {
				uint32_t k;

				f = node_frame(&t->nodes[ch]);
				k = kiln_tree_child(callees, to, &f);
				if (!k || kiln_array_grow((void **)&stack, &cap, n + 1,
							  sizeof(*stack))) {
					err = -ENOMEM;
					break;
				}
				stack[n].from = ch;
				stack[n++].to = k;
			}
		}
	}
	if (!err)
		err = kiln_tree_sort(callers);
	if (!err)
		err = kiln_tree_sort(callees);
	free(stack);
	free(above);
	return err;
}

int web_api_sandwich(struct call *c)
{
	struct web_view *v;
	struct kiln_tree *t, callers = KILN_TREE_INIT, callees = KILN_TREE_INIT;
	struct search s;
	struct web_names nm = { 0 };
	const char *fn = call_arg(c, "fn");
	uint32_t name, maxdepth;
	size_t dropped;
	long width;

	if (call_num_arg(c, "width", 1, WEB_WIDTH_MAX, 1200, &width) ||
	    call_selection_weighed(c, &v))
		return c->status;
	if (!fn || !*fn)
		return call_fail(c, 400, "no fn: name the function, /api/sandwich?fn=NAME");
	c->err = kiln_web_view_tree(v, false, false, &t, NULL);
	if (c->err)
		return 500;
	name = kiln_prof_find_str(v->prof, fn, strlen(fn));
	if (search_init(c, &s, v->prof))
		return c->status;
	/* The last sandwich of the selection is kept: hover, resize and
	 * search do not rebuild it. */
	if (!name || v->sw_name != name) {
		v->sw_name = 0;
		c->err = sandwich(t, name ? name : UINT32_MAX, &v->sw_callers,
				  &v->sw_callees);
		if (!c->err)
			v->sw_name = name;
	}
	callers = v->sw_callers;
	callees = v->sw_callees;
	if (!c->err && !callees.nodes[0].total) {
		call_fail(c, 404, "no function '%s' in the selection", fn);
		goto out;
	}
	call_add(c, "{\"fn\":");
	call_add_str(c, fn);
	call_add(c, ",\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"total\":%" PRId64 ",\"cum\":%" PRId64 ",\"self\":%" PRId64,
	    t->nodes[0].total, callees.nodes[0].total,
	    callees.nodes[0].child ? callees.nodes[callees.nodes[0].child].self : 0);
	call_add(c, ",\"callers\":{");
	emit_nodes(c, &callers, callers.nodes[0].child, (double)width, 1.0, DIFF_NONE, NULL, &s,
		   &nm, &maxdepth, &dropped);
	call_add(c, ",\"depth\":%u},\"callees\":{", maxdepth);
	emit_nodes(c, &callees, callees.nodes[0].child, (double)width, 1.0, DIFF_NONE, NULL, &s,
		   &nm, &maxdepth, &dropped);
	call_add(c, ",\"depth\":%u},", maxdepth);
	web_names_write(c, &nm, v->prof);
	call_add(c, "}\n");
out:
	free(nm.idx);
	search_release(&s);
	return c->err ? 500 : c->status;
}

