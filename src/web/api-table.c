/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table views of kiln serve's API (web stage): /api/top (the `kiln
 * top` table, sorted, filtered and cut here, with deltas against the diff
 * base) and /api/source (a function's cost per source line, with the
 * file's text).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <regex.h>

#include "profile/profile.h"
#include "profile/top.h"
#include "profile/tree.h"
#include "util/buf.h"
#include "web/call.h"

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
		call_add(c, "\"%+.2f%%\"", 100.0 * (v - b) / b);
	else
		call_add(c, "\"%s\"", v > 0 ? "new" : "0.00%");
}

/* A heap profile's sample type: sizes in bytes, or object counts. */
int web_api_top(struct call *c)
{
	static const char *const keys[] = { "flat", "cum", "name", "delta" };
	struct web_view *v;
	struct kiln_top *t, *bt = NULL;
	struct top_sort ks = { 0 };
	const char *sort = call_arg(c, "sort"), *order = call_arg(c, "order");
	const char *filter = call_arg(c, "filter"), *unit;
	struct trow *rows = NULL;
	size_t i, n = 0, nrows = 0, shown = 0;
	long nmax, offset;
	bool by_line, diff, absolute;
	regex_t re;
	bool has_re = false;
	int64_t sum = 0;
	double total, scale = 1;

	if (call_num_arg(c, "n", 0, 1000000, WEB_TOP_DEFAULT, &nmax) ||
	    call_num_arg(c, "offset", 0, LONG_MAX, 0, &offset) ||
	    call_bool_arg(c, "lines", &by_line) || call_bool_arg(c, "diff", &diff) ||
	    call_bool_arg(c, "absolute", &absolute) || call_selection_weighed(c, &v))
		return c->status;
	/* Without absolute=: heap sizes and counts are subtracted as pprof's
	 * -base does (a heap that shrank must not read as growth because the
	 * base was scaled to it); times and samples compare shares. */
	if (!call_arg(c, "absolute") || !*call_arg(c, "absolute"))
		absolute = kiln_type_diff_by_value(
			call_type_name(v->prof, v->type),
			call_unit_name(v->prof, v->type));
	if (sort && *sort) {
		for (ks.key = 0; ks.key < 4; ks.key++)
			if (!strcmp(sort, keys[ks.key]))
				break;
		if (ks.key == 4 || (ks.key == 3 && !diff))
			return call_fail(c, 400, "bad sort '%s': want flat, cum or name%s",
				    sort, diff ? " or delta" : " (delta with diff=1)");
	}
	if (order && *order && strcmp(order, "asc") && strcmp(order, "desc"))
		return call_fail(c, 400, "bad order '%s': want asc or desc", order);
	ks.asc = order && !strcmp(order, "asc");
	if (diff && !v->base)
		return call_fail(c, 400, "no diff base: start kiln serve with --diff BASE");
	if (diff && v->base_type < 0)
		return call_fail(c, 400, "the diff base has no sample type %s/%s",
			    call_type_name(v->prof, v->type), call_unit_name(v->prof, v->type));
	if (filter && *filter) {
		char msg[256];
		int rc = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);

		if (rc) {
			regerror(rc, &re, msg, sizeof(msg));
			return call_fail(c, 400, "bad filter regular expression '%s': %s",
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
	unit = call_unit_name(v->prof, v->type);
	total = t->total ? (double)t->total : 1.0;
	call_add(c, "{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, unit);
	call_add(c, ",\"total\":%" PRId64 ",\"total_str\":", t->total);
	call_add_value_str(c, t->total, unit);
	if (bt) {
		call_add(c, ",\"base_total\":%" PRId64 ",\"base_total_str\":", bt->total);
		call_add_value_str(c, bt->total, unit);
		call_add(c, ",\"absolute\":%s", absolute ? "true" : "false");
	}
	call_add(c, ",\"count\":%zu,\"rows\":[", nrows);
	/* sum% runs over the rows in the order shown, as pprof's does. */
	for (i = 0; i < nrows && !c->err; i++) {
		const struct trow *r = &rows[i];

		sum += r->flat;
		if (i < (size_t)offset)
			continue;
		if (nmax && shown >= (size_t)nmax)
			break;
		call_add(c, "%s{\"name\":", shown++ ? "," : "");
		call_add_str(c, r->name);
		call_add(c, ",\"flat\":%" PRId64 ",\"flat_str\":", r->flat);
		call_add_value_str(c, r->flat, unit);
		call_add(c, ",\"flat_pct\":\"%.2f%%\",\"sum_pct\":\"%.2f%%\","
		    "\"cum\":%" PRId64 ",\"cum_str\":", 100.0 * (double)r->flat / total,
		    100.0 * (double)sum / total, r->cum);
		call_add_value_str(c, r->cum, unit);
		call_add(c, ",\"cum_pct\":\"%.2f%%\"", 100.0 * (double)r->cum / total);
		if (by_line) {
			call_add(c, ",\"file\":");
			call_add_str(c, *r->file ? r->file : "?");
			call_add(c, ",\"line\":%" PRId64, r->line);
		}
		if (bt) {
			int64_t bf = llround(r->bflat), bc = llround(r->bcum);

			call_add(c, ",\"base_flat\":%" PRId64 ",\"base_flat_str\":", bf);
			call_add_value_str(c, bf, unit);
			call_add(c, ",\"base_cum\":%" PRId64 ",\"base_cum_str\":", bc);
			call_add_value_str(c, bc, unit);
			call_add(c, ",\"delta\":%" PRId64 ",\"delta_str\":", r->flat - bf);
			call_add_value_str(c, r->flat - bf, unit);
			call_add(c, ",\"delta_pct\":");
			add_change_pct(c, (double)r->flat, r->bflat);
			call_add(c, ",\"delta_cum\":%" PRId64 ",\"delta_cum_pct\":", r->cum - bc);
			add_change_pct(c, (double)r->cum, r->bcum);
		}
		call_add(c, "}");
	}
	call_add(c, "]}\n");
out:
	free(rows);
	if (has_re)
		regfree(&re);
	return c->err ? 500 : 200;
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

	call_add(c, "%s{\"line\":%" PRId64 ",\"flat\":%" PRId64 ",\"cum\":%" PRId64,
	    *first ? "" : ",", line, r ? r->flat : 0, r ? r->cum : 0);
	*first = false;
	if (r) {
		call_add(c, ",\"flat_str\":");
		call_add_value_str(c, r->flat, unit);
		call_add(c, ",\"cum_str\":");
		call_add_value_str(c, r->cum, unit);
	}
	if (text) {
		call_add(c, ",\"text\":");
		if (kiln_buf_add_json(c->out, text, len))
			c->err = -ENOMEM;
	}
	call_add(c, "}");
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
	char found[PATH_MAX];
	int err = *path ? kiln_web_source_find(c->m, path, found, &why) : 0;

	memset(&src, 0, sizeof(src));
	if (!err && *path && !why)
		err = kiln_web_source_read(found, &src, &why);

	if (err) {
		c->err = err;
		return;
	}
	if (!*path)
		why = "no file name in the profile";
	for (i = 0; i < n; i++)
		flat += tl->rows[rows[i]].flat;
	call_add(c, "{\"file\":");
	call_add_str(c, *path ? path : "?");
	call_add(c, ",\"text\":%s,\"why\":", src.text ? "true" : "false");
	if (why)
		call_add_str(c, why);
	else
		call_add(c, "null");
	call_add(c, ",\"flat\":%" PRId64 ",\"lines\":[", flat);
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
	call_add(c, "]}");
	kiln_web_source_release(&src);
}

int web_api_source(struct call *c)
{
	const char *fn = call_arg(c, "fn"), *unit;
	struct src_sort ks;
	struct web_view *v;
	struct kiln_top *t, *tl;
	const struct kiln_top_row *row = NULL;
	uint32_t *rows = NULL;
	size_t i, j, n = 0;
	bool first = true;

	if (!fn || !*fn)
		return call_fail(c, 400, "no fn: name a function");
	if (call_selection(c, &v))
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
		return call_fail(c, 404, "no function '%s' in this selection", fn);
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
	unit = call_unit_name(v->prof, v->type);
	call_add(c, "{\"fn\":");
	call_add_str(c, fn);
	call_add(c, ",\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, unit);
	call_add(c, ",\"total\":%" PRId64 ",\"flat\":%" PRId64 ",\"flat_str\":",
	    t->total, row->flat);
	call_add_value_str(c, row->flat, unit);
	call_add(c, ",\"cum\":%" PRId64 ",\"cum_str\":", row->cum);
	call_add_value_str(c, row->cum, unit);
	call_add(c, ",\"files\":[");
	/* One entry per file, the files in name order. */
	for (i = 0; i < n && !c->err; i = j) {
		uint32_t f = tl->rows[rows[i]].file;

		for (j = i + 1; j < n && tl->rows[rows[j]].file == f; j++)
			;
		if (!first)
			call_add(c, ",");
		first = false;
		src_file(c, v, tl, rows + i, j - i, unit);
	}
	call_add(c, "]}\n");
	free(rows);
	return c->err ? 500 : 200;
}

