/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Executable mappings of a maps text as profile mappings (profile
 * stage).  See maptab.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/maptab.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/maps.h"

struct add_ctx {
	struct kiln_maptab *m;
	struct kiln_prof *p;
};

static int add_one(const struct kiln_maps_entry *e, void *arg)
{
	struct add_ctx *c = arg;
	struct kiln_maptab *m = c->m;
	struct kiln_mapping km = { 0 };

	if (e->perms[2] != 'x')
		return 0;
	if (kiln_array_grow((void **)&m->r, &m->alloc, m->n + 1, sizeof(*m->r)))
		return -ENOMEM;
	km.start = e->start;
	km.limit = e->end;
	km.offset = e->offset;
	km.file = kiln_maps_anon(e) ? kiln_prof_interns(c->p, "//anon") :
		  kiln_prof_intern(c->p, e->path, e->pathlen);
	m->r[m->n].start = e->start;
	m->r[m->n].end = e->end;
	m->r[m->n].id = kiln_prof_mapping(c->p, &km);
	m->n++;
	return kiln_prof_error(c->p);
}

int kiln_maptab_add_text(struct kiln_maptab *m, struct kiln_prof *p,
			 const char *text, size_t len)
{
	struct add_ctx c = { m, p };

	return kiln_maps_parse(text, len, add_one, &c);
}

static int add_gone(const struct kiln_maps_entry *e, void *arg)
{
	struct add_ctx *c = arg;
	int err;

	if (e->perms[2] != 'x')
		return 0;
	if (kiln_maps_anon(e)) {
		err = kiln_maptab_add(c->m, c->p, "//anon", e->start, e->end,
				      e->offset);
	} else {
		char path[4096];

		if (e->pathlen >= sizeof(path))
			return 0;
		memcpy(path, e->path, e->pathlen);
		path[e->pathlen] = '\0';
		err = kiln_maptab_add(c->m, c->p, path, e->start, e->end,
				      e->offset);
	}
	return err == -EEXIST ? 0 : err;
}

int kiln_maptab_add_gone_text(struct kiln_maptab *m, struct kiln_prof *p,
			      const char *text, size_t len)
{
	struct add_ctx c = { m, p };

	return kiln_maps_parse(text, len, add_gone, &c);
}

int kiln_maptab_add(struct kiln_maptab *m, struct kiln_prof *p,
		    const char *path, uint64_t start, uint64_t end,
		    uint64_t offset)
{
	struct kiln_mapping km = { 0 };
	size_t lo = 0, hi = m->n;

	if (end <= start)
		return -EINVAL;
	/* The first range ending after start: the new one goes before it,
	 * and must end before it starts. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->r[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->n && m->r[lo].start < end)
		return -EEXIST;
	if (kiln_array_grow((void **)&m->r, &m->alloc, m->n + 1, sizeof(*m->r)))
		return -ENOMEM;
	km.start = start;
	km.limit = end;
	km.offset = offset;
	km.file = kiln_prof_interns(p, path);
	memmove(m->r + lo + 1, m->r + lo, (m->n - lo) * sizeof(*m->r));
	m->r[lo].start = start;
	m->r[lo].end = end;
	m->r[lo].id = kiln_prof_mapping(p, &km);
	m->n++;
	return kiln_prof_error(p);
}

uint32_t kiln_maptab_find(const struct kiln_maptab *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->r[mid].start)
			hi = mid;
		else if (addr >= m->r[mid].end)
			lo = mid + 1;
		else
			return m->r[mid].id;
	}
	return 0;
}

void kiln_maptab_release(struct kiln_maptab *m)
{
	free(m->r);
	m->r = NULL;
	m->n = m->alloc = 0;
}
