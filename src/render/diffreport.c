/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report of `kiln diff` as text, JSON or Markdown (render stage).
 */
#include "render/diffreport.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "profile/diff.h"
#include "util/buf.h"

/* A change as printed with two decimals: no "-0.00" for a change that
 * rounds to nothing. */
static double shown2(double x)
{
	return x > -0.005 && x < 0.005 ? 0.0 : x;
}

static const char *verdict_word(enum kiln_diff_verdict v)
{
	switch (v) {
	case KILN_DIFF_GREW: return "grew";
	case KILN_DIFF_SHRANK: return "shrank";
	case KILN_DIFF_SAME: return "same";
	default: return "untested";
	}
}

/* The row's word: regression, else the more telling of its columns. */
static const char *row_word(const struct kiln_diff_row *r)
{
	if (r->flat.regression || r->cum.regression)
		return "REGRESSION";
	if (r->flat.verdict == KILN_DIFF_GREW || r->cum.verdict == KILN_DIFF_GREW)
		return "grew";
	if (r->flat.verdict == KILN_DIFF_SHRANK ||
	    r->cum.verdict == KILN_DIFF_SHRANK)
		return "shrank";
	if (r->flat.verdict == KILN_DIFF_SAME || r->cum.verdict == KILN_DIFF_SAME)
		return "same";
	return "untested";
}

static bool is_reg(const struct kiln_diff_row *r)
{
	return r->flat.regression || r->cum.regression;
}

/* How many rows a table shows: every regression, then up to o->rows. */
static size_t shown(const struct kiln_diff *d, const struct kiln_diffreport_opts *o)
{
	size_t n = o->rows && o->rows < d->n ? o->rows : d->n;

	return n < d->nregressions ? d->nregressions : n;
}

static void interval(struct kiln_buf *b, const struct kiln_diff_stat *s)
{
	if (s->verdict == KILN_DIFF_UNTESTED)
		kiln_buf_addf(b, "%-18s", "");
	else
		kiln_buf_addf(b, "[%+7.2f, %+7.2f]", shown2(s->lo), shown2(s->hi));
}

static void header(const struct kiln_diff *d,
		   const struct kiln_diffreport_opts *o, struct kiln_buf *b,
		   const char *pre)
{
	kiln_buf_addf(b, "%s%s: %zu base profile%s (%.0f samples) against %zu "
		      "new profile%s (%.0f samples)\n", pre,
		      o->type ? o->type : "value", d->nbase,
		      d->nbase == 1 ? "" : "s", d->base_samples, d->nnew,
		      d->nnew == 1 ? "" : "s", d->new_samples);
	kiln_buf_addf(b, "%sChanges in points of share (new%% - base%%), %.0f%% "
		      "simultaneous intervals over %zu tested columns: "
		      "+-%.2f standard errors (bootstrap of %u over %s, seed "
		      "%llu)\n", pre, 100 * d->opts.confidence, d->ntested,
		      d->crit, d->opts.resamples,
		      d->by_profiles ? "profiles and samples" : "samples",
		      (unsigned long long)d->opts.seed);
}

/* The verdict lines: each regression named, or none. */
static void verdict(const struct kiln_diff *d, struct kiln_buf *b,
		    const char *pre, const char *code0, const char *code1)
{
	size_t i;

	if (d->opts.fail_on < 0) {
		kiln_buf_addf(b, "%sNo --fail-on: no verdict.\n", pre);
		return;
	}
	if (!d->nregressions) {
		kiln_buf_addf(b, "%sNo regression: no function's share grew "
			      "beyond noise by %g points or more.\n", pre,
			      d->opts.fail_on);
		return;
	}
	for (i = 0; i < d->n; i++) {
		const struct kiln_diff_row *r = &d->rows[i];
		const struct kiln_diff_stat *s =
			r->flat.regression &&
			(!r->cum.regression || r->flat.delta >= r->cum.delta) ?
			&r->flat : &r->cum;

		if (!is_reg(r))
			continue;
		kiln_buf_addf(b, "%sREGRESSION: %s", pre, code0);
		if (*code0)
			kiln_buf_add_xml(b, r->name, strlen(r->name));
		else
			kiln_buf_adds(b, r->name);
		kiln_buf_addf(b, "%s %s share %.2f%% -> %.2f%%, %+.2f points "
			      "[%+.2f, %+.2f] (fail-on %g)\n", code1,
			      s == &r->flat ? "flat" : "cum", s->base, s->new,
			      s->delta, s->lo, s->hi, d->opts.fail_on);
	}
}

