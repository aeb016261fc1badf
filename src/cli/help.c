/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln help --man [COMMAND]` and `kiln help --complete ...` (cli stage):
 * the command table's usage text rendered as manual pages (render/man.c)
 * and read back for the shells' completion (render/usage.c), so that a
 * new row of src/cli/main.c's table gets its page and its completion
 * with no edit anywhere else.  Hidden from `kiln help`: CMake runs the
 * first at build time, completion/kiln.bash and completion/_kiln the
 * second.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "format/format.h"
#include "kiln-version.h"
#include "profile/profile.h"
#include "render/man.h"
#include "render/usage.h"
#include "util/buf.h"
#include "util/diag.h"

static const char about[] =
	"kiln profiles programs on Linux and reads what other profilers\n"
	"write.  It records CPU and event profiles through perf_event_open or,\n"
	"where that is refused, with its in-process agent libkiln.so; it\n"
	"traces the heap of a command; it counts events as perf stat does; and\n"
	"it reads pprof, perf.data, perf script text, collapsed stacks,\n"
	"speedscope, Chrome and gperftools profiles, heap traces of its own,\n"
	"valgrind massif and heaptrack files, to print tables, draw flame\n"
	"graphs and call graphs, convert them and serve them in a browser.\n"
	"Each command has its page, kiln-COMMAND(1), with the text that\n"
	"`kiln help COMMAND` prints.\n";

/* The text kiln(1) is rendered from: the table's names and summaries. */
static int main_page_text(struct kiln_buf *b)
{
	const char *name, *summary;
	size_t i;

	kiln_buf_adds(b, "usage: kiln COMMAND [options] [-- CMD [ARGS...]]\n"
		      "       kiln help [COMMAND]\n"
		      "       kiln --version\n\n");
	kiln_buf_adds(b, about);
	kiln_buf_adds(b, "\nCommands:\n");
	for (i = 0; (name = kiln_cli_cmd_row(i, &summary)); i++)
		kiln_buf_addf(b, "  kiln-%s(1)  %s\n", name, summary);
	kiln_buf_adds(b, "  help COMMAND  the help of a command, as its page has it\n"
		      "\nOptions:\n"
		      "      --version  the version and the git commit kiln was built\n"
		      "                 from (\"unknown\" outside a git checkout)\n"
		      "  -h, --help     the list of commands\n"
		      "\nFiles:\n"
		      "  ../lib/libkiln.so  from the kiln executable (through\n"
		      "                 /proc/self/exe): the agent that kiln record\n"
		      "                 --mode inject and kiln heap preload, with\n"
		      "                 libkiln-malloc.so beside it; KILN_AGENT=PATH\n"
		      "                 names another libkiln.so\n");
	return b->data ? 0 : -ENOMEM;
}

static int help_man(const char *cmd)
{
	struct kiln_buf text = KILN_BUF_INIT, page = KILN_BUF_INIT, see = KILN_BUF_INIT;
	struct kiln_man_page pg = { "kiln", "1", "profile programs and read, draw "
				    "and convert profiles" };
	char name[64], source[64];
	const char *n, *summary = NULL;
	size_t i;
	int err, rc = KILN_EXIT_FAIL;

	snprintf(source, sizeof(source), "kiln %s", KILN_VERSION);
	pg.source = source;
	if (cmd) {
		for (i = 0; (n = kiln_cli_cmd_row(i, &summary)); i++)
			if (!strcmp(n, cmd))
				break;
		if (!n) {
			kiln_cli_error("no command '%s' (see 'kiln help')", cmd);
			return KILN_EXIT_USAGE;
		}
		snprintf(name, sizeof(name), "kiln-%s", cmd);
		pg.name = name;
		pg.summary = summary;
		err = kiln_cli_usage_text(cmd, &text);
		kiln_buf_adds(&see, "kiln(1), libkiln(7)");
	} else {
		err = main_page_text(&text);
		kiln_buf_adds(&see, "libkiln(7)");
		for (i = 0; (n = kiln_cli_cmd_row(i, NULL)); i++)
			kiln_buf_addf(&see, ", kiln-%s(1)", n);
	}
	if (!err && !see.data)
		err = -ENOMEM;
	if (!err) {
		pg.usage = text.data;
		pg.see_also = see.data;
		err = kiln_man_render(&page, &pg);
	}
	if (err)
		kiln_cli_error("cannot render the page: %s", strerror(-err));
	else if (fwrite(page.data, 1, page.len, stdout) == page.len && !fflush(stdout))
		rc = KILN_EXIT_OK;
	kiln_buf_release(&see);
	kiln_buf_release(&page);
	kiln_buf_release(&text);
	return rc;
}

/* What one `--complete options` or `--complete values` run collects. */
struct opts_ctx {
	struct kiln_buf *out;
	const char *want;	/* values: the option asked about */
	size_t nvalues;
};

static int print_option(const char *o, size_t olen, const char *a, size_t alen,
			void *arg)
{
	struct opts_ctx *c = arg;
	const char *p = c->out->data;

	/* An option listed twice ("--mode perf", "--mode inject"): once. */
	while (p && (p = strstr(p, "\n")) && p[1]) {
		p++;
		if (!strncmp(p, o, olen) && p[olen] == '\t')
			return 0;
	}
	kiln_buf_addf(c->out, "%.*s\t%.*s\n", (int)olen, o, (int)alen, a);
	return 0;
}

/* "--mode perf": a value written in the tag itself, lower case. */
static int literal_value(const char *o, size_t olen, const char *a, size_t alen,
			 void *arg)
{
	struct opts_ctx *c = arg;
	size_t i;

	if (strlen(c->want) != olen || strncmp(o, c->want, olen) || !alen)
		return 0;
	for (i = 0; i < alen; i++)
		if (a[i] >= 'A' && a[i] <= 'Z')
			return 0;
	kiln_buf_addf(c->out, "%.*s\n", (int)alen, a);
	c->nvalues++;
	return 0;
}

static int usage_item(const struct kiln_usage_line *l, void *arg)
{
	struct opts_ctx *c = arg;

	if (l->kind != KILN_USAGE_ITEM || l->text[0] != '-')
		return 0;
	return kiln_usage_tag_options(l->text, l->len,
				      c->want ? literal_value : print_option, c);
}

/* The sample types of the first of files that kiln reads, quietly. */
static void sample_types(struct kiln_buf *out, char **files, int nfiles)
{
	int i;

	for (i = 0; i < nfiles; i++) {
		struct kiln_diag d = { "" };
		struct kiln_prof *p = NULL;
		size_t t;

		if (kiln_read_profile(files[i], &p, NULL, &d))
			continue;
		for (t = 0; t < p->ntypes; t++)
			kiln_buf_addf(out, "%s\n", kiln_prof_str(p, p->types[t].type));
		kiln_prof_free(p);
		return;
	}
}

static int help_complete(int argc, char **argv)
{
	struct kiln_buf out = KILN_BUF_INIT, usage = KILN_BUF_INIT;
	struct opts_ctx c = { &out };
	const char *what = argc > 1 ? argv[1] : "", *n;
	size_t i;
	int rc = KILN_EXIT_OK;

	if (!strcmp(what, "commands")) {
		for (i = 0; (n = kiln_cli_cmd_row(i, NULL)); i++)
			kiln_buf_addf(&out, "%s\n", n);
		kiln_buf_adds(&out, "help\n");
	} else if ((!strcmp(what, "options") && argc == 3) ||
		   (!strcmp(what, "values") && argc >= 4)) {
		if (kiln_cli_usage_text(argv[2], &usage)) {
			kiln_cli_error("no command '%s' (see 'kiln help')", argv[2]);
			rc = KILN_EXIT_USAGE;
			goto out;
		}
		c.want = argc >= 4 ? argv[3] : NULL;
		if (!c.want)
			kiln_buf_adds(&out, "-h\t\n--help\t\n");
		kiln_usage_parse(usage.data, usage_item, &c);
		if (c.want && !c.nvalues && !strcmp(c.want, "--to"))
			kiln_fmt_list_writable(&out, "\n", "\n");
		else if (c.want && !c.nvalues && !strcmp(c.want, "--sample-type"))
			sample_types(&out, argv + 4, argc - 4);
	} else {
		kiln_cli_error("usage: kiln help --complete commands | options COMMAND "
			       "| values COMMAND OPTION [WORD...]");
		rc = KILN_EXIT_USAGE;
		goto out;
	}
	if (out.len && (!out.data || fwrite(out.data, 1, out.len, stdout) != out.len))
		rc = KILN_EXIT_FAIL;
	if (out.len && out.data && out.data[out.len - 1] != '\n')
		putchar('\n');
out:
	kiln_buf_release(&usage);
	kiln_buf_release(&out);
	return rc;
}

int kiln_cli_help_extra(int argc, char **argv)
{
	if (!strcmp(argv[0], "--man") && argc <= 2)
		return help_man(argc > 1 ? argv[1] : NULL);
	if (!strcmp(argv[0], "--complete"))
		return help_complete(argc, argv);
	kiln_cli_error("unknown help option '%s': kiln help [COMMAND], "
		       "kiln help --man [COMMAND]", argv[0]);
	return KILN_EXIT_USAGE;
}
