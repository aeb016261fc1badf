/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory map of a legacy text profile (format stage): the lines after
 * "MAPPED_LIBRARIES:" or "--- Memory map: ---", turned into the profile's
 * mappings by pprof's rules (profile/legacy_profile.go ParseMemoryMap,
 * profile.go massageMappings, remapMappingIDs), so that `go tool pprof`
 * and kiln put the same addresses in the same mappings:
 *
 *   - /proc/PID/maps lines (util/maps.c, the one parser of them) and the
 *     brief form "START-END[:] [PERMS] [FILE] [(@OFFSET)] [BUILD_ID]",
 *     hexadecimal with or without 0x; only executable (or unstated)
 *     mappings are kept;
 *   - glog prefixes ("I0101 00:00:00.000000 123 file.cc:12] ") are
 *     removed; "NAME=VALUE" lines define $NAME for the lines after them;
 *   - adjacent pieces of one file are merged, the first mapping that is
 *     not a library or "[...]" is moved first (the main program), a first
 *     /anon_hugepage piece before it is dropped, and a main program at
 *     START - OFFSET = 0x400000 is given that start;
 *   - an address below a mapping's start by at most its offset moves that
 *     start down (legacy handlers left out the first piece of a split
 *     mapping).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/legacy.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/maps.h"

static const char *skip_field(const char *s, const char *e)
{
	while (s < e && !is_space(*s))
		s++;
	return s;
}

static int push(struct kiln_legacy_maps *m, const struct kiln_legacy_map *x)
{
	if (KILN_GROW(m->v, m->alloc, m->n + 1, 32))
		return -ENOMEM;
	m->v[m->n++] = *x;
	return 0;
}

