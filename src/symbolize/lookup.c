/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's lookups (symbolize stage): an address's frames through
 * its module (symbols, DWARF inline chains, JIT maps) with the per-address
 * cache, and whole profiles symbolized.  See symint.h.
 */
#include "symbolize/symbolize.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "symbolize/symint.h"
#include "util/buf.h"
#include "util/htab.h"

/* ---- lookups ---- */

static int symbolize(struct kiln_sym *s, struct mod *md, uint64_t addr,
		     struct kiln_sym_info *info)
{
	struct kiln_sym_frame fr[MAX_FRAMES], *out;
	const char *symname;
	unsigned n = 0;
	int err;

	symname = ksym_sym_name(md, addr);
	if (symname && !*symname)
		symname = NULL;
	if (md->has_dwarf) {
		err = ksym_dwarf_frames(s, md, addr, symname, fr, &n);
		if (err)
			return err;
	}
	if (!n && symname) {
		/* Only the symbol table knows this address.  Symbol versions
		 * ("clock_gettime@@GLIBC_2.17") are no part of the name. */
		memset(fr, 0, sizeof(fr[0]));
		if ((err = ksym_set_symbol_names(s, fr, symname)))
			return err;
		n = 1;
	}
	if (!n && (symname = ksym_plt_name(s, md, addr))) {
		memset(fr, 0, sizeof(fr[0]));
		if ((err = ksym_set_names(s, fr, symname, NULL)))
			return err;
		n = 1;
	}
	if (!n)
		return 0;
	out = ksym_arena_alloc(s, n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	memcpy(out, fr, n * sizeof(*out));
	info->frames = out;
	info->nframes = n;
	return 0;
}

struct cache_key {
	const struct kiln_sym *s;
	uint64_t addr;
	uint32_t map;
};

static bool cache_eq(const void *ctx, uint32_t id)
{
	const struct cache_key *k = ctx;
	const struct entry *e = &k->s->entries[id - 1];

	return e->addr == k->addr && e->map == k->map;
}

/* info named after JIT map entry j: one frame, and the JIT map as its
 * module when it has none. */
static int jit_info(struct kiln_sym *s, const struct jit *j, uint64_t addr,
		    struct kiln_sym_info *info)
{
	struct kiln_sym_frame *f = ksym_arena_alloc(s, sizeof(*f));
	int err;

	if (!f)
		return -ENOMEM;
	memset(f, 0, sizeof(*f));
	if ((err = ksym_set_names(s, f, j->name, NULL)))
		return err;
	info->frames = f;
	info->nframes = 1;
	if (!info->module) {
		info->module = s->jit_module;
		info->file_offset = addr;
	}
	return 0;
}

/* Looks addr up in mapping map (index + 1, 0 for none). */
static int lookup_in(struct kiln_sym *s, uint32_t map, uint64_t addr,
		     struct kiln_sym_info *out)
{
	struct cache_key k = { s, addr, map };
	uint64_t key[2] = { addr, map };
	uint32_t hash = (uint32_t)kiln_hash(key, sizeof(key)), id;
	struct kiln_sym_info info;
	const struct jit *j;
	int err;

	id = kiln_htab_find(&s->cache, hash, cache_eq, &k);
	if (id) {
		struct entry *e = &s->entries[id - 1];

		/* A miss is not final while the JIT map grows. */
		if (!e->info.nframes && e->njits != s->njits &&
		    (j = ksym_find_jit(s, addr))) {
			err = jit_info(s, j, addr, &e->info);
			if (err)
				return err;
		}
		e->njits = s->njits;
		*out = e->info;
		return 0;
	}
	memset(&info, 0, sizeof(info));
	if (map) {
		struct map *m = &s->maps[map - 1];

		err = ksym_resolve(s, map - 1);
		if (err)
			return err;
		m = &s->maps[map - 1];
		info.module = m->path;
		info.file_offset = addr - m->start + m->offset;
		if (m->mod >= 0) {
			struct mod *md = &s->mods[m->mod];

			info.build_id = md->build_id;
			info.has_dwarf = md->has_dwarf;
			err = symbolize(s, md, addr - m->shift, &info);
			if (err)
				return err;
		}
	}
	if (!info.nframes && (j = ksym_find_jit(s, addr))) {
		err = jit_info(s, j, addr, &info);
		if (err)
			return err;
	}
	if (KILN_GROW(s->entries, s->entries_alloc, s->nentries + 1, 256))
		return -ENOMEM;
	s->entries[s->nentries].addr = addr;
	s->entries[s->nentries].map = map;
	s->entries[s->nentries].njits = s->njits;
	s->entries[s->nentries].info = info;
	if (kiln_htab_insert(&s->cache, hash, (uint32_t)s->nentries + 1))
		return -ENOMEM;
	s->nentries++;
	*out = info;
	return 0;
}

int kiln_sym_lookup(struct kiln_sym *s, uint64_t addr,
		    struct kiln_sym_info *out)
{
	long map = ksym_find_map(s, addr);

