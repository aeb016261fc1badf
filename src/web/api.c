/*
 * The JSON API of kiln serve (web stage): every aggregation the page shows
 * is done here, over the model, and only what one view draws is sent.
 *
 *   /api/profiles   the inputs: names, formats, sample types, totals
 *   /api/flame      flame graph nodes at least `min` pixels wide under a
 *                   zoom root, with the search's matched share
 *   /api/top        the `kiln top` table: flat, flat%, sum%, cum, cum%
 *   /api/sandwich   callers and callees of one function, merged
 *   /api/callgraph  the call graph (kiln callgraph's engine) as SVG
 *   /api/source     a function's cost per source line, with the text
 *   /api/timeline   the selection's values per thread over time
 *   /api/download   the selection as pprof, collapsed, speedscope,
 *                   perf-script or a flame graph SVG
 *
 * Common arguments: p (input index, default 0), type (sample type name or
 * index, as --sample-type), focus, ignore (regexes, as kiln top), t0 and
 * t1 (a time range, nanoseconds since the recording's start).  The
 * wire format is in docs/kiln-serve.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/top.h"
#include "profile/tree.h"
#include "format/format.h"
#include "render/callgraph.h"
#include "render/flame.h"
#include "util/buf.h"
#include "util/diag.h"
#include "web/web.h"
#include "web/webint.h"

#define WEB_WIDTH_MAX 100000	/* pixels a client may ask to fill */
#define WEB_TOP_DEFAULT 100	/* rows of /api/top without n */

/* Everything one request needs; err is sticky (-ENOMEM from the buffer). */
struct call {
	struct kiln_web_model *m;
	struct kiln_web_req *r;
	struct kiln_buf *out;
	struct kiln_diag d;
	int status;
	int err;
};