/* Optional "0x", then hex digits. */
static bool scan_hex0x(const char **s, const char *e, uint64_t *v)
{
	const char *q = *s;
	bool ok = true;

	if (e - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	*v = kiln_scan_hex(&q, e, &ok);
	if (!ok)
		return false;
	*s = q;
	return true;
}

static bool all_perm_chars(const char *s, const char *e)
{
	if (s == e)
		return false;
	for (; s < e; s++)
		if (!strchr("-rwxp", *s))
			return false;
	return true;
}

/*
 * One line of the map: 1 with *x filled, 0 for a line that is no mapping
 * or not executable.
 */
static int parse_entry(struct kiln_prof *p, const char *s, const char *e,
		       struct kiln_legacy_map *x)
{
	struct kiln_maps_entry me;
	const char *q, *f, *fe;
	uint64_t start, end;

	memset(x, 0, sizeof(*x));
	q = skip_spaces(s, e);
	if (kiln_maps_parse_line(q, e, &me)) {
		const char *path = me.path, *pe = me.path + me.pathlen;

		if (!strchr(me.perms, 'x'))
			return 0;
		x->start = me.start;
		x->limit = me.end;
		x->offset = me.offset;
		/* Like pprof, the path's first word ("(deleted)" goes). */
		x->file = kiln_prof_intern(p, path, (size_t)(skip_field(path, pe) -
							    path));
		return 1;
	}
	/* The brief form. */
	if (!scan_hex0x(&q, e, &start))
		return 0;
	if (q < e && (*q == '-' || is_space(*q)))
		q++;
	q = skip_spaces(q, e);
	if (!scan_hex0x(&q, e, &end))
		return 0;
	if (q < e && *q == ':')
		q++;
	if (q < e && !is_space(*q))
		return 0;
	x->start = start;
	x->limit = end;
	q = skip_spaces(q, e);
	f = skip_field(q, e);
	if (all_perm_chars(q, f)) {
		if (!memchr(q, 'x', (size_t)(f - q)))
			return 0;
		q = skip_spaces(f, e);
		f = skip_field(q, e);
	}
	if (q < f && !(*q == '(' && q[1] == '@')) {
		x->file = kiln_prof_intern(p, q, (size_t)(f - q));
		q = skip_spaces(f, e);
		f = skip_field(q, e);
	}
	if (f - q > 3 && q[0] == '(' && q[1] == '@' && f[-1] == ')') {
		const char *o = q + 2;
		bool ok = true;

		x->offset = kiln_scan_hex(&o, f - 1, &ok);
		if (!ok || o != f - 1)
			x->offset = 0;
		q = skip_spaces(f, e);
		f = skip_field(q, e);
	}
	for (fe = q; fe < f && ((*fe >= '0' && *fe <= '9') ||
				(*fe >= 'a' && *fe <= 'f') ||
				(*fe >= 'A' && *fe <= 'F')); fe++)
		;
	if (fe > q)
		x->build_id = kiln_prof_intern(p, q, (size_t)(fe - q));
	return 1;
}

/* glog's "... file.cc:123] " before the text (pprof's logInfoRE). */
static const char *skip_log_prefix(const char *s, const char *e)
{
	const char *q;

	for (q = s; q < e && *q != '[' && *q != ']'; q++) {
		const char *d;

		if (*q != ':' || q == s)
			continue;
		for (d = q + 1; d < e && *d >= '0' && *d <= '9'; d++)
			;
		if (d > q + 1 && d + 1 < e && *d == ']' && is_space(d[1]))
			return d + 2;
	}
	return s;
}

struct attrs {
	struct kiln_buf keys, vals;	/* NUL-separated, in order */
	size_t n;
};

/* The line with $NAME replaced, as Go's strings.Replacer does it: left
 * to right, the first defined name that matches at a position. */
static int substitute(const struct attrs *a, const char *s, const char *e,
		      struct kiln_buf *out)
{
	int err = 0;

	kiln_buf_reset(out);
	while (s < e && !err) {
		const char *k = a->keys.data, *v = a->vals.data;
		size_t i;

		for (i = 0; i < a->n; i++) {
			size_t kl = strlen(k);

			if ((size_t)(e - s) >= kl && !memcmp(s, k, kl))
				break;
			k += kl + 1;
			v += strlen(v) + 1;
		}
		if (i < a->n) {
			err = kiln_buf_add(out, v, strlen(v));
			s += strlen(k);
		} else {
			err = kiln_buf_addc(out, *s++);
		}
	}
	return err;
}

static int define(struct attrs *a, const char *s, const char *e)
{
	const char *eq = memchr(s, '=', (size_t)(e - s)), *ks = s, *ke, *vs, *ve;
	int err;

	ke = eq;
	vs = eq + 1;
	ve = e;
	while (ks < ke && is_space(*ks))
		ks++;
	while (ke > ks && is_space(ke[-1]))
		ke--;
	while (vs < ve && is_space(*vs))
		vs++;
	while (ve > vs && is_space(ve[-1]))
		ve--;
	if (memchr(ks, '\0', (size_t)(ke - ks)) || memchr(vs, '\0', (size_t)(ve - vs)))
		return 0;
	err = kiln_buf_addc(&a->keys, '$');
	if (!err)
		err = kiln_buf_add(&a->keys, ks, (size_t)(ke - ks));
	if (!err)
		err = kiln_buf_addc(&a->keys, '\0');
	if (!err)
		err = kiln_buf_add(&a->vals, vs, (size_t)(ve - vs));
	if (!err)
		err = kiln_buf_addc(&a->vals, '\0');
	if (!err)
		a->n++;
	return err;
}

static bool is_library(const char *f)
{
	const char *so;

	/* pprof's libRx: ".so" at the end or ".so." / ".so_" and a digit. */
	for (so = strstr(f, ".so"); so; so = strstr(so + 1, ".so")) {
		if (!so[3])
			return true;
		if ((so[3] == '.' || so[3] == '_') && so[4] >= '0' && so[4] <= '9')
			return true;
	}
	return false;
}

/* Adjacent pieces of one file, offsets agreeing (pprof's adjacent()). */
static bool adjacent(const struct kiln_legacy_map *a,
		     const struct kiln_legacy_map *b)
{
	if (a->file && b->file && a->file != b->file)
		return false;
	if (a->build_id && b->build_id && a->build_id != b->build_id)
		return false;
	if (a->limit != b->start)
		return false;
	if (a->offset && b->offset &&
	    a->offset + (a->limit - a->start) != b->offset)
		return false;
	return true;
}

static void massage(struct kiln_prof *p, struct kiln_legacy_maps *m)
{
	size_t i, j;

	if (m->n > 1) {
		for (i = 1, j = 1; i < m->n; i++) {
			struct kiln_legacy_map *l = &m->v[j - 1];

			if (adjacent(l, &m->v[i])) {
				l->limit = m->v[i].limit;
				if (m->v[i].file)
					l->file = m->v[i].file;
				if (m->v[i].build_id)
					l->build_id = m->v[i].build_id;
				continue;
			}
			m->v[j++] = m->v[i];
		}
		m->n = j;
	}
	/* The main program first. */
	for (i = 0; i < m->n; i++) {
		const char *f = kiln_prof_str(p, m->v[i].file), *d;
		char buf[4096];
		size_t n = 0;

		/* Its name without "(deleted)", trimmed. */
		for (; *f && n + 1 < sizeof(buf); f++) {
			if (!strncmp(f, "(deleted)", 9)) {
				f += 8;
				continue;
			}
			buf[n++] = *f;
		}
		buf[n] = '\0';
		for (d = buf; is_space(*d); d++)
			;
		while (n && is_space(buf[n - 1]))
			buf[--n] = '\0';
		if (!*d || is_library(d) || *d == '[')
			continue;
		if (i) {
			struct kiln_legacy_map t = m->v[0];

			m->v[0] = m->v[i];
			m->v[i] = t;
		}
		break;
	}
	if (m->n > 1 && !strncmp(kiln_prof_str(p, m->v[0].file),
				 "/anon_hugepage", 14) &&
	    m->v[0].limit == m->v[1].start) {
		memmove(m->v, m->v + 1, (m->n - 1) * sizeof(*m->v));
		m->n--;
	}
	if (m->n && m->v[0].start - m->v[0].offset == 0x400000) {
		m->v[0].start = 0x400000;
		m->v[0].offset = 0;
	}
}

int kiln_legacy_maps_parse(struct kiln_prof *p, const char *text, size_t len,
			   struct kiln_legacy_maps *m)
{
	const char *s = text, *end = text + len;
	struct attrs a = { KILN_BUF_INIT, KILN_BUF_INIT, 0 };
	struct kiln_buf line = KILN_BUF_INIT;
	int err = 0;

	memset(m, 0, sizeof(*m));
	while (s < end && !err) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end, *ls, *le;
		struct kiln_legacy_map x;
		int rc;

		ls = skip_log_prefix(s, e);
		le = e;
		s = nl ? nl + 1 : end;
		if (a.n) {
			err = substitute(&a, ls, le, &line);
			if (err)
				break;
			ls = line.data ? line.data : "";
			le = ls + line.len;
		}
		while (le > ls && is_space(le[-1]))
			le--;
		rc = parse_entry(p, ls, le, &x);
		if (rc > 0) {
			if (x.limit > x.start)
				err = push(m, &x);
			continue;
		}
		/* "NAME=VALUE" defines $NAME; other lines are ignored. */
		if (memchr(ls, '=', (size_t)(le - ls)))
			err = define(&a, ls, le);
	}
	if (!err)
		err = kiln_prof_error(p);
	if (!err)
		massage(p, m);
	kiln_buf_release(&a.keys);
	kiln_buf_release(&a.vals);
	kiln_buf_release(&line);
	if (err)
		kiln_legacy_maps_release(m);
	return err;
}

long kiln_legacy_maps_find(struct kiln_legacy_maps *m, uint64_t addr)
{
	size_t i;

	if (!addr)
		return -1;
	for (i = 0; i < m->n; i++)
		if (m->v[i].start <= addr && addr < m->v[i].limit)
			return (long)i;
	for (i = 0; i < m->n; i++) {
		struct kiln_legacy_map *x = &m->v[i];

		if (x->offset && x->start - x->offset <= addr &&
		    addr < x->start && x->offset <= x->start) {
			x->start -= x->offset;
			x->offset = 0;
			return (long)i;
		}
	}
	return -1;
}

void kiln_legacy_maps_release(struct kiln_legacy_maps *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}