	if (map < 0)
		return (int)map;
	return lookup_in(s, (uint32_t)map, addr, out);
}

/* ---- whole profiles ---- */

enum { ROLE_LEAF = 1, ROLE_CALLER = 2 };

/* What kiln_sym_prof() learnt about one profile mapping. */
struct map_seen {
	uint32_t sym_map;	/* index + 1 in the session, 0: none */
	bool funcs, files, lines, inlines;
	const char *build_id;
};

static int add_lines(struct kiln_prof *p, uint32_t loc,
		     const struct kiln_sym_info *info, struct map_seen *ms)
{
	struct kiln_line lines[MAX_FRAMES];
	unsigned i;

	for (i = 0; i < info->nframes; i++) {
		const struct kiln_sym_frame *f = &info->frames[i];
		const char *file = f->func_file ? f->func_file : f->file;

		lines[i].function = kiln_prof_function(
			p, kiln_prof_interns(p, f->name),
			kiln_prof_interns(p, f->system_name),
			kiln_prof_interns(p, file), f->start_line);
		lines[i].line = f->line;
		if (ms) {
			ms->funcs = true;
			ms->files |= file != NULL;
			ms->lines |= f->line > 0;
		}
	}
	if (p->err)
		return p->err;
	return kiln_prof_set_lines(p, loc, lines, info->nframes);
}

int kiln_sym_prof(struct kiln_sym *s, struct kiln_prof *p, unsigned flags)
{
	return ksym_prof_only(s, p, flags, 0);
}

int ksym_prof_only(struct kiln_sym *s, struct kiln_prof *p, unsigned flags,
		   uint32_t only)
{
	struct map_seen *seen;
	unsigned char *roles = NULL;
	size_t i;
	int err = 0;

	seen = calloc(p->nmappings + 1, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (i = 1; i <= p->nmappings; i++) {
		const struct kiln_mapping *m = &p->mappings[i];
		const char *file = kiln_prof_str(p, m->file);
		long r;

		if (only && i != only)
			continue;
		/* A mapping without a range (perf script gives none) cannot
		 * place its file in the address space. */
		if (!(ksym_is_file_path(file) || !strcmp(file, "[vdso]")) ||
		    m->limit <= m->start)
			continue;
		r = s->light ? ksym_same_map(s, file, m->start, m->limit,
					     m->offset) : -1;
		if (r < 0)
			r = ksym_add_map(s, file, strlen(file), m->start, m->limit,
					 m->offset);
		if (r < 0) {
			err = (int)r;
			goto out;
		}
		seen[i].sym_map = (uint32_t)r + 1;
	}
	if (flags & KILN_SYM_RETURN_ADDRS) {
		roles = calloc(p->nlocations + 1, 1);
		if (!roles) {
			err = -ENOMEM;
			goto out;
		}
		for (i = 0; i < p->nsamples; i++) {
			const struct kiln_sample *sm = &p->samples[i];
			const uint32_t *locs = kiln_prof_sample_locs(p, sm);
			uint32_t j;

			for (j = 0; j < sm->depth; j++)
				roles[locs[j]] |= j ? ROLE_CALLER : ROLE_LEAF;
		}
	}
	for (i = 1; i <= p->nlocations; i++) {
		const struct kiln_location *l = &p->locations[i];
		struct map_seen *ms = l->mapping <= p->nmappings ?
					      &seen[l->mapping] : NULL;
		struct kiln_sym_info info;
		uint64_t addr = l->address;

		if (l->nlines || !ms || (!ms->sym_map && !s->njits))
			continue;
		/* A return address points after the call, maybe into the
		 * next line or function: look inside the call instead. */
		if (roles && roles[i] == ROLE_CALLER && addr)
			addr--;
		err = lookup_in(s, ms->sym_map, addr, &info);
		if (err)
			goto out;
		if (ms->sym_map) {
			ms->inlines |= info.has_dwarf;
			if (info.build_id)
				ms->build_id = info.build_id;
		}
		if (!info.nframes)
			continue;
		err = add_lines(p, (uint32_t)i, &info,
				ms->sym_map && l->mapping ? ms : NULL);
		if (err)
			goto out;
	}
	for (i = 1; i <= p->nmappings; i++) {
		struct kiln_mapping *m = &p->mappings[i];
		const struct map_seen *ms = &seen[i];

		if (!ms->sym_map)
			continue;
		m->has_functions |= ms->funcs;
		m->has_filenames |= ms->files;
		m->has_line_numbers |= ms->lines;
		m->has_inline_frames |= ms->inlines && ms->funcs;
		if (!m->build_id && ms->build_id)
			m->build_id = kiln_prof_interns(p, ms->build_id);
	}
	err = p->err;
out:
	free(roles);
	free(seen);
	return err;
}
