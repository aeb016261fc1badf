/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The usage text of a command read as a document (render stage): see
 * usage.h for the conventions.
 */
#include <stdbool.h>
#include <string.h>

#include "render/usage.h"

struct line {
	const char *s;
	size_t len;
};

static size_t indent_of(struct line l)
{
	size_t n = 0;

	while (n < l.len && l.s[n] == ' ')
		n++;
	return n;
}

static bool is_blank(struct line l)
{
	return indent_of(l) == l.len;
}

static struct line next_line(const char **p)
{
	struct line l = { *p, 0 };
	const char *nl = strchr(*p, '\n');

	l.len = nl ? (size_t)(nl - *p) : strlen(*p);
	*p += l.len + (nl ? 1 : 0);
	return l;
}

/* A heading is one word, maybe with a parenthesis, and a colon:
 * "Examples:", "Environment (also for flame):"; not "It writes:". */
static bool is_heading(struct line l)
{
	size_t i = 0;

	if (!l.len || l.s[l.len - 1] != ':' || l.s[0] < 'A' || l.s[0] > 'Z')
		return false;
	while (i < l.len - 1 && l.s[i] != ' ')
		i++;
	return i == l.len - 1 || (l.s[i + 1] == '(' && l.s[l.len - 2] == ')');
}

/* "-o, --output FILE    where": the tag ends at two blanks in a row. */
static void split_item(struct line l, size_t ind, struct kiln_usage_line *u)
{
	const char *s = l.s + ind, *end = l.s + l.len, *gap;

	u->kind = KILN_USAGE_ITEM;
	u->text = s;
	u->desc = end;
	u->desc_len = 0;
	for (gap = s; gap + 1 < end; gap++)
		if (gap[0] == ' ' && gap[1] == ' ')
			break;
	if (gap + 1 >= end) {
		u->len = end - s;
		return;
	}
	u->len = gap - s;
	while (gap < end && *gap == ' ')
		gap++;
	u->desc = gap;
	u->desc_len = end - gap;
}

int kiln_usage_parse(const char *usage,
		     int (*fn)(const struct kiln_usage_line *l, void *arg),
		     void *arg)
{
	const char *p = usage;
	bool synopsis = !strncmp(usage, "usage: ", 7), literal = false;
	bool item_open = false, para_start = true;
	int rc;

	while (*p) {
		struct line l = next_line(&p);
		struct kiln_usage_line u = { KILN_USAGE_TEXT, l.s, l.len };
		size_t ind = indent_of(l);

		if (is_blank(l)) {
			synopsis = literal = item_open = false;
			u.kind = KILN_USAGE_BREAK;
			u.len = 0;
		} else if (synopsis) {
			u.kind = KILN_USAGE_SYNOPSIS;
			if (!strncmp(l.s, "usage: ", 7))
				ind = 7;
			u.text = l.s + ind;
			u.len = l.len - ind;
		} else if (!ind && para_start && is_heading(l) && *p == ' ' &&
			   !is_blank(next_line(&(const char *){ p }))) {
			u.kind = KILN_USAGE_HEADING;
			u.len = l.len - 1;
			literal = !strncmp(l.s, "Example", 7);
			item_open = false;
		} else if (literal && ind) {
			u.kind = KILN_USAGE_LITERAL;
			u.text = l.s + (ind < 2 ? ind : 2);
			u.len = l.len - (ind < 2 ? ind : 2);
		} else if (ind >= 8 && item_open) {
			u.kind = KILN_USAGE_MORE;
			u.text = l.s + ind;
			u.len = l.len - ind;
		} else if (ind) {
			split_item(l, ind, &u);
			item_open = true;
		}
		para_start = u.kind == KILN_USAGE_BREAK;
		rc = fn(&u, arg);
		if (rc)
			return rc;
	}
	return 0;
}

int kiln_usage_tag_options(const char *tag, size_t len,
			   int (*fn)(const char *opt, size_t opt_len,
				     const char *argp, size_t arg_len, void *arg),
			   void *arg)
{
	struct { const char *o, *a; size_t olen, alen; } part[8];
	const char *p = tag, *end = tag + len;
	size_t n = 0, i;
	int rc;

	/* Each ", "-separated part: "-o", "--output FILE", "--focus RE". */
	while (p < end && n < sizeof(part) / sizeof(part[0])) {
		const char *part_end = p, *opt_end, *a;

		while (part_end < end && !(part_end[0] == ',' &&
					   (part_end + 1 == end || part_end[1] == ' ')))
			part_end++;
		if (*p == '-') {
			opt_end = p;
			while (opt_end < part_end && *opt_end != ' ' && *opt_end != '=')
				opt_end++;
			a = opt_end;
			while (a < part_end && (*a == ' ' || *a == '='))
				a++;
			part[n].o = p;
			part[n].olen = opt_end - p;
			part[n].a = a;
			part[n].alen = part_end - a;
			n++;
		}
		p = part_end;
		while (p < end && (*p == ',' || *p == ' '))
			p++;
	}
	/* "-o, --output FILE": the short form takes the long one's argument. */
	for (i = n; i-- > 1;)
		if (!part[i - 1].alen) {
			part[i - 1].a = part[i].a;
			part[i - 1].alen = part[i].alen;
		}
	for (i = 0; i < n; i++) {
		rc = fn(part[i].o, part[i].olen, part[i].a, part[i].alen, arg);
		if (rc)
			return rc;
	}
	return 0;
}
