/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lines read apart (symbolize.h: kiln_sym_fill_lines()): the lines and
 * inlined frames a session with defer_cached_lines left out, read by a
 * light session of their own and carried back outside the heap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "symbolize/symint.h"

/* ---- lines read apart (defer_cached_lines) ---- */

/*
 * What kiln_sym_lines_read() carries from its session to s
 * (struct kiln_sym_lines): outside the heap (mmap), so that the reading
 * thread allocates nothing but that session's memory.  Records: struct
 * carry_head, then per frame struct carry_frame and its four strings,
 * each a uint32_t length (CARRY_NULL: none) and the bytes.
 */
struct carry_head {
	size_t entry;
	unsigned nframes;
};

struct carry_frame {
	int line, start_line;
};

#define CARRY_NULL UINT32_MAX

static void carry_add(struct kiln_sym_lines *c, const void *data, size_t n)
{
	if (c->err)
		return;
	if (c->cap - c->len < n) {
		size_t cap = c->cap ? c->cap : 64 * 1024;
		void *q;

		while (cap - c->len < n)
			cap *= 2;
		q = c->p ? mremap(c->p, c->cap, cap, MREMAP_MAYMOVE) :
			   mmap(NULL, cap, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED) {
			c->err = -ENOMEM;
			return;
		}
		c->p = q;
		c->cap = cap;
	}
	memcpy(c->p + c->len, data, n);
	c->len += n;
}

static void carry_str(struct kiln_sym_lines *c, const char *str)
{
	uint32_t n = str ? (uint32_t)strlen(str) : CARRY_NULL;

	carry_add(c, &n, sizeof(n));
	if (str)
		carry_add(c, str, n);
}

/* The string at *pos, interned in s (NULL for none); *err on no memory. */
static const char *carry_take_str(struct kiln_sym *s,
				  const struct kiln_sym_lines *c, size_t *pos,
				  int *err)
{
	const char *str;
	uint32_t n;

	memcpy(&n, c->p + *pos, sizeof(n));
	*pos += sizeof(n);
	if (n == CARRY_NULL)
		return NULL;
	str = ksym_intern(s, c->p + *pos, n);
	*pos += n;
	if (!str)
		*err = -ENOMEM;
	return str;
}

/* A light session over s's mappings, reading what s defers. */
static struct kiln_sym *lines_session(struct kiln_sym *s)
{
	struct kiln_sym_opts o = { .pid = s->pid, .root = s->root, .light = true };
	struct kiln_sym *from = kiln_sym_new(&o);

	for (size_t i = 0; from && i < s->nmaps; i++) {
		const struct map *m = &s->maps[i];

		if (ksym_add_map(from, m->path, strlen(m->path), m->start,
				 m->end, m->offset) < 0) {
			kiln_sym_free(from);
			from = NULL;
		}
	}
	return from;
}

/* Whether entry i of s is in a module whose lines s defers. */
static bool deferred(const struct kiln_sym *s, size_t i)
{
	const struct entry *e = &s->entries[i];
	int mod = e->map ? s->maps[e->map - 1].mod : MOD_NONE;

	return mod >= 0 && s->mods[mod].lines_deferred;
}

bool kiln_sym_lines_pending(const struct kiln_sym *s)
{
	for (size_t i = s->lines_next; i < s->nentries; i++)
		if (deferred(s, i))
			return true;
	return false;
}

int kiln_sym_lines_read(struct kiln_sym *s, struct kiln_sym_lines *c)
{
	struct kiln_sym *from = NULL;
	size_t i;

	for (i = s->lines_next; i < s->nentries && !c->err; i++) {
		const struct entry *e = &s->entries[i];
		struct carry_head h = { i, 0 };
		struct kiln_sym_info info;
		size_t start = c->len;

		if (!deferred(s, i))
			continue;
		if (!from && !(from = lines_session(s))) {
			c->err = -ENOMEM;
			break;
		}
		if ((c->err = kiln_sym_lookup(from, e->addr, &info)))
			break;
		/* Names as s gave them: the outermost frame is named by the
		 * symbol table either way. */
		if (!info.has_dwarf || !info.nframes)
			continue;
		h.nframes = info.nframes;
		carry_add(c, &h, sizeof(h));
		for (unsigned k = 0; k < info.nframes; k++) {
			const struct kiln_sym_frame *f = &info.frames[k];
			struct carry_frame cf = { f->line, f->start_line };

			carry_add(c, &cf, sizeof(cf));
			carry_str(c, f->name);
			carry_str(c, f->system_name);
			carry_str(c, f->file);
			carry_str(c, f->func_file);
		}
		/* A record cut short by ENOMEM is not carried. */
		if (c->err)
			c->len = start;
	}
	kiln_sym_free(from);
	if (!c->err)
		s->lines_next = i;
	return c->err;
}

int kiln_sym_lines_take(struct kiln_sym *s, struct kiln_sym_lines *c)
{
	size_t pos = 0;
	int n = 0, err = 0;

	/* What was read before a failure is still given. */
	while (pos < c->len && !err) {
		struct carry_head h;
		struct kiln_sym_frame *fr;

		memcpy(&h, c->p + pos, sizeof(h));
		pos += sizeof(h);
		fr = ksym_arena_alloc(s, h.nframes * sizeof(*fr));
		if (!fr) {
			err = -ENOMEM;
			break;
		}
		for (unsigned k = 0; k < h.nframes; k++) {
			struct carry_frame cf;

			memcpy(&cf, c->p + pos, sizeof(cf));
			pos += sizeof(cf);
			memset(&fr[k], 0, sizeof(fr[k]));
			fr[k].line = cf.line;
			fr[k].start_line = cf.start_line;
			fr[k].name = carry_take_str(s, c, &pos, &err);
			fr[k].system_name = carry_take_str(s, c, &pos, &err);
			fr[k].file = carry_take_str(s, c, &pos, &err);
			fr[k].func_file = carry_take_str(s, c, &pos, &err);
		}
		if (err)
			break;
		s->entries[h.entry].info.frames = fr;
		s->entries[h.entry].info.nframes = h.nframes;
		s->entries[h.entry].info.has_dwarf = true;
		n++;
	}
	if (!err)
		err = c->err;
	if (c->p)
		munmap(c->p, c->cap);
	memset(c, 0, sizeof(*c));
	return err ? err : n;
}

int kiln_sym_fill_lines(struct kiln_sym *s)
{
	struct kiln_sym_lines c = { 0 };

	kiln_sym_lines_read(s, &c);
	return kiln_sym_lines_take(s, &c);
}
