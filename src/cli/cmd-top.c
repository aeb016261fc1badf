/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln top`: the hottest functions as a text table, like `pprof -top`
 * (cli stage).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "symbolize/symbolize.h"
#include "profile/profile.h"
#include "profile/top.h"

enum { OPT_CUM = 256, OPT_LINES, OPT_ADDRESSES, OPT_TYPE, OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_TRANSFORM, OPT_NO_LOCAL,
       OPT_EVENT };

static const struct option opts[] = {
	{ "nodes", required_argument, NULL, 'n' },
	{ "cum", no_argument, NULL, OPT_CUM },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "addresses", no_argument, NULL, OPT_ADDRESSES },
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

static void print_table(struct kiln_prof *p, int type, const struct kiln_top *t,
			long nodes, enum kiln_top_by by)
{
	const char *unit = kiln_prof_str(p, p->types[type].unit);
	char a[32], b[32], c[32];
	int64_t shown = 0, sum = 0;
	size_t i, n = t->n;
	double total = t->total ? (double)t->total : 1.0;

	if (nodes > 0 && (size_t)nodes < n)
		n = (size_t)nodes;
	for (i = 0; i < n; i++)
		shown += t->rows[i].flat;
	printf("Type: %s\n", kiln_prof_str(p, p->types[type].type));
	kiln_value_str(shown, unit, a, sizeof(a));
	kiln_value_str(t->total, unit, b, sizeof(b));
	printf("Showing nodes accounting for %s, %.2f%% of %s total\n", a,
	       100.0 * (double)shown / total, b);
	if (n < t->n)
		printf("Dropped %zu nodes\n", t->n - n);
	printf("%10s %6s %6s %10s %6s\n", "flat", "flat%", "sum%", "cum", "cum%");
	for (i = 0; i < n; i++) {
		const struct kiln_top_row *r = &t->rows[i];

		sum += r->flat;
		kiln_value_str(r->flat, unit, a, sizeof(a));
		kiln_value_str(r->cum, unit, c, sizeof(c));
		printf("%10s %5.2f%% %5.2f%% %10s %5.2f%%  ", a,
		       100.0 * (double)r->flat / total,
		       100.0 * (double)sum / total, c,
		       100.0 * (double)r->cum / total);
		/* As pprof -addresses prints it: the address first. */
		if (by == KILN_TOP_ADDRESSES)
			printf("%016" PRIx64 " ", r->address);
		fputs(kiln_prof_str(p, r->name), stdout);
		if (by == KILN_TOP_LINES)
			printf(" %s:%lld", r->file ? kiln_prof_str(p, r->file) : "?",
			       (long long)r->line);
		putchar('\n');
	}
}

int kiln_cmd_top(int argc, char **argv)
{
	struct kiln_cli_input in = { 0 };
	struct kiln_top t = KILN_TOP_INIT;
	struct kiln_prof *p;
	bool by_cum = false;
	enum kiln_top_by by = KILN_TOP_FUNCTIONS;
	long nodes = 20;
	int c, rc, type, err;
	char *end;

	while ((c = getopt_long(argc, argv, "n:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			nodes = strtol(optarg, &end, 10);
			if (*end || nodes < 0 || end == optarg)
				return kiln_cli_usage_error("top", "bad -n '%s': want a count (0 for all)",
							    optarg);
			break;
		case OPT_CUM: by_cum = true; break;
		case OPT_LINES: by = KILN_TOP_LINES; break;
		case OPT_ADDRESSES: by = KILN_TOP_ADDRESSES; break;
		case OPT_TYPE: in.sample_type = optarg; break;
		case OPT_FOCUS: in.focus = optarg; break;
		case OPT_IGNORE: in.ignore = optarg; break;
		case OPT_HIDE: in.hide = optarg; break;
		case OPT_TRANSFORM: in.transform = optarg; break;
		case OPT_NO_LOCAL: kiln_sym_set_no_local(true); break;
		case OPT_EVENT: in.event = optarg; break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("top", false); return 0;
		default: return kiln_cli_usage_error("top", "unknown option");
		}
	}
	in.binary = kiln_cli_take_binary(argc, argv, &optind);
	if (optind >= argc)
		return kiln_cli_usage_error("top", "no input file");
	rc = kiln_cli_load(argv + optind, argc - optind, &in, &p, &type);
	if (rc)
		return rc;
	err = kiln_top_build(&t, p, type, by, by_cum);
	if (err) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	print_table(p, type, &t, nodes, by);
	if (!t.total)
		fprintf(stderr, "kiln: '%s' holds no %s%s\n", argv[optind],
			p->nsamples ? "value of this sample type (see "
				      "--sample-type)" : "samples",
			in.focus || in.ignore ? " once --focus/--ignore are "
						"applied" : "");
	if (fflush(stdout)) {
		kiln_cli_error("cannot write the table");
		rc = KILN_EXIT_FAIL;
	}
	kiln_top_release(&t);
out_free:
	kiln_prof_free(p);
	return rc;
}
