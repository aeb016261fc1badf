/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the usage-text reader (render/usage.c) and the manual
 * page writer (render/man.c): how a usage text of src/cli/main.c's table
 * splits into synopsis, prose, headings, list items and examples; the
 * option words of an item's tag with their arguments; troff escapes; and
 * the sections of a rendered page.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "render/man.h"
#include "render/usage.h"
#include "util/buf.h"

static const char usage[] =
	"usage: kiln demo [options] -- CMD\n"
	"       kiln demo -p PID\n"
	"\n"
	"Runs the command.  It writes:\n"
	"  PREFIX.out   the output\n"
	"The exit status is kiln's.\n"
	"\n"
	"  -o, --output FILE     where to write (default\n"
	"                        kiln.out)\n"
	"      --mode perf       the default\n"
	"      --mode inject     the other\n"
	"  -q                    quiet\n"
	"\n"
	"Environment (also for top):\n"
	"  KILN_X=1     as -x\n"
	"\n"
	"Example:\n"
	"  kiln demo -o .hidden -- ls   # a comment\n";

/* Each line as "K|text|desc" in a buffer: K the kind's letter. */
static int collect(const struct kiln_usage_line *l, void *arg)
{
	static const char kinds[] = "STBHIML";

	kiln_buf_addf(arg, "%c|%.*s|%.*s\n", kinds[l->kind], (int)l->len, l->text,
		      (int)l->desc_len, l->kind == KILN_USAGE_ITEM ? l->desc : "");
	return 0;
}

static void test_parse(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;

	(void)state;
	assert_int_equal(kiln_usage_parse(usage, collect, &b), 0);
	assert_string_equal(b.data,
		"S|kiln demo [options] -- CMD|\n"
		"S|kiln demo -p PID|\n"
		"B||\n"
		"T|Runs the command.  It writes:|\n"
		"I|PREFIX.out|the output\n"
		"T|The exit status is kiln's.|\n"
		"B||\n"
		"I|-o, --output FILE|where to write (default\n"
		"M|kiln.out)|\n"
		"I|--mode perf|the default\n"
		"I|--mode inject|the other\n"
		"I|-q|quiet\n"
		"B||\n"
		"H|Environment (also for top)|\n"
		"I|KILN_X=1|as -x\n"
		"B||\n"
		"H|Example|\n"
		"L|kiln demo -o .hidden -- ls   # a comment|\n");
	kiln_buf_release(&b);
}

/* A line ending in ':' inside a paragraph is prose, not a heading. */
static void test_parse_colon_in_paragraph(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;

	(void)state;
	kiln_usage_parse("Converts.  Input formats\nare these:\n  pprof  .pb.gz\n",
			 collect, &b);
	assert_string_equal(b.data, "T|Converts.  Input formats|\nT|are these:|\n"
			    "I|pprof|.pb.gz\n");
	kiln_buf_release(&b);
}

static int collect_opt(const char *o, size_t olen, const char *a, size_t alen,
		       void *arg)
{
	kiln_buf_addf(arg, "%.*s=%.*s;", (int)olen, o, (int)alen, a);
	return 0;
}

static void test_tag_options(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	const char *tags[][2] = {
		{ "-o, --output FILE", "-o=FILE;--output=FILE;" },
		{ "-g", "-g=;" },
		{ "-q, --quiet", "-q=;--quiet=;" },
		{ "--focus RE, --ignore RE, --hide RE", "--focus=RE;--ignore=RE;--hide=RE;" },
		{ "-x, --field-separator SEP", "-x=SEP;--field-separator=SEP;" },
		{ "--mode inject", "--mode=inject;" },
		{ "PREFIX.out", "" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		kiln_buf_reset(&b);
		kiln_buf_adds(&b, "");
		assert_int_equal(kiln_usage_tag_options(tags[i][0], strlen(tags[i][0]),
							collect_opt, &b), 0);
		assert_string_equal(b.data, tags[i][1]);
	}
	kiln_buf_release(&b);
}

static void test_escape(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;

	(void)state;
	kiln_man_escape(&b, ".hidden a-b \\n", 14);
	assert_string_equal(b.data, "\\&.hidden a\\-b \\en");
	kiln_buf_reset(&b);
	kiln_man_escape(&b, "'quoted'", 8);
	assert_string_equal(b.data, "\\&'quoted'");
	kiln_buf_release(&b);
}

static void test_render(void **state)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_man_page pg = { "kiln-demo", "1", "a demo", usage, "kiln 9.9",
				    "kiln(1)" };
	const char *p;

	(void)state;
	assert_int_equal(kiln_man_render(&b, &pg), 0);
	assert_non_null(strstr(b.data, "\n.TH KILN-DEMO 1 \"\" \"kiln 9.9\" \"kiln manual\"\n"));
	assert_non_null(strstr(b.data, ".SH NAME\nkiln\\-demo \\- a demo\n"));
	assert_non_null(strstr(b.data, ".SH SYNOPSIS\n.nf\nkiln demo [options] \\-\\- CMD\n"
			       "kiln demo \\-p PID\n.fi\n.SH DESCRIPTION\n.PP\nRuns"));
	/* The files list stays in DESCRIPTION; the prose after it is a
	 * paragraph of its own, not the item's. */
	assert_non_null(strstr(b.data, ".TP\n\\fIPREFIX.out\\fR\nthe output\n.PP\nThe exit"));
	p = strstr(b.data, ".SH OPTIONS\n.TP\n\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fIFILE\\fR\n"
		   "where to write (default\nkiln.out)\n");
	assert_non_null(p);
	assert_non_null(strstr(p, ".TP\n\\fB\\-\\-mode\\fR \\fIinject\\fR\nthe other\n"));
	assert_non_null(strstr(p, ".SH ENVIRONMENT\n.PP\nEnvironment (also for top):\n"
			       ".TP\n\\fIKILN_X=1\\fR\nas \\-x\n"));
	assert_non_null(strstr(p, ".SH EXAMPLES\n.PP\n.RS 4\n.nf\n"
			       "kiln demo \\-o .hidden \\-\\- ls   # a comment\n.fi\n.RE\n"));
	assert_non_null(strstr(p, ".SH SEE ALSO\nkiln(1)\n"));
	/* Every line that starts with a dot is a request of ours. */
	for (p = b.data; p; p = strchr(p, '\n')) {
		p += *p == '\n';
		if (*p == '.')
			assert_true(!strncmp(p, ".TH", 3) || !strncmp(p, ".SH", 3) ||
				    !strncmp(p, ".PP", 3) || !strncmp(p, ".TP", 3) ||
				    !strncmp(p, ".nf", 3) || !strncmp(p, ".fi", 3) ||
				    !strncmp(p, ".RS", 3) || !strncmp(p, ".RE", 3) ||
				    !strncmp(p, ".\\\"", 3));
		if (!*p)
			break;
	}
	kiln_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_colon_in_paragraph),
		cmocka_unit_test(test_tag_options),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
