/*
 * `kiln convert`: between profile formats (cli stage).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "symbolize/symbolize.h"
#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"

enum { OPT_TO = 256, OPT_TYPE, OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_NO_LOCAL,
       OPT_EVENT };

static const struct option opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "to", required_argument, NULL, OPT_TO },
	{ "sample-type", required_argument, NULL, OPT_TYPE },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "hide", required_argument, NULL, OPT_HIDE },
	{ "no-local-symbols", no_argument, NULL, OPT_NO_LOCAL },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

int kiln_cmd_convert(int argc, char **argv)
{
	struct kiln_cli_input in = { 0 };
	struct kiln_buf out = KILN_BUF_INIT;
	struct kiln_prof *p;
	const char *output = NULL, *to = NULL;
	enum kiln_fmt fmt;
	int c, rc, type, err;

	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case OPT_TO: to = optarg; break;
		case OPT_TYPE: in.sample_type = optarg; break;
		case OPT_FOCUS: in.focus = optarg; break;
		case OPT_IGNORE: in.ignore = optarg; break;
		case OPT_HIDE: in.hide = optarg; break;
		case OPT_NO_LOCAL: kiln_sym_set_no_local(true); break;
		case OPT_EVENT: in.event = optarg; break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("convert", false); return 0;
		default: return kiln_cli_usage_error("convert", "unknown option");
		}
	}
	if (optind >= argc)
		return kiln_cli_usage_error("convert", "no input file");
	if (!output)
		return kiln_cli_usage_error("convert", "no output file: give -o OUT");
	if (to) {
		fmt = kiln_fmt_parse(to);
		if (fmt != KILN_FMT_PPROF && fmt != KILN_FMT_COLLAPSED &&
		    fmt != KILN_FMT_SPEEDSCOPE && fmt != KILN_FMT_PERF_SCRIPT)
			return kiln_cli_usage_error("convert",
				"cannot write format '%s': choose pprof, collapsed, speedscope or perf-script",
				to);
	} else {
		fmt = kiln_fmt_from_ext(output);
		if (fmt == KILN_FMT_UNKNOWN)
			return kiln_cli_usage_error("convert",
				"cannot tell the output format from '%s': use --to pprof|collapsed|speedscope|perf-script or an extension (.pb.gz, .collapsed, .json, .perf)",
				output);
	}
	if (fmt != KILN_FMT_PPROF && fmt != KILN_FMT_COLLAPSED &&
	    fmt != KILN_FMT_SPEEDSCOPE && fmt != KILN_FMT_PERF_SCRIPT)
		return kiln_cli_usage_error("convert",
			"'%s' names a %s file, which kiln reads but does not write: use --to pprof|collapsed|speedscope|perf-script",
			output, kiln_fmt_name(fmt));
	rc = kiln_cli_load(argv + optind, argc - optind, &in, &p, &type);
	if (rc)
		return rc;
	switch (fmt) {
	case KILN_FMT_PPROF:
		err = kiln_pprof_write(p, &out, !ends_with(output, ".pb"));
		break;
	case KILN_FMT_COLLAPSED:
		err = kiln_collapsed_write(p, type, &out);
		break;
	case KILN_FMT_SPEEDSCOPE:
		err = kiln_speedscope_write(p, type, argv[optind], &out);
		break;
	default:
		err = kiln_perfscript_write(p, type, &out);
		break;
	}
	if (err) {
		kiln_cli_error("cannot write %s: %s", kiln_fmt_name(fmt),
			       strerror(-err));
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	rc = kiln_cli_write(output, out.data, out.len, argv + optind,
			    argc - optind);
out_free:
	kiln_buf_release(&out);
	kiln_prof_free(p);
	return rc;
}
