/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln flame`: interactive flame graph SVG (cli stage).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "symbolize/symbolize.h"
#include "profile/profile.h"
#include "render/flame.h"
#include "util/buf.h"

enum { OPT_TITLE = 256, OPT_REVERSE, OPT_DIFF, OPT_WIDTH, OPT_TYPE,
       OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_TRANSFORM, OPT_NO_LOCAL, OPT_EVENT,
       OPT_DIFF_BY, OPT_ABSOLUTE, OPT_NORMALIZE };

static const struct option opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "reverse", no_argument, NULL, OPT_REVERSE },
	{ "diff", required_argument, NULL, OPT_DIFF },
	{ "diff-by", required_argument, NULL, OPT_DIFF_BY },
	{ "absolute", no_argument, NULL, OPT_ABSOLUTE },
	{ "normalize", no_argument, NULL, OPT_NORMALIZE },
	{ "width", required_argument, NULL, OPT_WIDTH },
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

/* "dir/cpu.pb.gz" -> "cpu.svg" in the current folder; a URL's
 * ".../debug/pprof/profile?seconds=5" -> "profile.svg". */
static void default_output(const char *input, struct kiln_buf *b)
{
	size_t len;
	const char *stem = kiln_cli_input_stem(input, &len);

	kiln_buf_add(b, stem, len);
	kiln_buf_adds(b, ".svg");
}

int kiln_cmd_flame(int argc, char **argv)
{
	struct kiln_cli_input in = { 0 };
	struct kiln_flame_opts fo = { 0 };
	struct kiln_buf out = KILN_BUF_INIT, name = KILN_BUF_INIT;
	struct kiln_prof *p = NULL, *base = NULL;
	const char *output = NULL, *diff = NULL;
	char *inputs[2];
	int c, rc, type, err;
	char *end;

	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case OPT_TITLE: fo.title = optarg; break;
		case OPT_REVERSE: fo.reverse = true; break;
		case OPT_DIFF: diff = optarg; break;
		case OPT_DIFF_BY:
			if (!strcmp(optarg, "function"))
				fo.diff_by_function = true;
			else if (strcmp(optarg, "path"))
				return kiln_cli_usage_error("flame",
					"bad --diff-by '%s': want path or function",
					optarg);
			break;
		case OPT_ABSOLUTE: fo.diff_compare = 1; break;
		case OPT_NORMALIZE: fo.diff_compare = -1; break;
		case OPT_WIDTH:
			fo.width = (int)strtol(optarg, &end, 10);
			if (*end || fo.width < 100 || fo.width > 100000)
				return kiln_cli_usage_error("flame",
					"bad --width '%s': want pixels between 100 and 100000",
					optarg);
			break;
		case OPT_TYPE: in.sample_type = optarg; break;
		case OPT_FOCUS: in.focus = optarg; break;
		case OPT_IGNORE: in.ignore = optarg; break;
		case OPT_HIDE: in.hide = optarg; break;
		case OPT_TRANSFORM: in.transform = optarg; break;
		case OPT_NO_LOCAL: kiln_sym_set_no_local(true); break;
		case OPT_EVENT: in.event = optarg; break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("flame", false); return 0;
		default: return kiln_cli_usage_error("flame", "unknown option");
		}
	}
	in.binary = kiln_cli_take_binary(argc, argv, &optind);
	if (optind >= argc)
		return kiln_cli_usage_error("flame", "no input file");
	if (argc - optind > 1)
		return kiln_cli_usage_error("flame",
			"one input file (merge several with kiln convert first)");
	rc = kiln_cli_load(argv + optind, 1, &in, &p, &type);
	if (rc)
		return rc;
	if (diff) {
		rc = kiln_cli_load((char **)&diff, 1, &in, &base, &fo.base_type);
		if (rc)
			goto out_free;
		fo.base = base;
	}
	if (!output) {
		if (!strcmp(argv[optind], "-")) {
			output = "-";
		} else {
			default_output(argv[optind], &name);
			output = name.data;
		}
	}
	err = kiln_flame_svg(p, type, &fo, &out);
	if (err) {
		kiln_cli_error("cannot draw the flame graph: %s", strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	inputs[0] = argv[optind];
	inputs[1] = (char *)(diff ? diff : argv[optind]);
	rc = kiln_cli_write(output, out.data, out.len, inputs, 2);
	if (!rc && strcmp(output, "-") && !kiln_cli_quiet)
		fprintf(stderr, "kiln: wrote '%s'\n", output);
out_free:
	kiln_buf_release(&out);
	kiln_buf_release(&name);
	kiln_prof_free(p);
	kiln_prof_free(base);
	return rc;
}