static void text(const struct kiln_diff *d,
		 const struct kiln_diffreport_opts *o, struct kiln_buf *b)
{
	size_t i, n = shown(d, o);

	header(d, o, b, "");
	kiln_buf_addf(b, "%7s %7s %8s %-18s  %7s %7s %8s %-18s  %-10s %s\n",
		      "flat", "flat", "flat", "", "cum", "cum", "cum", "", "", "");
	kiln_buf_addf(b, "%7s %7s %8s %-18s  %7s %7s %8s %-18s  %-10s %s\n",
		      "base%", "new%", "change", "interval", "base%", "new%",
		      "change", "interval", "verdict", "name");
	for (i = 0; i < n; i++) {
		const struct kiln_diff_row *r = &d->rows[i];

		kiln_buf_addf(b, "%7.2f %7.2f %+8.2f ", r->flat.base,
			      r->flat.new, shown2(r->flat.delta));
		interval(b, &r->flat);
		kiln_buf_addf(b, "  %7.2f %7.2f %+8.2f ", r->cum.base,
			      r->cum.new, shown2(r->cum.delta));
		interval(b, &r->cum);
		kiln_buf_addf(b, "  %-10s %s\n", row_word(r), r->name);
	}
	if (n < d->n)
		kiln_buf_addf(b, "(%zu more rows: -n 0 shows all)\n", d->n - n);
	verdict(d, b, "", "", "");
	if (o->svg)
		kiln_buf_addf(b, "Differential flame graph: %s\n", o->svg);
}

static void md_stat(struct kiln_buf *b, const struct kiln_diff_stat *s)
{
	kiln_buf_addf(b, " %.2f%% | %.2f%% | ", s->base, s->new);
	if (s->verdict == KILN_DIFF_UNTESTED)
		kiln_buf_addf(b, "%+.2f |", shown2(s->delta));
	else
		kiln_buf_addf(b, "%s%+.2f%s [%+.2f, %+.2f] |",
			      s->regression ? "**" : "", shown2(s->delta),
			      s->regression ? "**" : "", shown2(s->lo), shown2(s->hi));
}

/* A name in a table cell: HTML-escaped, its '|' as an entity. */
static void md_name(struct kiln_buf *b, const char *name)
{
	const char *p = name, *bar;

	kiln_buf_adds(b, "<code>");
	while ((bar = strchr(p, '|'))) {
		kiln_buf_add_xml(b, p, (size_t)(bar - p));
		kiln_buf_adds(b, "&#124;");
		p = bar + 1;
	}
	kiln_buf_add_xml(b, p, strlen(p));
	kiln_buf_adds(b, "</code>");
}

static void markdown(const struct kiln_diff *d,
		     const struct kiln_diffreport_opts *o, struct kiln_buf *b)
{
	size_t i, n = shown(d, o);

	if (d->opts.fail_on < 0)
		kiln_buf_adds(b, "### kiln diff\n\n");
	else if (d->nregressions)
		kiln_buf_addf(b, "### kiln diff: %zu regression%s\n\n",
			      d->nregressions, d->nregressions == 1 ? "" : "s");
	else
		kiln_buf_adds(b, "### kiln diff: no regression\n\n");
	verdict(d, b, "", "<code>", "</code>");
	kiln_buf_adds(b, "\n");
	header(d, o, b, "");
	kiln_buf_adds(b, "\n| function | flat base | flat new | flat change "
		      "[interval] | cum base | cum new | cum change [interval] "
		      "| verdict |\n|---|---:|---:|---|---:|---:|---|---|\n");
	for (i = 0; i < n; i++) {
		const struct kiln_diff_row *r = &d->rows[i];

		kiln_buf_adds(b, "| ");
		md_name(b, r->name);
		kiln_buf_adds(b, " |");
		md_stat(b, &r->flat);
		md_stat(b, &r->cum);
		kiln_buf_addf(b, " %s |\n", row_word(r));
	}
	if (n < d->n)
		kiln_buf_addf(b, "\n%zu more rows not shown.\n", d->n - n);
	if (o->svg) {
		kiln_buf_adds(b, "\nDifferential flame graph: ");
		md_name(b, o->svg);
		kiln_buf_adds(b, "\n");
	}
}

