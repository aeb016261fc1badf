/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln callgraph`: a call graph like gprof2dot's and pprof's, laid out
 * in process by graphviz's library (cli stage).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "profile/profile.h"
#include "render/callgraph.h"
#include "util/buf.h"

enum { OPT_NODE_FRACTION = 256, OPT_EDGE_FRACTION, OPT_LINES, OPT_TYPE,
       OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_TRANSFORM, OPT_DIFF, OPT_FORMAT, OPT_EVENT };

static const struct option opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "node-fraction", required_argument, NULL, OPT_NODE_FRACTION },
	{ "edge-fraction", required_argument, NULL, OPT_EDGE_FRACTION },
	{ "nodes", required_argument, NULL, 'n' },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "sample-type", required_argument, NULL, OPT_TYPE },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "hide", required_argument, NULL, OPT_HIDE },
	{ "transform", required_argument, NULL, OPT_TRANSFORM },
	{ "diff", required_argument, NULL, OPT_DIFF },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char *const formats[] = { "svg", "dot", "png", "pdf" };

static bool known_format(const char *f)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(f, formats[i]))
			return true;
	return false;
}

/* The format named by a file's extension ("gv" is DOT too), SVG for a
 * name without one (/dev/stdout, a FIFO); NULL for an unknown one. */
static const char *format_of(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return "svg";
	if (!strcmp(dot + 1, "gv"))
		return "dot";
	return known_format(dot + 1) ? dot + 1 : NULL;
}

/* "dir/cpu.pb.gz" -> "cpu.callgraph.svg" in the current folder; a URL's
 * ".../debug/pprof/profile?seconds=5" -> "profile.callgraph.svg". */
static void default_output(const char *input, const char *fmt,
			   struct kiln_buf *b)
{
	size_t len;
	const char *stem = kiln_cli_input_stem(input, &len);

	kiln_buf_add(b, stem, len);
	kiln_buf_addf(b, ".callgraph.%s", fmt);
}

static bool parse_fraction(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0 && v <= 1))
		return false;
	*out = v;
	return true;
}

int kiln_cmd_callgraph(int argc, char **argv)
{
	struct kiln_cli_input in = { 0 };
	struct kiln_callgraph_opts co = KILN_CALLGRAPH_OPTS_INIT;
	struct kiln_callgraph_dot_opts dot_opts = { 0 };
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;
	struct kiln_buf dot = KILN_BUF_INIT, out = KILN_BUF_INIT;
	struct kiln_buf name = KILN_BUF_INIT;
	struct kiln_prof *p = NULL, *base = NULL;
	const char *output = NULL, *diff = NULL, *fmt = NULL;
	char *inputs[2];
	int c, rc, type, err;
	long nodes;
	char *end;

	while ((c = getopt_long(argc, argv, "o:n:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case OPT_FORMAT:
			if (!known_format(optarg))
				return kiln_cli_usage_error("callgraph",
					"bad --format '%s': want svg, dot, png or pdf",
					optarg);
			fmt = optarg;
			break;
		case OPT_NODE_FRACTION:
			if (!parse_fraction(optarg, &co.node_fraction))
				return kiln_cli_usage_error("callgraph",
					"bad --node-fraction '%s': want a number from 0 to 1",
					optarg);
			break;
		case OPT_EDGE_FRACTION:
			if (!parse_fraction(optarg, &co.edge_fraction))
				return kiln_cli_usage_error("callgraph",
					"bad --edge-fraction '%s': want a number from 0 to 1",
					optarg);
			break;
		case 'n':
			nodes = strtol(optarg, &end, 10);
			if (end == optarg || *end || nodes < 0 || nodes > 1000000)
				return kiln_cli_usage_error("callgraph",
					"bad --nodes '%s': want a count (0 for all)",
					optarg);
			co.max_nodes = (int)nodes;
			break;
		case OPT_LINES: co.by_line = true; break;
		case OPT_TYPE: in.sample_type = optarg; break;
		case OPT_FOCUS: in.focus = optarg; break;
		case OPT_IGNORE: in.ignore = optarg; break;
		case OPT_HIDE: in.hide = optarg; break;
		case OPT_TRANSFORM: in.transform = optarg; break;
		case OPT_DIFF: diff = optarg; break;
		case OPT_EVENT: in.event = optarg; break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("callgraph", false); return 0;
		default: return kiln_cli_usage_error("callgraph", "unknown option");
		}
	}
	in.binary = kiln_cli_take_binary(argc, argv, &optind);
	if (optind >= argc)
		return kiln_cli_usage_error("callgraph", "no input file");
	if (argc - optind > 1)
		return kiln_cli_usage_error("callgraph",
			"one input file (merge several with kiln convert first)");
	if (!fmt && output && strcmp(output, "-")) {
		fmt = format_of(output);
		if (!fmt)
			return kiln_cli_usage_error("callgraph",
				"cannot tell the format of '%s': name it .svg, .dot, "
				".png or .pdf, or give --format", output);
	}
	if (!fmt)
		fmt = "svg";
	rc = kiln_cli_load(argv + optind, 1, &in, &p, &type);
	if (rc)
		return rc;
	if (diff) {
		rc = kiln_cli_load((char **)&diff, 1, &in, &base, &co.base_type);
		if (rc)
			goto out_free;
		co.base = base;
	}
	if (!output) {
		if (!strcmp(argv[optind], "-")) {
			output = "-";
		} else {
			default_output(argv[optind], fmt, &name);
			output = name.data;
		}
	}
	dot_opts.title = argv[optind];
	err = kiln_callgraph_build(&g, p, type, &co);
	if (!err)
		err = kiln_callgraph_dot(&g, &dot_opts, &dot);
	if (err) {
		kiln_cli_error("cannot build the call graph: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	if (strcmp(fmt, "dot")) {
		struct kiln_diag d = { "" };

		err = kiln_callgraph_render(dot.data, dot.len, fmt, &out, &d);
		if (err == -ENOENT) {
			kiln_cli_error("cannot draw the call graph as %s: %s",
				       fmt, d.msg);
			rc = KILN_EXIT_FAIL;
			goto out_free;
		} else if (err) {
			kiln_cli_error("cannot lay out the call graph as %s with "
				       "graphviz: %s", fmt,
				       err == -EINVAL ? "layout or format failed" :
				       strerror(-err));
			rc = KILN_EXIT_FAIL;
			goto out_free;
		}
	}
	inputs[0] = argv[optind];
	inputs[1] = (char *)(diff ? diff : argv[optind]);
	if (strcmp(fmt, "dot"))
		rc = kiln_cli_write(output, out.data, out.len, inputs, 2);
	else
		rc = kiln_cli_write(output, dot.data, dot.len, inputs, 2);
	if (!rc && strcmp(output, "-") && !kiln_cli_quiet) {
		size_t i, nedges = g.nedges;

		for (i = 0; i < g.nnodes; i++)
			nedges += g.nodes[i].loop != 0;
		fprintf(stderr, "kiln: wrote '%s' (%zu nodes, %zu edges)\n",
			output, g.nnodes, nedges);
	}
out_free:
	kiln_callgraph_release(&g);
	kiln_buf_release(&dot);
	kiln_buf_release(&out);
	kiln_buf_release(&name);
	kiln_prof_free(p);
	kiln_prof_free(base);
	return rc;
}
