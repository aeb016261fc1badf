/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manual pages in troff (man(7) macros) from a command's usage text
 * (render stage): the second rendering of the text `kiln help COMMAND`
 * prints, so that the two never disagree.  Read by man(1), groff and
 * lintian; built into the package by CMake (`kiln help --man COMMAND`).
 */
#ifndef KILN_RENDER_MAN_H
#define KILN_RENDER_MAN_H

struct kiln_buf;

struct kiln_man_page {
	const char *name;	/* "kiln-record" */
	const char *section;	/* "1" */
	const char *summary;	/* the NAME line's text after the dash */
	const char *usage;	/* the usage text (render/usage.h) */
	const char *source;	/* the footer: "kiln 0.1.0" */
	const char *see_also;	/* "kiln(1), libkiln(7)", or NULL */
};

/*
 * Appends the page to out: .TH, NAME, SYNOPSIS, DESCRIPTION, OPTIONS
 * (the first list whose items are options), EXAMPLES, ENVIRONMENT,
 * NOTES (prose after the options), SEE ALSO.  0 or -ENOMEM.
 */
int kiln_man_render(struct kiln_buf *out, const struct kiln_man_page *pg);

/* Appends len bytes of text escaped for troff (backslashes, minus signs,
 * a leading '.' or '\''), no newline.  0 or -ENOMEM. */
int kiln_man_escape(struct kiln_buf *out, const char *s, size_t len);

#endif
