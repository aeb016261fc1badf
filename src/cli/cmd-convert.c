/* SPDX-License-Identifier: Apache-2.0 */
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

enum { OPT_TO = 256, OPT_TYPE, OPT_FOCUS, OPT_IGNORE, OPT_HIDE, OPT_TRANSFORM, OPT_NO_LOCAL,
       OPT_EVENT, OPT_NO_TIMES };

static const struct option opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "to", required_argument, NULL, OPT_TO },
	{ "sample-type", required_argument, NULL, OPT_TYPE },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "hide", required_argument, NULL, OPT_HIDE },
	{ "transform", required_argument, NULL, OPT_TRANSFORM },
	{ "no-local-symbols", no_argument, NULL, OPT_NO_LOCAL },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "no-times", no_argument, NULL, OPT_NO_TIMES },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static bool writable(enum kiln_fmt f)
{
	const struct kiln_fmt_info *e = kiln_fmt_info(f);

	return e && e->write;
}

/*
 * The usage error for an output kiln cannot write: format to (--to),
 * else the format fmt that the output's name tells, if any.  The formats
 * kiln writes are listed from the table (format/registry.c).
 */
static int refuse_output(const char *output, const char *to,
			 enum kiln_fmt fmt)
{
	struct kiln_buf b = KILN_BUF_INIT;
	const struct kiln_fmt_info *e;
	size_t i;
	int rc;

	if (to) {
		kiln_buf_addf(&b, "cannot write format '%s': choose ", to);
		kiln_fmt_list_writable(&b, ", ", " or ");
	} else if (fmt == KILN_FMT_UNKNOWN) {
		kiln_buf_addf(&b, "cannot tell the output format from '%s': "
			      "use --to ", output);
		kiln_fmt_list_writable(&b, "|", "|");
		kiln_buf_adds(&b, " or an extension (");
		for (i = 0; (e = kiln_fmt_written(i)); i++)
			kiln_buf_addf(&b, "%s%.*s", i ? ", " : "",
				      (int)strcspn(e->exts, " "), e->exts);
		kiln_buf_adds(&b, ")");
	} else {
		kiln_buf_addf(&b, "'%s' names a %s file, which kiln reads but "
			      "does not write: use --to ", output,
			      kiln_fmt_name(fmt));
		kiln_fmt_list_writable(&b, "|", "|");
	}
	rc = kiln_cli_usage_error("convert", "%s", b.data ? b.data : "");
	kiln_buf_release(&b);
	return rc;
}

int kiln_cmd_convert(int argc, char **argv)
{
	struct kiln_cli_input in = { 0 };
	struct kiln_buf out = KILN_BUF_INIT;
	struct kiln_fmt_wopts wo = { 0 };
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
		case OPT_TRANSFORM: in.transform = optarg; break;
		case OPT_NO_LOCAL: kiln_sym_set_no_local(true); break;
		case OPT_EVENT: in.event = optarg; break;
		case OPT_NO_TIMES: wo.no_times = true; break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("convert", false); return 0;
		default: return kiln_cli_usage_error("convert", "unknown option");
		}
	}
	in.binary = kiln_cli_take_binary(argc, argv, &optind);
	if (optind >= argc)
		return kiln_cli_usage_error("convert", "no input file");
	if (!output)
		return kiln_cli_usage_error("convert", "no output file: give -o OUT");
	fmt = to ? kiln_fmt_parse(to) : kiln_fmt_from_ext(output);
	if (!writable(fmt))
		return refuse_output(output, to, fmt);
	rc = kiln_cli_load(argv + optind, argc - optind, &in, &p, &type);
	if (rc)
		return rc;
	wo.type = type;
	wo.name = argv[optind];
	wo.raw = ends_with(output, ".pb");
	err = kiln_fmt_write(fmt, p, &wo, &out);
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