static void add(struct call *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add(struct call *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (kiln_buf_vaddf(c->out, fmt, ap))
		c->err = -ENOMEM;
	va_end(ap);
}

static void add_str(struct call *c, const char *s)
{
	if (kiln_buf_add_json(c->out, s, strlen(s)))
		c->err = -ENOMEM;
}

/* A JSON error answer: status and {"error": "..."}; returns status. */
static int fail(struct call *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct call *c, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kiln_buf_reset(c->out);
	add(c, "{\"error\":");
	add_str(c, msg);
	add(c, "}\n");
	c->status = status;
	return status;
}

static const char *arg(struct call *c, const char *key)
{
	return c->r->arg ? c->r->arg(c->r->ctx, key) : NULL;
}

/* A whole-number argument in [lo, hi]; def when absent.  -1 when bad
 * (the 400 answer is made). */
static int num_arg(struct call *c, const char *key, long lo, long hi,
		   long def, long *out)
{
	const char *s = arg(c, key);
	char *end;
	long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < lo || v > hi) {
		fail(c, 400, "bad %s '%s': want a whole number from %ld to %ld",
		     key, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int bool_arg(struct call *c, const char *key, bool *out)
{
	long v;

	if (num_arg(c, key, 0, 1, 0, &v))
		return -1;
	*out = v;
	return 0;
}

/* A time argument: nanoseconds, a whole number >= 0; *set false when
 * absent.  -1 when bad (the 400 answer is made). */
static int time_arg(struct call *c, const char *key, int64_t *out, bool *set)
{
	const char *s = arg(c, key);
	char *end;
	long long v;

	*set = s && *s;
	if (!*set)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < 0) {
		fail(c, 400, "bad %s '%s': want nanoseconds since the start, "
		     "a whole number >= 0", key, s);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * The selection every view works on: p, type, focus, ignore and, with
 * ranged, the time range t0, t1.  -1 when the request is bad (answer
 * made).
 */
static int selection_of(struct call *c, bool ranged, struct web_view **v)
{
	struct web_sel s = { 0 };
	struct kiln_prof *prof;
	bool has0 = false, has1 = false;
	long p;
	int err;

	if (num_arg(c, "p", 0, c->m->n ? (long)c->m->n - 1 : 0, 0, &p))
		return -1;
	if (!c->m->n) {
		fail(c, 404, "no profiles are loaded");
		return -1;
	}
	prof = c->m->in[p].prof;
	s.p = (unsigned)p;
	s.type = kiln_prof_type_index(prof, arg(c, "type"), &c->d);
	if (s.type < 0) {
		fail(c, 400, "bad type: %s", c->d.msg);
		return -1;
	}
	s.focus = arg(c, "focus");
	s.ignore = arg(c, "ignore");
	if (ranged && (time_arg(c, "t0", &s.t0, &has0) ||
		       time_arg(c, "t1", &s.t1, &has1)))
		return -1;
	if (has0 || has1) {
		if (!has0 || !has1 || s.t0 >= s.t1) {
			fail(c, 400, "a time range needs t0 < t1 (nanoseconds)");
			return -1;
		}
		if (!kiln_prof_find_str(prof, "time", 4) && !c->m->in[p].trace) {
			fail(c, 400, "'%s' has no sample times: no time range",
			     c->m->in[p].name);
			return -1;
		}
		s.ranged = true;
	}
	err = kiln_web_view(c->m, &s, v, &c->d);
	if (err == -EINVAL) {
		fail(c, 400, "%s", c->d.msg);
		return -1;
	}
	if (err) {
		c->err = err;
		return -1;
	}
	return 0;
}

static int selection(struct call *c, struct web_view **v)
{
	return selection_of(c, true, v);
}

static const char *type_name(const struct kiln_prof *p, int type)
{
	return kiln_prof_str(p, p->types[type].type);
}

static const char *unit_name(const struct kiln_prof *p, int type)
{
	return kiln_prof_str(p, p->types[type].unit);
}

/* ---- /api/profiles ---- */

static int api_profiles(struct call *c)
{
	size_t i, t;

	add(c, "{\"profiles\":[");
	for (i = 0; i < c->m->n; i++) {
		struct kiln_prof *p = c->m->in[i].prof;
		int def = kiln_prof_type_index(p, NULL, NULL);

		add(c, "%s{\"id\":%zu,\"name\":", i ? "," : "", i);
		add_str(c, c->m->in[i].name);
		add(c, ",\"format\":");
		add_str(c, c->m->in[i].format);
		add(c, ",\"samples\":%zu,\"times\":%s,\"default_type\":%d,"
		    "\"types\":[", p->nsamples,
		    kiln_prof_find_str(p, "time", 4) || c->m->in[i].trace ?
		    "true" : "false", def);
		for (t = 0; t < p->ntypes; t++) {
			char s[32];
			int64_t total = kiln_prof_total(p, t);

			kiln_value_str(total, unit_name(p, (int)t), s, sizeof(s));
			add(c, "%s{\"type\":", t ? "," : "");
			add_str(c, type_name(p, (int)t));
			add(c, ",\"unit\":");
			add_str(c, unit_name(p, (int)t));
			add(c, ",\"total\":%" PRId64 ",\"total_str\":", total);
			add_str(c, s);
			add(c, "}");
		}
		add(c, "]}");
	}
	add(c, "],\"base\":");
	if (c->m->base.prof) {
		add(c, "{\"name\":");
		add_str(c, c->m->base.name);
		add(c, ",\"format\":");
		add_str(c, c->m->base.format);
		add(c, "}");
	} else {
		add(c, "null");
	}
	add(c, "}\n");
	return 200;
}

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
	const char *src = arg(c, "search");
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
		fail(c, 400, "bad search regular expression '%s': %s",
		     arg(c, "search"), msg);
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
 * The value of the samples under node `from` with a frame matching the
 * search, each counted once: the totals of the outermost matching nodes.
 */
static int64_t matched(const struct kiln_tree *t, uint32_t from,
		       struct search *s, uint32_t **stack, size_t *cap)
{
	size_t n = 0;
	int64_t sum = 0;

	if (!s->on)
		return 0;
	if (kiln_array_grow((void **)stack, cap, 1, sizeof(**stack)))
		return -1;
	(*stack)[n++] = from;
	while (n) {
		uint32_t i = (*stack)[--n], ch;

		if (i && search_match(s, t->prof, t->nodes[i].name)) {
			sum += t->nodes[i].total;
			continue;
		}
		for (ch = t->nodes[i].child; ch; ch = t->nodes[ch].next) {
			if (kiln_array_grow((void **)stack, cap, n + 1,
					    sizeof(**stack)))
				return -1;
			(*stack)[n++] = ch;
		}
	}
	return sum;
}

/* Index of string id s in the answer's "names" table, added if new. */
struct names {
	uint32_t *idx;		/* string id -> index + 1 */
	size_t nidx;
	uint32_t n;
};

static uint32_t name_ref(struct call *c, struct names *nm,
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

static void names_write(struct call *c, struct names *nm,
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
	add(c, "\"names\":[");
	for (i = 0; i < nm->n; i++) {
		add(c, i ? "," : "");
		add_str(c, kiln_prof_str(p, order[i]));
	}
	add(c, "]");
	free(order);
}

/* The base name of the file a node's code was mapped from, or 0. */
static uint32_t node_module(const struct kiln_prof *p,
			    const struct kiln_tree_node *n)
{
	const struct kiln_location *l;

	if (!n->location || n->location > p->nlocations)
		return 0;
	l = &p->locations[n->location];
	return l->mapping ? p->mappings[l->mapping].file : 0;
}

struct emit_item {
	uint32_t node;
	uint32_t depth;
	int64_t x;
};

/*
 * Writes "nodes":[[name, depth, x, total, self, kind, module, file, line,
 * match(, base)], ...] for the subtree of node `from`, depth-first, children in
 * name order, x the value left of the node within `from`.  Only nodes at
 * least min_px wide when `from` spans width_px are written.  Name,
 * module and file are indexes in "names".  *maxdepth gets the deepest
 * written depth, *dropped the count of children left out.
 */
static void emit_nodes(struct call *c, const struct kiln_tree *t,
		       uint32_t from, double width_px, double min_px, bool diff,
		       struct search *s, struct names *nm, uint32_t *maxdepth,
		       size_t *dropped)
{
	const struct kiln_prof *p = t->prof;
	struct emit_item *stack = NULL;
	size_t n = 0, cap = 0, count = 0;
	double scale = t->nodes[from].total > 0 ?
		width_px / (double)t->nodes[from].total : 0;

	*maxdepth = 0;
	*dropped = 0;
	add(c, "\"nodes\":[");
	if (kiln_array_grow((void **)&stack, &cap, 1, sizeof(*stack))) {
		c->err = -ENOMEM;
		return;
	}
	stack[n++] = (struct emit_item){ from, 0, 0 };
	while (n && !c->err) {
		struct emit_item it = stack[--n];
		const struct kiln_tree_node *nd = &t->nodes[it.node];
		uint32_t ch;
		size_t first, lo, hi;
		int64_t x;
		uint32_t file = nd->function ?
			p->functions[nd->function].filename : 0;
		uint32_t mod = node_module(p, nd);
		/* -1: no name (the root, drawn as "all"), module or file */
		int64_t iname = it.node ? (int64_t)name_ref(c, nm, p, nd->name) : -1;
		int64_t imod = mod ? (int64_t)name_ref(c, nm, p, mod) : -1;
		int64_t ifile = file ? (int64_t)name_ref(c, nm, p, file) : -1;

		add(c, "%s[%" PRId64 ",%u,%" PRId64 ",%" PRId64 ",%" PRId64
		    ",%u,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d",
		    count++ ? "," : "", iname, it.depth, it.x, nd->total,
		    nd->self, nd->kind, imod, ifile, nd->line,
		    it.node && search_match(s, p, nd->name));
		/* The diff base's value on the same path, scaled to this
		 * profile's total (shares compared, not absolute values). */
		if (diff)
			add(c, ",%.0f", kiln_tree_base_scaled(t, it.node));
		add(c, "]");
		if (it.depth > *maxdepth)
			*maxdepth = it.depth;
		/* Push the wide-enough children in reverse, so that they
		 * come out in name order. */
		first = n;
		x = it.x;
		for (ch = nd->child; ch; ch = t->nodes[ch].next) {
			const struct kiln_tree_node *cn = &t->nodes[ch];

			if ((double)cn->total * scale >= min_px) {
				if (kiln_array_grow((void **)&stack, &cap, n + 1,
						    sizeof(*stack))) {
					c->err = -ENOMEM;
					break;
				}
				stack[n++] = (struct emit_item){ ch, it.depth + 1, x };
			} else {
				(*dropped)++;
			}
			x += cn->total;
		}
		for (lo = first, hi = n; lo + 1 < hi; lo++, hi--) {
			struct emit_item tmp = stack[lo];

			stack[lo] = stack[hi - 1];
			stack[hi - 1] = tmp;
		}
	}
	add(c, "]");
	free(stack);
}

/* Frame names in a root path are separated by ';', with '\;' and '\\'
 * for those characters inside a name. */
static uint32_t walk_path(struct call *c, const struct kiln_tree *t,
			  const char *path)
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
			uint32_t next = name.len ? kiln_tree_find(t, cur, name.data) : 0;

			if (!next) {
				fail(c, 404, "no frame '%s' on the path '%.*s' "
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

static void add_value_str(struct call *c, int64_t v, const char *unit)
{
	char s[32];

	kiln_value_str(v, unit, s, sizeof(s));
	add_str(c, s);
}

/* ---- /api/flame ---- */

static int api_flame(struct call *c)
{
	struct web_view *v;
	struct kiln_tree *t;
	struct search s;
	struct names nm = { 0 };
	uint32_t root, i, maxdepth, *stack = NULL, *chain = NULL;
	size_t scap = 0, dropped, nchain = 0, ccap = 0;
	long width, min;
	bool reverse, diff;
	int64_t m_all, m_root;
	int err;

	if (num_arg(c, "width", 1, WEB_WIDTH_MAX, 1200, &width) ||
	    num_arg(c, "min", 1, WEB_WIDTH_MAX, 1, &min) ||
	    bool_arg(c, "reverse", &reverse) || bool_arg(c, "diff", &diff) ||
	    selection(c, &v))
		return c->status;
	err = kiln_web_view_tree(v, reverse, diff, &t, &c->d);
	if (err == -EINVAL)
		return fail(c, 400, "%s", c->d.msg);
	if (err) {
		c->err = err;
		return 500;
	}
	root = walk_path(c, t, arg(c, "root"));
	if (root == UINT32_MAX)
		return c->status;
	if (search_init(c, &s, v->prof))
		return c->status;
	/* The whole tree's matched value is kept with the view: zooming
	 * with a search on walks only the zoom root's subtree. */
	if (s.on && v->msearch[reverse] &&
	    !strcmp(v->msearch[reverse], arg(c, "search"))) {
		m_all = v->mall[reverse];
	} else {
		m_all = matched(t, 0, &s, &stack, &scap);
		free(v->msearch[reverse]);
		v->msearch[reverse] = s.on && m_all >= 0 ? strdup(arg(c, "search")) : NULL;
		v->mall[reverse] = m_all;
	}
	m_root = root ? matched(t, root, &s, &stack, &scap) : m_all;
	if (m_all < 0 || m_root < 0)
		c->err = -ENOMEM;
	add(c, "{\"type\":");
	add_str(c, type_name(v->prof, v->type));
	add(c, ",\"unit\":");
	add_str(c, unit_name(v->prof, v->type));
	add(c, ",\"total\":%" PRId64 ",\"total_str\":", t->nodes[0].total);
	add_value_str(c, t->nodes[0].total, unit_name(v->prof, v->type));
	add(c, ",\"reverse\":%s,\"width\":%ld", reverse ? "true" : "false", width);
	if (diff)
		add(c, ",\"base_total\":%" PRId64, t->base_total);
	/* The zoom root's ancestors, outermost first, for breadcrumbs. */
	for (i = root; i; i = t->nodes[i].parent) {
		if (kiln_array_grow((void **)&chain, &ccap, nchain + 1,
				    sizeof(*chain))) {
			c->err = -ENOMEM;
			break;
		}
		chain[nchain++] = i;
	}
	add(c, ",\"path\":[");
	for (i = 0; i < nchain; i++) {
		const struct kiln_tree_node *nd = &t->nodes[chain[nchain - 1 - i]];

		add(c, "%s{\"name\":", i ? "," : "");
		add_str(c, kiln_prof_str(v->prof, nd->name));
		add(c, ",\"total\":%" PRId64 "}", nd->total);
	}
	add(c, "],\"matched\":%" PRId64 ",\"matched_root\":%" PRId64 ",",
	    m_all, m_root);
	emit_nodes(c, t, root, (double)width, (double)min, diff, &s, &nm,
		   &maxdepth, &dropped);
	add(c, ",\"depth\":%u,\"dropped\":%zu,", maxdepth, dropped);
	names_write(c, &nm, v->prof);
	add(c, "}\n");
	free(chain);
	free(stack);
	free(nm.idx);
	search_release(&s);
	return 200;
}

/* ---- /api/top ---- */

/* A row of the table: this input's, with the diff base's values (scaled
 * to this total when normalized) when one is compared. */
struct trow {
	const char *name, *file;	/* file: by-line rows only, else "" */
	int64_t line;
	int64_t flat, cum;
	double bflat, bcum;
	uint32_t order;			/* kiln top's order, base-only rows last */
};

struct top_sort {
	int key;		/* 0 flat, 1 cum, 2 name, 3 delta (flat) */
	bool asc;
};

static int cmp_key(const struct trow *x, const struct trow *y)
{
	int c = strcmp(x->name, y->name);

	if (!c)
		c = strcmp(x->file, y->file);
	if (!c && x->line != y->line)
		c = x->line < y->line ? -1 : 1;
	return c;
}

static int cmp_trow_key(const void *a, const void *b)
{
	return cmp_key(a, b);
}

static int cmp_top(const void *a, const void *b, void *ctx)
{
	const struct top_sort *k = ctx;
	const struct trow *x = a, *y = b;
	double dx = (double)x->flat - x->bflat, dy = (double)y->flat - y->bflat;
	int c = 0;

	if (k->key == 0 && x->flat != y->flat)
		c = x->flat > y->flat ? -1 : 1;
	else if (k->key == 1 && x->cum != y->cum)
		c = x->cum > y->cum ? -1 : 1;
	else if (k->key == 2)
		c = strcmp(x->name, y->name);
	else if (k->key == 3 && dx != dy)
		c = dx > dy ? -1 : 1;
	if (!c)	/* the table's own order: kiln top's */
		c = x->order < y->order ? -1 : x->order > y->order;
	if (k->key == 2)
		return k->asc ? c : -c;
	return k->asc ? -c : c;
}

/* The table's rows, with the base's matched by name (and file and line)
 * when base is given; rows only the base has come last, at 0.
 * NULL when out of memory. */
static struct trow *top_rows(const struct kiln_top *t, const struct kiln_prof *p,
			     const struct kiln_top *bt, const struct kiln_prof *bp,
			     double scale, size_t *n)
{
	size_t i, nb = bt ? bt->n : 0, m = 0;
	struct trow *rows = malloc((t->n + nb + 1) * sizeof(*rows));
	struct trow *base = nb ? malloc(nb * sizeof(*base)) : NULL;

	if (!rows || (nb && !base)) {
		free(rows);
		free(base);
		return NULL;
	}
	for (i = 0; i < t->n; i++) {
		const struct kiln_top_row *r = &t->rows[i];

		rows[i] = (struct trow){ kiln_prof_str(p, r->name),
			r->file ? kiln_prof_str(p, r->file) : "", r->line,
			r->flat, r->cum, 0, 0, (uint32_t)i };
	}
	m = t->n;
	if (nb) {
		bool *used = calloc(nb, sizeof(*used));

		if (!used) {
			free(rows);
			free(base);
			return NULL;
		}
		for (i = 0; i < nb; i++) {
			const struct kiln_top_row *r = &bt->rows[i];

			base[i] = (struct trow){ kiln_prof_str(bp, r->name),
				r->file ? kiln_prof_str(bp, r->file) : "", r->line,
				0, 0, (double)r->flat * scale,
				(double)r->cum * scale, (uint32_t)i };
		}
		qsort(base, nb, sizeof(*base), cmp_trow_key);
		for (i = 0; i < t->n; i++) {
			struct trow *hit = bsearch(&rows[i], base, nb, sizeof(*base),
						   cmp_trow_key);

			if (hit) {
				rows[i].bflat = hit->bflat;
				rows[i].bcum = hit->bcum;
				used[hit - base] = true;
			}
		}
		for (i = 0; i < nb; i++)
			if (!used[i]) {
				rows[m] = base[i];
				rows[m++].order = (uint32_t)(t->n + base[i].order);
			}
		free(used);
	}
	free(base);
	*n = m;
	return rows;
}

/* "+12.50%", "-100.00%", "new" (nothing in the base) or "0.00%". */
static void add_change_pct(struct call *c, double v, double b)
{
	if (b > 0)
		add(c, "\"%+.2f%%\"", 100.0 * (v - b) / b);
	else
		add(c, "\"%s\"", v > 0 ? "new" : "0.00%");
}

static int api_top(struct call *c)
{
	static const char *const keys[] = { "flat", "cum", "name", "delta" };
	struct web_view *v;
	struct kiln_top *t, *bt = NULL;
	struct top_sort ks = { 0 };
	const char *sort = arg(c, "sort"), *order = arg(c, "order");
	const char *filter = arg(c, "filter"), *unit;
	struct trow *rows = NULL;
	size_t i, n = 0, nrows = 0, shown = 0;
	long nmax, offset;
	bool by_line, diff, absolute;
	regex_t re;
	bool has_re = false;
	int64_t sum = 0;
	double total, scale = 1;

	if (num_arg(c, "n", 0, 1000000, WEB_TOP_DEFAULT, &nmax) ||
	    num_arg(c, "offset", 0, LONG_MAX, 0, &offset) ||
	    bool_arg(c, "lines", &by_line) || bool_arg(c, "diff", &diff) ||
	    bool_arg(c, "absolute", &absolute) || selection(c, &v))
		return c->status;
	if (sort && *sort) {
		for (ks.key = 0; ks.key < 4; ks.key++)
			if (!strcmp(sort, keys[ks.key]))
				break;
		if (ks.key == 4 || (ks.key == 3 && !diff))
			return fail(c, 400, "bad sort '%s': want flat, cum or name%s",
				    sort, diff ? " or delta" : " (delta with diff=1)");
	}
	if (order && *order && strcmp(order, "asc") && strcmp(order, "desc"))
		return fail(c, 400, "bad order '%s': want asc or desc", order);
	ks.asc = order && !strcmp(order, "asc");
	if (diff && !v->base)
		return fail(c, 400, "no diff base: start kiln serve with --diff BASE");
	if (diff && v->base_type < 0)
		return fail(c, 400, "the diff base has no sample type %s/%s",
			    type_name(v->prof, v->type), unit_name(v->prof, v->type));
	if (filter && *filter) {
		char msg[256];
		int rc = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);

		if (rc) {
			regerror(rc, &re, msg, sizeof(msg));
			return fail(c, 400, "bad filter regular expression '%s': %s",
				    filter, msg);
		}
		has_re = true;
	}
	c->err = kiln_web_view_top(v, by_line, &t);
	if (!c->err && diff)
		c->err = kiln_web_view_base_top(v, by_line, &bt);
	if (c->err)
		goto out;
	/* Normalized (the default): the base's shares of this total, as
	 * the flame graph's diff compares them. */
	if (bt && !absolute)
		scale = bt->total ? (double)t->total / (double)bt->total : 0;
	rows = top_rows(t, v->prof, bt, bt ? v->base : NULL, scale, &n);
	if (!rows) {
		c->err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (!has_re || !regexec(&re, rows[i].name, 0, NULL, 0))
			rows[nrows++] = rows[i];
	qsort_r(rows, nrows, sizeof(*rows), cmp_top, &ks);
	unit = unit_name(v->prof, v->type);
	total = t->total ? (double)t->total : 1.0;
	add(c, "{\"type\":");
	add_str(c, type_name(v->prof, v->type));
	add(c, ",\"unit\":");
	add_str(c, unit);
	add(c, ",\"total\":%" PRId64 ",\"total_str\":", t->total);
	add_value_str(c, t->total, unit);
	if (bt) {
		add(c, ",\"base_total\":%" PRId64 ",\"base_total_str\":", bt->total);
		add_value_str(c, bt->total, unit);
		add(c, ",\"absolute\":%s", absolute ? "true" : "false");
	}
	add(c, ",\"count\":%zu,\"rows\":[", nrows);
	/* sum% runs over the rows in the order shown, as pprof's does. */
	for (i = 0; i < nrows && !c->err; i++) {
		const struct trow *r = &rows[i];

		sum += r->flat;
		if (i < (size_t)offset)
			continue;
		if (nmax && shown >= (size_t)nmax)
			break;
		add(c, "%s{\"name\":", shown++ ? "," : "");
		add_str(c, r->name);
		add(c, ",\"flat\":%" PRId64 ",\"flat_str\":", r->flat);
		add_value_str(c, r->flat, unit);
		add(c, ",\"flat_pct\":\"%.2f%%\",\"sum_pct\":\"%.2f%%\","
		    "\"cum\":%" PRId64 ",\"cum_str\":", 100.0 * (double)r->flat / total,
		    100.0 * (double)sum / total, r->cum);
		add_value_str(c, r->cum, unit);
		add(c, ",\"cum_pct\":\"%.2f%%\"", 100.0 * (double)r->cum / total);
		if (by_line) {
			add(c, ",\"file\":");
			add_str(c, *r->file ? r->file : "?");
			add(c, ",\"line\":%" PRId64, r->line);
		}
		if (bt) {
			int64_t bf = llround(r->bflat), bc = llround(r->bcum);

			add(c, ",\"base_flat\":%" PRId64 ",\"base_flat_str\":", bf);
			add_value_str(c, bf, unit);
			add(c, ",\"base_cum\":%" PRId64 ",\"base_cum_str\":", bc);
			add_value_str(c, bc, unit);
			add(c, ",\"delta\":%" PRId64 ",\"delta_str\":", r->flat - bf);
			add_value_str(c, r->flat - bf, unit);
			add(c, ",\"delta_pct\":");
			add_change_pct(c, (double)r->flat, r->bflat);
			add(c, ",\"delta_cum\":%" PRId64 ",\"delta_cum_pct\":", r->cum - bc);
			add_change_pct(c, (double)r->cum, r->bcum);
		}
		add(c, "}");
	}
	add(c, "]}\n");
out:
	free(rows);
	if (has_re)
		regfree(&re);
	return c->err ? 500 : 200;
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

static int api_sandwich(struct call *c)
{
	struct web_view *v;
	struct kiln_tree *t, callers = KILN_TREE_INIT, callees = KILN_TREE_INIT;
	struct search s;
	struct names nm = { 0 };
	const char *fn = arg(c, "fn");
	uint32_t name, maxdepth;
	size_t dropped;
	long width;

	if (num_arg(c, "width", 1, WEB_WIDTH_MAX, 1200, &width) || selection(c, &v))
		return c->status;
	if (!fn || !*fn)
		return fail(c, 400, "no fn: name the function, /api/sandwich?fn=NAME");
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
		fail(c, 404, "no function '%s' in the selection", fn);
		goto out;
	}
	add(c, "{\"fn\":");
	add_str(c, fn);
	add(c, ",\"type\":");
	add_str(c, type_name(v->prof, v->type));
	add(c, ",\"unit\":");
	add_str(c, unit_name(v->prof, v->type));
	add(c, ",\"total\":%" PRId64 ",\"cum\":%" PRId64 ",\"self\":%" PRId64,
	    t->nodes[0].total, callees.nodes[0].total,
	    callees.nodes[0].child ? callees.nodes[callees.nodes[0].child].self : 0);
	add(c, ",\"callers\":{");
	emit_nodes(c, &callers, callers.nodes[0].child, (double)width, 1.0, false, &s,
		   &nm, &maxdepth, &dropped);
	add(c, ",\"depth\":%u},\"callees\":{", maxdepth);
	emit_nodes(c, &callees, callees.nodes[0].child, (double)width, 1.0, false, &s,
		   &nm, &maxdepth, &dropped);
	add(c, ",\"depth\":%u},", maxdepth);
	names_write(c, &nm, v->prof);
	add(c, "}\n");
out:
	free(nm.idx);
	search_release(&s);
	return c->err ? 500 : c->status;
}

/* ---- /api/source ---- */

#define WEB_SOURCE_CONTEXT 5	/* lines shown around each line with cost */
#define WEB_SOURCE_LINES 5000	/* lines sent for one file at most */

struct src_sort {
	const struct kiln_prof *p;
	const struct kiln_top *t;
};

static int cmp_src(const void *a, const void *b, void *ctx)
{
	const struct src_sort *k = ctx;
	const struct kiln_top_row *x = &k->t->rows[*(const uint32_t *)a];
	const struct kiln_top_row *y = &k->t->rows[*(const uint32_t *)b];
	int c = strcmp(x->file ? kiln_prof_str(k->p, x->file) : "",
		       y->file ? kiln_prof_str(k->p, y->file) : "");

	if (!c && x->line != y->line)
		c = x->line < y->line ? -1 : 1;
	return c;
}

/* One line of a file: its number, cost, and text when the file was read. */
static void src_line(struct call *c, const struct web_source *src, int64_t line,
		     const struct kiln_top_row *r, const char *unit, bool *first)
{
	size_t len;
	const char *text = src->text && line > 0 ?
		kiln_web_source_line(src, (size_t)line, &len) : NULL;

	add(c, "%s{\"line\":%" PRId64 ",\"flat\":%" PRId64 ",\"cum\":%" PRId64,
	    *first ? "" : ",", line, r ? r->flat : 0, r ? r->cum : 0);
	*first = false;
	if (r) {
		add(c, ",\"flat_str\":");
		add_value_str(c, r->flat, unit);
		add(c, ",\"cum_str\":");
		add_value_str(c, r->cum, unit);
	}
	if (text) {
		add(c, ",\"text\":");
		if (kiln_buf_add_json(c->out, text, len))
			c->err = -ENOMEM;
	}
	add(c, "}");
}

/* The lines of one file with cost rows[0..n) (sorted by line), with
 * WEB_SOURCE_CONTEXT lines around each when the text was read. */
static void src_file(struct call *c, const struct web_view *v,
		     const struct kiln_top *tl, const uint32_t *rows, size_t n,
		     const char *unit)
{
	const struct kiln_top_row *r0 = &tl->rows[rows[0]];
	const char *path = r0->file ? kiln_prof_str(v->prof, r0->file) : "";
	struct web_source src;
	const char *why = NULL;
	int64_t last = 0, tail = 0, flat = 0, l;
	size_t i, sent = 0;
	bool first = true;
	int err = *path ? kiln_web_source_read(path, &src, &why) : 0;

	if (err) {
		c->err = err;
		return;
	}
	if (!*path) {
		memset(&src, 0, sizeof(src));
		why = "no file name in the profile";
	}
	for (i = 0; i < n; i++)
		flat += tl->rows[rows[i]].flat;
	add(c, "{\"file\":");
	add_str(c, *path ? path : "?");
	add(c, ",\"text\":%s,\"why\":", src.text ? "true" : "false");
	if (why)
		add_str(c, why);
	else
		add(c, "null");
	add(c, ",\"flat\":%" PRId64 ",\"lines\":[", flat);
	for (i = 0; i < n && !c->err; i++) {
		const struct kiln_top_row *r = &tl->rows[rows[i]];

		if (src.text) {
			/* The previous line's context after it, then this
			 * one's before it. */
			for (l = last + 1; l < r->line && l <= tail &&
			     l <= (int64_t)src.n && sent < WEB_SOURCE_LINES; l++, sent++)
				src_line(c, &src, last = l, NULL, unit, &first);
			for (l = r->line - WEB_SOURCE_CONTEXT; l < r->line &&
			     l <= (int64_t)src.n && sent < WEB_SOURCE_LINES; l++)
				if (l > last && l > 0) {
					src_line(c, &src, last = l, NULL, unit, &first);
					sent++;
				}
		}
		src_line(c, &src, r->line, r, unit, &first);
		sent++;
		if (r->line > last)
			last = r->line;
		tail = r->line + WEB_SOURCE_CONTEXT;
	}
	for (l = last + 1; src.text && l <= tail && l <= (int64_t)src.n &&
	     sent < WEB_SOURCE_LINES; l++, sent++)
		src_line(c, &src, l, NULL, unit, &first);
	add(c, "]}");
	kiln_web_source_release(&src);
}

static int api_source(struct call *c)
{
	const char *fn = arg(c, "fn"), *unit;
	struct src_sort ks;
	struct web_view *v;
	struct kiln_top *t, *tl;
	const struct kiln_top_row *row = NULL;
	uint32_t *rows = NULL;
	size_t i, j, n = 0;
	bool first = true;

	if (!fn || !*fn)
		return fail(c, 400, "no fn: name a function");
	if (selection(c, &v))
		return c->status;
	c->err = kiln_web_view_top(v, false, &t);
	if (!c->err)
		c->err = kiln_web_view_top(v, true, &tl);
	if (c->err)
		return 500;
	for (i = 0; i < t->n && !row; i++)
		if (!strcmp(kiln_prof_str(v->prof, t->rows[i].name), fn))
			row = &t->rows[i];
	if (!row)
		return fail(c, 404, "no function '%s' in this selection", fn);
	rows = malloc((tl->n + 1) * sizeof(*rows));
	if (!rows) {
		c->err = -ENOMEM;
		return 500;
	}
	for (i = 0; i < tl->n; i++)
		if (tl->rows[i].name == row->name)
			rows[n++] = (uint32_t)i;
	ks.p = v->prof;
	ks.t = tl;
	qsort_r(rows, n, sizeof(*rows), cmp_src, &ks);
	unit = unit_name(v->prof, v->type);
	add(c, "{\"fn\":");
	add_str(c, fn);
	add(c, ",\"type\":");
	add_str(c, type_name(v->prof, v->type));
	add(c, ",\"unit\":");
	add_str(c, unit);
	add(c, ",\"total\":%" PRId64 ",\"flat\":%" PRId64 ",\"flat_str\":",
	    t->total, row->flat);
	add_value_str(c, row->flat, unit);
	add(c, ",\"cum\":%" PRId64 ",\"cum_str\":", row->cum);
	add_value_str(c, row->cum, unit);
	add(c, ",\"files\":[");
	/* One entry per file, the files in name order. */
	for (i = 0; i < n && !c->err; i = j) {
		uint32_t f = tl->rows[rows[i]].file;

		for (j = i + 1; j < n && tl->rows[rows[j]].file == f; j++)
			;
		if (!first)
			add(c, ",");
		first = false;
		src_file(c, v, tl, rows + i, j - i, unit);
	}
	add(c, "]}\n");
	free(rows);
	return c->err ? 500 : 200;
}

/* ---- /api/callgraph ---- */

/* A fraction argument in [0, 1]; def when absent.  -1 when bad. */
static int frac_arg(struct call *c, const char *key, double def, double *out)
{
	const char *s = arg(c, key);
	char *end;
	double v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !(v >= 0 && v <= 1)) {
		fail(c, 400, "bad %s '%s': want a fraction from 0 to 1", key, s);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * The call graph of the selection as SVG, laid out by graphviz: the
 * engine and pruning of `kiln callgraph`.  Each node links to
 * WEB_CG_HREF followed by its name, which the page turns into the
 * function's sandwich.  The drawing is done by the function registered
 * with kiln_web_enable_callgraph() (cgsvg.c), so that what links the web
 * stage without it (the agent, inside other programs) never loads
 * graphviz.
 */
#define WEB_CG_HREF "kiln-fn:"

static kiln_web_callgraph_fn cg_draw;

void kiln_web_set_callgraph(kiln_web_callgraph_fn fn)
{
	cg_draw = fn;
}

static int api_callgraph(struct call *c)
{
	struct kiln_callgraph_opts o = KILN_CALLGRAPH_OPTS_INIT;
	struct web_view *v;
	long nodes;
	bool diff;
	int err;

	if (num_arg(c, "nodes", 0, 10000, o.max_nodes, &nodes) ||
	    frac_arg(c, "node_fraction", o.node_fraction, &o.node_fraction) ||
	    frac_arg(c, "edge_fraction", o.edge_fraction, &o.edge_fraction) ||
	    bool_arg(c, "lines", &o.by_line) || bool_arg(c, "diff", &diff) ||
	    selection(c, &v))
		return c->status;
	o.max_nodes = (int)nodes;
	if (!cg_draw)
		return fail(c, 404, "no call graph here (graphviz is not loaded)");
	if (diff) {
		if (!v->base)
			return fail(c, 400, "no diff base: start kiln serve with --diff BASE");
		if (v->base_type < 0)
			return fail(c, 400, "the diff base has no sample type %s/%s",
				    type_name(v->prof, v->type),
				    unit_name(v->prof, v->type));
		o.base = v->base;
		o.base_type = v->base_type;
	}
	err = cg_draw(v->prof, v->type, &o, c->m->in[v->p].name, WEB_CG_HREF,
		      c->out);
	if (err == -EINVAL)
		return fail(c, 500, "graphviz could not lay out the call graph");
	if (err) {
		c->err = err;
		return 500;
	}
	c->r->type = "image/svg+xml";
	return 200;
}

/* ---- /api/timeline ---- */

/* A heap trace's line: the heap size over time, as the bars of every
 * thread together, with the peak; its buckets are the analysis's. */
static int heap_timeline(struct call *c, struct web_input *in)
{
	struct web_heapline *hl;
	size_t b;
	int err = kiln_web_heapline(in, &hl, &c->d);

	if (err == -EINVAL)
		return fail(c, 500, "%s", c->d.msg);
	if (err) {
		c->err = err;
		return 500;
	}
	add(c, "{\"type\":\"heap\",\"unit\":\"bytes\",\"bucket_ns\":%" PRIu64
	    ",\"end\":%" PRIu64 ",\"buckets\":%zu,\"untimed\":0,\"nthreads\":0,"
	    "\"threads\":[],\"heap\":{\"peak\":%.0f,\"peak_t\":%" PRIu64
	    ",\"span\":%" PRIu64 ",\"end\":[", hl->bucket_ns,
	    hl->bucket_ns * hl->n, hl->n, hl->peak, hl->peak_t, hl->span);
	for (b = 0; b < hl->n; b++)
		add(c, "%s%.0f", b ? "," : "", hl->end[b]);
	add(c, "]},\"total\":[");
	for (b = 0; b < hl->n; b++)
		add(c, "%s%.0f", b ? "," : "", hl->max[b]);
	add(c, "]}\n");
	return c->err ? 500 : 200;
}

static int api_timeline(struct call *c)
{
	struct web_timeline tl;
	struct web_view *v;
	long nb, nth;
	size_t i, b, shown;
	int err;

	if (num_arg(c, "buckets", 1, 10000, 400, &nb) ||
	    num_arg(c, "threads", 1, 10000, 64, &nth) ||
	    selection_of(c, false, &v))
		return c->status;
	if (c->m->in[v->p].trace)
		return heap_timeline(c, &c->m->in[v->p]);
	err = kiln_web_timeline(v->prof, v->type, (size_t)nb, &tl);
	if (err) {
		c->err = err;
		return 500;
	}
	add(c, "{\"type\":");
	add_str(c, type_name(v->prof, v->type));
	add(c, ",\"unit\":");
	add_str(c, unit_name(v->prof, v->type));
	add(c, ",\"bucket_ns\":%" PRId64 ",\"end\":%" PRId64 ",\"buckets\":%zu"
	    ",\"untimed\":%" PRId64 ",\"nthreads\":%zu,\"total\":[",
	    tl.bucket_ns, tl.end, tl.nbuckets, tl.untimed, tl.nthreads);
	for (b = 0; b < tl.nbuckets; b++)
		add(c, "%s%" PRId64, b ? "," : "", tl.total[b]);
	add(c, "],\"threads\":[");
	shown = tl.nthreads < (size_t)nth ? tl.nthreads : (size_t)nth;
	for (i = 0; i < shown; i++) {
		const struct web_thread *t = &tl.threads[i];

		add(c, "%s{\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"name\":",
		    i ? "," : "", t->pid, t->tid);
		add_str(c, t->name ? kiln_prof_str(v->prof, t->name) : "");
		add(c, ",\"total\":%" PRId64 ",\"values\":[", t->total);
		for (b = 0; b < tl.nbuckets; b++)
			add(c, "%s%" PRId64, b ? "," : "", t->values[b]);
		add(c, "]}");
	}
	add(c, "]}\n");
	kiln_web_timeline_release(&tl);
	return c->err ? 500 : 200;
}

/* ---- /api/download ---- */

static int api_download(struct call *c)
{
	static const struct { const char *name, *ext, *type; } kinds[] = {
		{ "pprof", "pb.gz", "application/octet-stream" },
		{ "collapsed", "collapsed", "text/plain; charset=utf-8" },
		{ "speedscope", "speedscope.json", "application/json" },
		{ "perf-script", "perf", "text/plain; charset=utf-8" },
		{ "svg", "svg", "image/svg+xml" },
		{ "html", "html", "text/html; charset=utf-8" },
	};
	const char *format = arg(c, "format"), *base;
	struct kiln_flame_opts o = { 0 };
	struct web_view *v;
	size_t k;
	bool reverse;
	int err = 0;

	if (bool_arg(c, "reverse", &reverse) || selection(c, &v))
		return c->status;
	for (k = 0; format && k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strcmp(format, kinds[k].name))
			break;
	if (!format || k == sizeof(kinds) / sizeof(kinds[0]))
		return fail(c, 400, "bad format '%s': want pprof, collapsed, "
			    "speedscope, perf-script, svg or html", format ? format : "");
	base = strrchr(c->m->in[v->p].name, '/');
	base = base ? base + 1 : c->m->in[v->p].name;
	switch (k) {
	case 0: err = kiln_pprof_write(v->prof, c->out, true); break;
	case 1: err = kiln_collapsed_write(v->prof, v->type, c->out); break;
	case 2: err = kiln_speedscope_write(v->prof, v->type, base, c->out); break;
	case 3: err = kiln_perfscript_write(v->prof, v->type, c->out); break;
	case 4:
		o.reverse = reverse;
		err = kiln_flame_svg(v->prof, v->type, &o, c->out);
		break;
	case 5: {
		struct kiln_buf msg = KILN_BUF_INIT;
		int status = kiln_web_save_html(c->m, c->r, c->out, &msg);

		if (status != 200) {
			kiln_buf_release(&msg);
			return fail(c, 500, "cannot save the page (status %d)", status);
		}
		kiln_buf_release(&msg);
		break;
	}
	}
	if (err) {
		c->err = err;
		return 500;
	}
	c->r->type = kinds[k].type;
	/* The input's name, less what a file name cannot hold, and the
	 * format's extension. */
	snprintf(c->r->filename, sizeof(c->r->filename), "%.100s.%s", base,
		 kinds[k].ext);
	for (char *f = c->r->filename; *f; f++)
		if (*f == '"' || *f == '\\' || (unsigned char)*f < 0x20 || *f == 0x7f)
			*f = '_';
	return 200;
}

int kiln_web_api(struct kiln_web_model *m, struct kiln_web_req *r,
		 struct kiln_buf *out)
{
	struct call c = { m, r, out, { "" }, 200, 0 };
	int status;

	r->type = NULL;
	r->filename[0] = '\0';
	if (!strcmp(r->path, "/api/profiles"))
		status = api_profiles(&c);
	else if (!strcmp(r->path, "/api/flame"))
		status = api_flame(&c);
	else if (!strcmp(r->path, "/api/top"))
		status = api_top(&c);
	else if (!strcmp(r->path, "/api/sandwich"))
		status = api_sandwich(&c);
	else if (!strcmp(r->path, "/api/download"))
		status = api_download(&c);
	else if (!strcmp(r->path, "/api/timeline"))
		status = api_timeline(&c);
	else if (!strcmp(r->path, "/api/callgraph"))
		status = api_callgraph(&c);
	else if (!strcmp(r->path, "/api/source"))
		status = api_source(&c);
	else
		status = fail(&c, 404, "no API '%s' (there are /api/profiles, "
			      "/api/flame, /api/top, /api/sandwich, /api/callgraph, "
			      "/api/source, "
			      "/api/timeline, "
			      "/api/download)", r->path);
	if (c.err) {
		kiln_buf_reset(out);
		return 500;
	}
	return status;
}
