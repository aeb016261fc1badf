/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The formats kiln reads and writes (format stage): the names, file
 * extensions, writers and words of the one table (format/formats.def),
 * and what goes by them: the lookups by name and extension, `kiln
 * convert`'s writing, its refusals and help, and kiln serve's downloads.
 * Detection and readers are format/detect.c's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"

/* ---- writers, as the table calls them ---- */

static int write_pprof(struct kiln_prof *p, const struct kiln_fmt_wopts *o,
		       struct kiln_buf *out)
{
	return kiln_pprof_write_times(p, out, !o->raw, !o->no_times);
}

static int write_collapsed(struct kiln_prof *p,
			   const struct kiln_fmt_wopts *o,
			   struct kiln_buf *out)
{
	return kiln_collapsed_write(p, o->type, out);
}

static int write_speedscope(struct kiln_prof *p,
			    const struct kiln_fmt_wopts *o,
			    struct kiln_buf *out)
{
	return kiln_speedscope_write(p, o->type, o->name, out);
}

static int write_perfscript(struct kiln_prof *p,
			    const struct kiln_fmt_wopts *o,
			    struct kiln_buf *out)
{
	return kiln_perfscript_write(p, o->type, out);
}

static int write_firefox(struct kiln_prof *p, const struct kiln_fmt_wopts *o,
			 struct kiln_buf *out)
{
	return kiln_firefox_write(p, o->type, o->name, out);
}

/* ---- the table ---- */

static const struct kiln_fmt_info formats[] = {
#define KILN_FMT(f, n, al, ex, tr, no, mi, rd, sc, wr, wn) \
	{ .fmt = f, .name = n, .aliases = al, .exts = ex, .tried = tr, \
	  .note = no, .mime = mi, .write = wr, .written = wn },
#include "format/formats.def"
#undef KILN_FMT
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

const struct kiln_fmt_info *kiln_fmt_row(size_t i)
{
	return i < NFORMATS ? &formats[i] : NULL;
}

const struct kiln_fmt_info *kiln_fmt_written(size_t i)
{
	size_t k;

	for (k = 0; k < NFORMATS; k++)
		if (formats[k].write && formats[k].written == (int)i + 1)
			return &formats[k];
	return NULL;
}

const struct kiln_fmt_info *kiln_fmt_info(enum kiln_fmt f)
{
	size_t i;

	for (i = 0; i < NFORMATS; i++)
		if (formats[i].fmt == f)
			return &formats[i];
	return NULL;
}

const char *kiln_fmt_name(enum kiln_fmt f)
{
	const struct kiln_fmt_info *e = kiln_fmt_info(f);

	return e ? e->name : "unknown";
}

/* Whether word is one of the blank-separated words of list. */
static bool in_list(const char *list, const char *word, size_t wl)
{
	const char *p = list;

	while (list && *p) {
		size_t n = strcspn(p, " ");

		if (n == wl && !memcmp(p, word, n))
			return true;
		p += n;
		p += strspn(p, " ");
	}
	return false;
}

enum kiln_fmt kiln_fmt_parse(const char *name)
{
	size_t i;

	for (i = 0; i < NFORMATS; i++)
		if (!strcmp(name, formats[i].name) ||
		    in_list(formats[i].aliases, name, strlen(name)))
			return formats[i].fmt;
	return KILN_FMT_UNKNOWN;
}

enum kiln_fmt kiln_fmt_from_ext(const char *path)
{
	size_t i, pl = strlen(path);

	for (i = 0; i < NFORMATS; i++) {
		const char *p = formats[i].exts;

		while (p && *p) {
			size_t n = strcspn(p, " ");

			if (pl >= n && !memcmp(path + pl - n, p, n))
				return formats[i].fmt;
			p += n;
			p += strspn(p, " ");
		}
	}
	return KILN_FMT_UNKNOWN;
}

/* ---- lists ---- */

int kiln_fmt_list_writable(struct kiln_buf *b, const char *sep,
			   const char *last)
{
	const struct kiln_fmt_info *e;
	size_t i;
	int err = 0;

	for (i = 0; !err && (e = kiln_fmt_written(i)); i++) {
		if (i)
			err = kiln_buf_adds(b, kiln_fmt_written(i + 1) ? sep : last);
		if (!err)
			err = kiln_buf_adds(b, e->name);
	}
	return err;
}

void kiln_fmt_list_tried(char *list, size_t size)
{
	size_t i, at = 0;

	list[0] = '\0';
	for (i = 0; i < NFORMATS; i++)
		if (formats[i].tried && at < size)
			at += (size_t)snprintf(list + at, size - at, "%s%s",
					       at ? ", " : "", formats[i].tried);
}

int kiln_fmt_list_help(struct kiln_buf *b)
{
	const struct kiln_fmt_info *e;
	size_t i, wn = 0, we = 0;
	int err = 0;

	for (i = 0; (e = kiln_fmt_written(i)); i++) {
		if (strlen(e->name) > wn)
			wn = strlen(e->name);
		if (strlen(e->exts) > we)
			we = strlen(e->exts);
	}
	for (i = 0; !err && (e = kiln_fmt_written(i)); i++)
		err = kiln_buf_addf(b, "  %-*s  %-*s  %s\n", (int)wn, e->name,
				    (int)we, e->exts, e->note ? e->note : "");
	return err;
}

int kiln_fmt_write(enum kiln_fmt f, struct kiln_prof *p,
		   const struct kiln_fmt_wopts *o, struct kiln_buf *out)
{
	const struct kiln_fmt_info *e = kiln_fmt_info(f);

	if (!e || !e->write)
		return -EINVAL;
	return e->write(p, o, out);
}
