/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The usage text of a command (`kiln help COMMAND`) read as a document
 * (render stage): synopsis, paragraphs, headed sections, definition
 * lists (options, variables, files) and literal examples.  One reader for
 * every rendering of that text: the man pages (render/man.c) and the
 * shell completion's option list (cli/help.c).
 *
 * The conventions it reads, those of src/cli/main.c's table:
 *   - the first lines "usage: ..." (then lines indented under it) are
 *     the synopsis, up to the first blank line;
 *   - a line that opens a paragraph with one capitalized word, maybe a
 *     parenthesis, and a colon ("Examples:", "Environment (also for
 *     flame):"), with indented lines under it, heads them; under a
 *     heading that starts with "Example" the lines are literal;
 *   - an indented line (fewer than 8 blanks) is a list item: its tag up
 *     to two blanks in a row, then its description; a line indented by 8
 *     or more blanks continues the item above it;
 *   - other lines are prose; blank lines end paragraphs.
 */
#ifndef KILN_RENDER_USAGE_H
#define KILN_RENDER_USAGE_H

#include <stddef.h>

enum kiln_usage_kind {
	KILN_USAGE_SYNOPSIS,	/* one synopsis line, "usage: " removed */
	KILN_USAGE_TEXT,	/* a line of prose */
	KILN_USAGE_BREAK,	/* a blank line: the paragraph ends */
	KILN_USAGE_HEADING,	/* a heading, its ':' removed */
	KILN_USAGE_ITEM,	/* tag (+ desc: may be empty) */
	KILN_USAGE_MORE,	/* more description of the item above */
	KILN_USAGE_LITERAL,	/* a line of an example, indentation cut by 2 */
};

struct kiln_usage_line {
	enum kiln_usage_kind kind;
	const char *text;	/* not NUL-terminated: len bytes */
	size_t len;
	const char *desc;	/* KILN_USAGE_ITEM only */
	size_t desc_len;
};

/*
 * Calls fn for each line of usage in order.  Stops at the first non-zero
 * return of fn and returns it; 0 when every line was seen.
 */
int kiln_usage_parse(const char *usage,
		     int (*fn)(const struct kiln_usage_line *l, void *arg),
		     void *arg);

/*
 * Calls fn for each option word of an item tag ("-o, --output FILE" gives
 * "-o" then "--output", each with the argument "FILE"; "--mode perf" gives
 * "--mode" with "perf").  arg_len is 0 for an option without argument.
 * Stops at the first non-zero return of fn and returns it.
 */
int kiln_usage_tag_options(const char *tag, size_t len,
			   int (*fn)(const char *opt, size_t opt_len,
				     const char *argp, size_t arg_len, void *arg),
			   void *arg);

#endif