static void json_stat(struct kiln_buf *b, const char *key,
		      const struct kiln_diff_stat *s)
{
	kiln_buf_addf(b, "\"%s\":{\"base\":%.6g,\"new\":%.6g,\"change\":%.6g,",
		      key, s->base, s->new, s->delta);
	if (s->verdict == KILN_DIFF_UNTESTED)
		kiln_buf_adds(b, "\"low\":null,\"high\":null,");
	else
		kiln_buf_addf(b, "\"low\":%.6g,\"high\":%.6g,", s->lo, s->hi);
	kiln_buf_addf(b, "\"se\":%.6g,\"base_samples\":%.0f,\"new_samples\":"
		      "%.0f,\"verdict\":\"%s\",\"regression\":%s}", s->se,
		      s->base_samples, s->new_samples, verdict_word(s->verdict),
		      s->regression ? "true" : "false");
}

static void json(const struct kiln_diff *d,
		 const struct kiln_diffreport_opts *o, struct kiln_buf *b)
{
	size_t i;
	bool first = true;

	kiln_buf_adds(b, "{\"type\":");
	if (o->type)
		kiln_buf_add_json(b, o->type, strlen(o->type));
	else
		kiln_buf_adds(b, "null");
	kiln_buf_addf(b, ",\"base\":{\"profiles\":%zu,\"samples\":%.0f},"
		      "\"new\":{\"profiles\":%zu,\"samples\":%.0f},"
		      "\"confidence\":%g,\"resamples\":%u,\"seed\":%llu,"
		      "\"resampled\":\"%s\",\"tested\":%zu,\"critical\":%.6g,",
		      d->nbase, d->base_samples, d->nnew, d->new_samples,
		      d->opts.confidence, d->opts.resamples,
		      (unsigned long long)d->opts.seed,
		      d->by_profiles ? "profiles and samples" : "samples",
		      d->ntested, d->crit);
	if (d->opts.fail_on < 0)
		kiln_buf_adds(b, "\"fail_on\":null,\"regression\":null,");
	else
		kiln_buf_addf(b, "\"fail_on\":%g,\"regression\":%s,",
			      d->opts.fail_on, d->nregressions ? "true" : "false");
	kiln_buf_adds(b, "\"regressions\":[");
	for (i = 0; i < d->n; i++) {
		if (!is_reg(&d->rows[i]))
			continue;
		if (!first)
			kiln_buf_addc(b, ',');
		first = false;
		kiln_buf_add_json(b, d->rows[i].name, strlen(d->rows[i].name));
	}
	kiln_buf_adds(b, "],\"svg\":");
	if (o->svg)
		kiln_buf_add_json(b, o->svg, strlen(o->svg));
	else
		kiln_buf_adds(b, "null");
	kiln_buf_adds(b, ",\"functions\":[");
	for (i = 0; i < d->n; i++) {
		const struct kiln_diff_row *r = &d->rows[i];

		kiln_buf_adds(b, i ? ",\n{\"name\":" : "\n{\"name\":");
		kiln_buf_add_json(b, r->name, strlen(r->name));
		kiln_buf_adds(b, ",");
		json_stat(b, "flat", &r->flat);
		kiln_buf_adds(b, ",");
		json_stat(b, "cum", &r->cum);
		kiln_buf_adds(b, "}");
	}
	kiln_buf_adds(b, "]}\n");
}

int kiln_diffreport(const struct kiln_diff *d,
		    const struct kiln_diffreport_opts *o, struct kiln_buf *out)
{
	switch (o->format) {
	case KILN_DIFFREPORT_JSON: json(d, o, out); break;
	case KILN_DIFFREPORT_MARKDOWN: markdown(d, o, out); break;
	default: text(d, o, out); break;
	}
	/* Checked once at the end: a buffer that could not grow on the
	 * way has no room to grow now either. */
	if (!out->data || kiln_buf_grow(out, 1))
		return -ENOMEM;
	return 0;
}
