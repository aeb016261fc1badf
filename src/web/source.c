/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source text for kiln serve's source view (web stage): a file named by
 * the profile's line table, found and read from this machine, split into
 * lines.  Which files may be read is decided here and by the caller: only
 * the files of the function the request names, never a path from the
 * request; and since a profile is input like any other (a crafted one
 * may name /etc/shadow as a function's file), only:
 *
 * - files under the roots the user gave: the working directory at start
 *   and each --source-path folder; or
 * - the source files named by the debug info (line tables) of a program
 *   the inputs map, where that program is root's or the user's and
 *   writable by no one else (a file another user planted could name any
 *   file);
 *
 * and never under /proc, /sys, /dev, /etc, /run or /boot, whatever
 * links lead there (each candidate is resolved with realpath()).  A path
 * from the profile is looked for as it is, with each --trim-path prefix
 * removed, and, as pprof's -source_path does, with its leading folders
 * dropped one by one under each root; a relative one under each root and
 * each compile directory (DW_AT_comp_dir) of those programs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/file.h"
#include "web/web.h"
#include "web/webint.h"

#define WEB_SOURCE_MAX (8u << 20)	/* bytes of one source file */

static const char *const forbidden[] = {
	"/proc", "/sys", "/dev", "/etc", "/run", "/boot",
};

/* Whether path is dir or under it (both absolute, resolved). */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return true;
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

static bool is_forbidden(const char *real)
{
	size_t i;

	for (i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
		if (under(real, forbidden[i]))
			return true;
	return false;
}

/* Appends dir, resolved, to the NUL-separated list b (gone ones too, as
 * given: nothing is under them). */
static int add_dir(struct kiln_buf *b, const char *dir)
{
	char *real = realpath(dir, NULL);
	int err;

	if (!real && errno == ENOMEM)
		return -ENOMEM;
	err = kiln_buf_add(b, real ? real : dir, strlen(real ? real : dir) + 1);
	free(real);
	return err;
}

/* Adds each folder of the colon-separated list to b. */
static int add_list(struct kiln_buf *b, const char *list, bool resolve)
{
	int err = 0;

	while (list && *list && !err) {
		const char *colon = strchr(list, ':');
		size_t n = colon ? (size_t)(colon - list) : strlen(list);
		char dir[PATH_MAX];

		if (n && n < sizeof(dir)) {
			memcpy(dir, list, n);
			dir[n] = '\0';
			err = resolve ? add_dir(b, dir) : kiln_buf_add(b, dir, n + 1);
		}
		list = colon ? colon + 1 : NULL;
	}
	return err;
}

int kiln_web_model_set_source(struct kiln_web_model *m, const char *source_path,
			      const char *trim_path)
{
	struct web_srcpol *sp = &m->src;
	char cwd[PATH_MAX];
	int err = 0;

	kiln_buf_release(&sp->roots);
	kiln_buf_release(&sp->trims);
	if (getcwd(cwd, sizeof(cwd)))
		err = add_dir(&sp->roots, cwd);
	if (!err)
		err = add_list(&sp->roots, source_path, true);
	if (!err)
		err = add_list(&sp->trims, trim_path, false);
	return err;
}

void kiln_web_srcpol_release(struct web_srcpol *sp)
{
	kiln_buf_release(&sp->roots);
	kiln_buf_release(&sp->trims);
	kiln_buf_release(&sp->compdirs);
	kiln_buf_release(&sp->filebuf);
	free(sp->files);
	memset(sp, 0, sizeof(*sp));
}

/* Whether a program file may vouch for folders: root's or ours, and no
 * one else may write it. */
static bool trusted_program(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) &&
	       (st.st_uid == 0 || st.st_uid == geteuid()) &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Whether list (NUL-separated) holds s itself. */
static bool under_any_exact(const struct kiln_buf *list, const char *s)
{
	size_t k;

	for (k = 0; k < list->len; k += strlen(list->data + k) + 1)
		if (!strcmp(list->data + k, s))
			return true;
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The source files and compile folders of every program the inputs map,
 * once; the files sorted, each once, for bsearch(). */
static int debug_sources(struct kiln_web_model *m)
{
	struct web_srcpol *sp = &m->src;
	struct kiln_buf seen = KILN_BUF_INIT, dirs = KILN_BUF_INIT;
	size_t i, j, k, n = 0;
	int err = 0;

	if (sp->sources_done)
		return 0;
	for (i = 0; i < m->n && !err; i++) {
		const struct kiln_prof *p = m->in[i].prof;

		for (j = 1; p && j <= p->nmappings && !err; j++) {
			const char *f = kiln_prof_str(p, p->mappings[j].file);
			bool dup = false;

			if (!f || f[0] != '/')
				continue;
			for (k = 0; k < seen.len; k += strlen(seen.data + k) + 1)
				if (!strcmp(seen.data + k, f))
					dup = true;
			if (dup)
				continue;
			err = kiln_buf_add(&seen, f, strlen(f) + 1);
			if (!err && trusted_program(f))
				err = kiln_sym_debug_sources(f, &sp->filebuf, &dirs);
		}
	}
	for (k = 0; !err && k < dirs.len; k += strlen(dirs.data + k) + 1)
		if (!under_any_exact(&sp->compdirs, dirs.data + k))
			err = kiln_buf_add(&sp->compdirs, dirs.data + k,
					   strlen(dirs.data + k) + 1);
	for (k = 0; k < sp->filebuf.len; k += strlen(sp->filebuf.data + k) + 1)
		n++;
	sp->files = err || !n ? NULL : malloc(n * sizeof(*sp->files));
	if (!err && n && !sp->files)
		err = -ENOMEM;
	if (!err && n) {
		for (i = 0, k = 0; i < n; i++, k += strlen(sp->filebuf.data + k) + 1)
			sp->files[i] = sp->filebuf.data + k;
		qsort(sp->files, n, sizeof(*sp->files), cmp_str);
		for (i = j = 0; i < n; i++)
			if (!j || strcmp(sp->files[j - 1], sp->files[i]))
				sp->files[j++] = sp->files[i];
		sp->nfiles = j;
	}
	kiln_buf_release(&seen);
	kiln_buf_release(&dirs);
	if (!err)
		sp->sources_done = true;
	return err;
}

/* Whether the programs' debug info names file. */
static bool named_source(const struct web_srcpol *sp, const char *file)
{
	return sp->nfiles && bsearch(&file, sp->files, sp->nfiles,
				     sizeof(*sp->files), cmp_str);
}

/* Whether list (NUL-separated) holds a folder real is under. */
static bool under_any(const struct kiln_buf *list, const char *real)
{
	size_t k;

	for (k = 0; k < list->len; k += strlen(list->data + k) + 1)
		if (under(real, list->data + k))
			return true;
	return false;
}

struct find {
	struct kiln_web_model *m;
	char *out;		/* PATH_MAX */
	const char *why;	/* of the best refusal so far */
	int err;
};

/* Tries candidate path: true when it is found and may be read. */
static bool try(struct find *f, const char *path)
{
	char real[PATH_MAX];
	struct stat st;

	if (f->err || !realpath(path, real) || stat(real, &st) || !S_ISREG(st.st_mode))
		return false;
	if (is_forbidden(real)) {
		f->why = "a system folder (/proc, /sys, /dev, /etc, /run, /boot): "
			 "never read";
		return false;
	}
	if (under_any(&f->m->src.roots, real))
		goto ok;
	f->err = debug_sources(f->m);
	if (!f->err && (named_source(&f->m->src, path) ||
			named_source(&f->m->src, real)))
		goto ok;
	if (!f->why)
		f->why = "neither under the working directory or --source-path "
			 "nor a source file of the profile's programs: give its "
			 "folder with --source-path";
	return false;
ok:
	snprintf(f->out, PATH_MAX, "%s", real);
	return true;
}

/* Tries dir/rel, and dir/ each tail of rel (leading folders dropped). */
static bool try_under(struct find *f, const char *dir, const char *rel, bool tails)
{
	char cand[PATH_MAX];

	while (*rel == '/')
		rel++;
	while (*rel) {
		if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir, rel) < sizeof(cand) &&
		    try(f, cand))
			return true;
		if (!tails || !(rel = strchr(rel, '/')))
			break;
		while (*rel == '/')
			rel++;
	}
	return false;
}

int kiln_web_source_find(struct kiln_web_model *m, const char *file,
			 char *out, const char **why)
{
	struct web_srcpol *sp = &m->src;
	struct find f = { m, out, NULL, 0 };
	size_t k, n;

	*why = NULL;
	if (file[0] == '/' && try(&f, file))
		return 0;
	for (k = 0; k < sp->trims.len; k += n + 1) {
		n = strlen(sp->trims.data + k);
		if (n && !strncmp(file, sp->trims.data + k, n))
			for (size_t r = 0; r < sp->roots.len;
			     r += strlen(sp->roots.data + r) + 1)
				if (try_under(&f, sp->roots.data + r, file + n, false))
					return 0;
	}
	for (k = 0; k < sp->roots.len; k += strlen(sp->roots.data + k) + 1)
		if (try_under(&f, sp->roots.data + k, file, true))
			return 0;
	if (file[0] != '/' && !(f.err = f.err ? f.err : debug_sources(m)))
		for (k = 0; k < sp->compdirs.len; k += strlen(sp->compdirs.data + k) + 1)
			if (try_under(&f, sp->compdirs.data + k, file, false))
				return 0;
	if (f.err)
		return f.err;
	*why = f.why ? f.why : file[0] == '/' ?
		"not found on this machine: give its folder with --source-path "
		"(and --trim-path for the build's prefix)" :
		"a relative path found under no root or compile folder: give "
		"its folder with --source-path";
	return 0;
}

int kiln_web_source_read(const char *path, struct web_source *src,
			 const char **why)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct stat st;
	size_t i, n;
	int fd, err = 0;

	memset(src, 0, sizeof(*src));
	*why = NULL;
	fd = kiln_open_regular(path);
	if (fd < 0) {
		*why = fd == -EINVAL || fd == -EISDIR ? "not a regular file" :
		       "not readable on this machine";
		return 0;
	}
	if (fstat(fd, &st) || st.st_size > WEB_SOURCE_MAX) {
		*why = "larger than 8 MiB";
		close(fd);
		return 0;
	}
	for (;;) {
		ssize_t r;

		if (kiln_buf_grow(&b, 65536)) {
			err = -ENOMEM;
			break;
		}
		r = read(fd, b.data + b.len, 65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = "not readable on this machine";
			break;
		}
		if (r == 0)
			break;
		b.len += (size_t)r;
		if (b.len > WEB_SOURCE_MAX) {
			*why = "larger than 8 MiB";
			break;
		}
	}
	close(fd);
	if (!err && !*why && memchr(b.data ? b.data : "", '\0', b.len))
		*why = "not text";
	if (!err && !*why && kiln_buf_addc(&b, '\0'))
		err = -ENOMEM;
	if (err || *why) {
		kiln_buf_release(&b);
		return err;
	}
	for (n = 1, i = 0; i + 1 < b.len; i++)
		if (b.data[i] == '\n' && i + 2 < b.len)
			n++;
	src->line = malloc((n + 1) * sizeof(*src->line));
	if (!src->line) {
		kiln_buf_release(&b);
		return -ENOMEM;
	}
	src->line[0] = 0;
	for (n = 1, i = 0; i + 1 < b.len; i++)
		if (b.data[i] == '\n' && i + 2 < b.len)
			src->line[n++] = i + 1;
	src->line[n] = b.len;		/* one past the NUL: the end */
	src->n = n;
	src->text = kiln_buf_detach(&b, &i);
	return 0;
}

const char *kiln_web_source_line(const struct web_source *src, size_t line,
				 size_t *len)
{
	size_t a, e;

	if (!line || line > src->n) {
		*len = 0;
		return NULL;
	}
	a = src->line[line - 1];
	e = src->line[line] - 1;	/* the next line's start, less one */
	while (e > a && (src->text[e - 1] == '\n' || src->text[e - 1] == '\r' ||
			 src->text[e - 1] == '\0'))
		e--;
	*len = e - a;
	return src->text + a;
}

void kiln_web_source_release(struct web_source *src)
{
	free(src->text);
	free(src->line);
	memset(src, 0, sizeof(*src));
}
