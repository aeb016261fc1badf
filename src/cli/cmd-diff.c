/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln diff BASE... -- NEW...`: per-function change between two sets of
 * profiles with confidence intervals, and a verdict for CI (cli stage:
 * options only; the statistics are profile/diff.c, the report
 * render/diffreport.c, the flame graph render/flame.c).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "profile/diff.h"
#include "profile/profile.h"
#include "render/diffreport.h"
#include "render/flame.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"

enum { OPT_FAIL_ON = 256, OPT_FORMAT, OPT_JSON, OPT_MARKDOWN, OPT_SVG,
       OPT_NO_SVG, OPT_CONFIDENCE, OPT_RESAMPLES, OPT_SEED, OPT_MIN_SAMPLES,
       OPT_TYPE, OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_TRANSFORM, OPT_NO_LOCAL, OPT_EVENT };

static const struct option opts[] = {
	{ "fail-on", required_argument, NULL, OPT_FAIL_ON },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "markdown", no_argument, NULL, OPT_MARKDOWN },
	{ "output", required_argument, NULL, 'o' },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "no-svg", no_argument, NULL, OPT_NO_SVG },
	{ "nodes", required_argument, NULL, 'n' },
	{ "confidence", required_argument, NULL, OPT_CONFIDENCE },
	{ "resamples", required_argument, NULL, OPT_RESAMPLES },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "min-samples", required_argument, NULL, OPT_MIN_SAMPLES },
	{ "sample-type", required_argument, NULL, OPT_TYPE },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "hide", required_argument, NULL, OPT_HIDE },
	{ "transform", required_argument, NULL, OPT_TRANSFORM },
	{ "no-local-symbols", no_argument, NULL, OPT_NO_LOCAL },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One side's profiles, each read apart (its own type index). */
struct side {
	struct kiln_prof **p;
	int *types;
	int n;
};

static void side_free(struct side *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		kiln_prof_free(s->p[i]);
	free(s->p);
	free(s->types);
}

static int side_load(struct side *s, char **files, int n,
		     const struct kiln_cli_input *in)
{
	int i, rc;

	s->p = calloc((size_t)n, sizeof(*s->p));
	s->types = calloc((size_t)n, sizeof(*s->types));
	if (!s->p || !s->types) {
		kiln_cli_error("out of memory");
		return KILN_EXIT_FAIL;
	}
	for (i = 0; i < n; i++) {
		rc = kiln_cli_load(files + i, 1, in, &s->p[i], &s->types[i]);
		if (rc)
			return rc;
		s->n++;
	}
	return KILN_EXIT_OK;
}

/* "cpu/nanoseconds": the type compared in profile p. */
static void type_name(const struct kiln_prof *p, int type, struct kiln_buf *b)
{
	kiln_buf_addf(b, "%s/%s", kiln_prof_str(p, p->types[type].type),
		      kiln_prof_str(p, p->types[type].unit));
}

/* Every profile must have the type of the first: shares of one thing. */
static int same_types(const struct side *base, const struct side *new,
		      char **bfiles, char **nfiles, struct kiln_buf *name)
{
	struct kiln_buf other = KILN_BUF_INIT;
	int i, rc = KILN_EXIT_OK;

	type_name(base->p[0], base->types[0], name);
	for (i = 0; i < base->n + new->n && !rc; i++) {
		const struct side *s = i < base->n ? base : new;
		int k = i < base->n ? i : i - base->n;

		kiln_buf_reset(&other);
		type_name(s->p[k], s->types[k], &other);
		if (name->data && other.data && strcmp(name->data, other.data)) {
			kiln_cli_error("'%s' is compared by %s but '%s' by %s: "
				       "pick one with --sample-type",
				       bfiles[0], name->data,
				       i < base->n ? bfiles[k] : nfiles[k],
				       other.data);
			rc = KILN_EXIT_USAGE;
		}
	}
	kiln_buf_release(&other);
	return rc;
}

/* A side as one profile for the flame graph: the first, or a merge. */
static int side_merged(const struct side *s, struct kiln_prof **out,
		       char **files)
{
	struct kiln_diag d = { "" };
	struct kiln_prof *m;
	int i, err;

	if (s->n == 1) {
		*out = NULL;
		return KILN_EXIT_OK;
	}
	m = kiln_prof_new();
	if (!m) {
		kiln_cli_error("out of memory");
		return KILN_EXIT_FAIL;
	}
	for (i = 0; i < s->n; i++) {
		err = kiln_prof_merge(m, s->p[i], &d);
		if (err) {
			kiln_prof_free(m);
			if (err == -EINVAL)
				kiln_cli_error("cannot merge '%s' into '%s': %s",
					       files[i], files[0], d.msg);
			else
				kiln_cli_error("out of memory");
			return err == -EINVAL ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
		}
	}
	*out = m;
	return KILN_EXIT_OK;
}

/* The differential flame graph: widths from NEW, colours against BASE. */
static int write_svg(const struct side *base, const struct side *new,
		     char **bfiles, char **nfiles, const char *path,
		     char **inputs, int ninputs)
{
	struct kiln_flame_opts fo = { 0 };
	struct kiln_prof *mb = NULL, *mn = NULL;
	struct kiln_buf out = KILN_BUF_INIT;
	int rc, err, type;


	rc = side_merged(base, &mb, bfiles);
	if (!rc)
		rc = side_merged(new, &mn, nfiles);
	if (rc)
		goto out;
	/* A merge takes its types from the first profile: same indexes. */
	fo.base = mb ? mb : base->p[0];
	fo.base_type = base->types[0];
	type = new->types[0];
	fo.title = "Differential Flame Graph (kiln diff)";
	err = kiln_flame_svg(mn ? mn : new->p[0], type, &fo, &out);
	if (err) {
		kiln_cli_error("cannot draw the flame graph: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out;
	}
	rc = kiln_cli_write(path, out.data, out.len, inputs, ninputs);
out:
	kiln_buf_release(&out);
	kiln_prof_free(mb);
	kiln_prof_free(mn);
	return rc;
}

/* "5%", "5" or "0.5": points of share, >= 0. */
static int parse_points(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || (*end && strcmp(end, "%")) || !isfinite(v) || v < 0 ||
	    v > 100)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "0.95", "95%" or "95". */
static int parse_confidence(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || (*end && strcmp(end, "%")) || !isfinite(v))
		return -EINVAL;
	if (*end || v > 1)
		v /= 100;
	if (v < 0.5 || v >= 1)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_count(const char *s, unsigned long long max,
		       unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (*s == '-')
		return -EINVAL;
	v = strtoull(s, &end, 10);
	if (end == s || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

struct args {
	struct kiln_cli_input in;
	struct kiln_diff_opts dopts;
	struct kiln_diffreport_opts ropts;
	const char *output, *svg;
	bool no_svg;
};

/* Options before "--" (argc ends there).  0 or the exit status + 1. */
static int parse(int argc, char **argv, struct args *a)
{
	unsigned long long v;
	int c;

	while ((c = getopt_long(argc, argv, "o:n:qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FAIL_ON:
			if (parse_points(optarg, &a->dopts.fail_on))
				return 1 + kiln_cli_usage_error("diff",
					"bad --fail-on '%s': want points of share between 0 and 100 (5%%)",
					optarg);
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text"))
				a->ropts.format = KILN_DIFFREPORT_TEXT;
			else if (!strcmp(optarg, "json"))
				a->ropts.format = KILN_DIFFREPORT_JSON;
			else if (!strcmp(optarg, "markdown") || !strcmp(optarg, "md"))
				a->ropts.format = KILN_DIFFREPORT_MARKDOWN;
			else
				return 1 + kiln_cli_usage_error("diff",
					"bad --format '%s': want text, json or markdown", optarg);
			break;
		case OPT_JSON: a->ropts.format = KILN_DIFFREPORT_JSON; break;
		case OPT_MARKDOWN: a->ropts.format = KILN_DIFFREPORT_MARKDOWN; break;
		case 'o': a->output = optarg; break;
		case OPT_SVG: a->svg = optarg; break;
		case OPT_NO_SVG: a->no_svg = true; break;
		case 'n':
			if (parse_count(optarg, 1000000000ull, &v))
				return 1 + kiln_cli_usage_error("diff",
					"bad -n '%s': want a count (0 for all)", optarg);
			a->ropts.rows = (size_t)v;
			break;
		case OPT_CONFIDENCE:
			if (parse_confidence(optarg, &a->dopts.confidence))
				return 1 + kiln_cli_usage_error("diff",
					"bad --confidence '%s': want 0.5 to 0.999 (0.95 or 95%%)",
					optarg);
			break;
		case OPT_RESAMPLES:
			if (parse_count(optarg, 1000000ull, &v) || v < 100)
				return 1 + kiln_cli_usage_error("diff",
					"bad --resamples '%s': want 100 to 1000000", optarg);
			a->dopts.resamples = (unsigned)v;
			break;
		case OPT_SEED:
			if (parse_count(optarg, ~0ull, &v))
				return 1 + kiln_cli_usage_error("diff",
					"bad --seed '%s': want a number", optarg);
			a->dopts.seed = v;
			break;
		case OPT_MIN_SAMPLES:
			if (parse_count(optarg, 1000000000ull, &v) || !v)
				return 1 + kiln_cli_usage_error("diff",
					"bad --min-samples '%s': want a count of 1 or more", optarg);
			a->dopts.min_samples = (double)v;
			break;
		case OPT_TYPE: a->in.sample_type = optarg; break;
		case OPT_FOCUS: a->in.focus = optarg; break;
		case OPT_IGNORE: a->in.ignore = optarg; break;
		case OPT_HIDE: a->in.hide = optarg; break;
		case OPT_TRANSFORM: a->in.transform = optarg; break;
		case OPT_NO_LOCAL: kiln_sym_set_no_local(true); break;
		case OPT_EVENT: a->in.event = optarg; break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("diff", false); return 1 + KILN_EXIT_OK;
		default: return 1 + kiln_cli_usage_error("diff", "unknown option");
		}
	}
	return 0;
}

/* "new.pb.gz" -> "new.diff.svg" in the current folder. */
static void default_svg(const char *input, struct kiln_buf *b)
{
	size_t len;
	const char *stem = kiln_cli_input_stem(input, &len);

	kiln_buf_add(b, stem, len);
	kiln_buf_adds(b, ".diff.svg");
}

static int report(const struct args *a, const struct kiln_diff *d,
		  char **inputs, int ninputs)
{
	struct kiln_buf out = KILN_BUF_INIT;
	int rc = KILN_EXIT_OK;

	if (kiln_diffreport(d, &a->ropts, &out)) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
	} else if (a->output && strcmp(a->output, "-")) {
		rc = kiln_cli_write(a->output, out.data, out.len, inputs, ninputs);
	} else if (fwrite(out.data, 1, out.len, stdout) != out.len ||
		   fflush(stdout)) {
		kiln_cli_error("cannot write the report");
		rc = KILN_EXIT_FAIL;
	}
	kiln_buf_release(&out);
	return rc;
}

int kiln_cmd_diff(int argc, char **argv)
{
	struct args a = { .dopts = KILN_DIFF_OPTS_INIT, .ropts = { .rows = 20 } };
	struct side base = { 0 }, new = { 0 };
	struct kiln_diff d = KILN_DIFF_INIT;
	struct kiln_buf tname = KILN_BUF_INIT, svg = KILN_BUF_INIT;
	char **bfiles, **nfiles;
	int dd, nb, nn, rc, err, i;

	/* "--" splits BASE... from NEW...; options come before it. */
	for (dd = 1; dd < argc && strcmp(argv[dd], "--"); dd++)
		;
	rc = parse(dd, argv, &a);
	if (rc)
		return rc - 1;
	bfiles = argv + optind;
	nb = dd - optind;
	if (dd < argc) {
		nfiles = argv + dd + 1;
		nn = argc - dd - 1;
	} else if (nb == 2) {
		nfiles = argv + optind + 1;
		nb = nn = 1;
	} else {
		return kiln_cli_usage_error("diff", nb < 2 ?
			"want BASE and NEW profiles" :
			"several profiles a side: BASE... -- NEW...");
	}
	if (!nb || !nn)
		return kiln_cli_usage_error("diff", "want at least one profile on each side of --");
	for (i = 0; i < nn; i++)
		if (!strcmp(nfiles[i], "--"))
			return kiln_cli_usage_error("diff", "one -- only");
	rc = side_load(&base, bfiles, nb, &a.in);
	if (!rc)
		rc = side_load(&new, nfiles, nn, &a.in);
	if (!rc)
		rc = same_types(&base, &new, bfiles, nfiles, &tname);
	if (rc)
		goto out;
	err = kiln_diff_build(&d, base.p, base.types, (size_t)nb, new.p,
			      new.types, (size_t)nn, &a.dopts);
	if (err) {
		kiln_cli_error("cannot compare the profiles: %s", strerror(-err));
		rc = err == -EINVAL ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
		goto out;
	}
	if (!a.no_svg) {
		if (!a.svg)
			default_svg(nfiles[0], &svg);
		else
			kiln_buf_adds(&svg, a.svg);
		a.ropts.svg = svg.data;
		rc = write_svg(&base, &new, bfiles, nfiles, svg.data,
			       argv + optind, argc - optind);
		if (rc)
			goto out;
	}
	a.ropts.type = tname.data;
	rc = report(&a, &d, argv + optind, argc - optind);
	if (!rc && d.nregressions)
		rc = KILN_EXIT_FAIL;
out:
	kiln_diff_release(&d);
	kiln_buf_release(&tname);
	kiln_buf_release(&svg);
	side_free(&base);
	side_free(&new);
	return rc;
}
