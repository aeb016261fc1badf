/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer (symbolize stage): libdwfl sessions over an address space
 * described by file mappings, with a cache per address.  This file: the
 * session (its arena and interned strings, the debug file callbacks, new
 * and free); modules.c its mappings and modules, lookup.c the lookups.
 * See symbolize.h for the interface, symint.h for the files that make it,
 * and docs/symbols.md for the design.
 */
#include "symbolize/symbolize.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/debugcache.h"
#include "symbolize/debugsearch.h"
#include "symbolize/symint.h"
#include "util/file.h"
#include "util/buf.h"
#include "util/htab.h"

/* ---- an arena of strings and frame arrays that never move ---- */

void *ksym_arena_alloc(struct kiln_sym *s, size_t n)
{
	struct chunk *c = s->chunks;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = s->chunks;
		s->chunks = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

struct str_key {
	const struct kiln_sym *s;
	const char *str;
	size_t len;
};

static bool str_eq(const void *ctx, uint32_t id)
{
	const struct str_key *k = ctx;
	const char *e = k->s->strs[id - 1];

	return !strncmp(e, k->str, k->len) && e[k->len] == '\0';
}

/* An interned copy of str[0..len) owned by the session; NULL on ENOMEM. */
const char *ksym_intern(struct kiln_sym *s, const char *str, size_t len)
{
	struct str_key k = { s, str, len };
	uint32_t hash = (uint32_t)kiln_hash(str, len), id;
	char *copy;

	id = kiln_htab_find(&s->str_index, hash, str_eq, &k);
	if (id)
		return s->strs[id - 1];
	if (KILN_GROW(s->strs, s->strs_alloc, s->nstrs + 1, 256))
		return NULL;
	copy = ksym_arena_alloc(s, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	copy[len] = '\0';
	if (kiln_htab_insert(&s->str_index, hash, (uint32_t)s->nstrs + 1))
		return NULL;
	s->strs[s->nstrs++] = copy;
	return copy;
}

const char *ksym_interns(struct kiln_sym *s, const char *str)
{
	return ksym_intern(s, str, strlen(str));
}

/* Fills name and system_name from a mangled or plain symbol name. */
int ksym_set_names(struct kiln_sym *s, struct kiln_sym_frame *f,
		   const char *sys, const char *plain)
{
	char *dm = sys ? kiln_sym_demangle(sys) : NULL;

	if (!sys)
		sys = plain;
	f->system_name = ksym_interns(s, sys);
	f->name = dm ? ksym_interns(s, dm) :
		       plain ? ksym_interns(s, plain) : f->system_name;
	free(dm);
	return f->name && f->system_name ? 0 : -ENOMEM;
}

/* Whether s[0..len) is one part of a GCC clone suffix (".constprop.0"). */
static bool clone_part(const char *p, size_t len)
{
	static const char *const words[] = { "constprop", "isra", "part",
		"cold", "lto_priv", "localalias", "clone", "llvm" };
	size_t i;

	for (i = 0; i < len && p[i] >= '0' && p[i] <= '9'; i++)
		;
	if (len && i == len)
		return true;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == len && !memcmp(p, words[i], len))
			return true;
	return false;
}

/*
 * The length of a symbol name without its version and the suffixes of
 * the compiler's clones ("foo.constprop.0", "foo.cold", "_ZN1a1bEv.isra.0"):
 * the function the source calls, as its DWARF names it.
 */
static size_t function_len(const char *sym)
{
	size_t len = ksym_base_len(sym);
	const char *dot = memchr(sym, '.', len), *p, *end = sym + len;

	if (!dot || dot == sym)
		return len;
	for (p = dot; p < end;) {
		const char *q = memchr(p + 1, '.', (size_t)(end - p - 1));

		if (!q)
			q = end;
		if (!clone_part(p + 1, (size_t)(q - p - 1)))
			return len;
		p = q;
	}
	return (size_t)(dot - sym);
}

/*
 * Names frame f after the ELF symbol sym, as every session does for the
 * function an address is in (not one inlined into it): the system name is
 * the symbol without its version, the name that demangled and without
 * clone suffixes.
 */
int ksym_set_symbol_names(struct kiln_sym *s, struct kiln_sym_frame *f,
			  const char *sym)
{
	size_t flen = function_len(sym), blen = ksym_base_len(sym);
	const char *fn = ksym_intern(s, sym, flen);
	char *dm = fn ? kiln_sym_demangle(fn) : NULL;

	f->system_name = ksym_intern(s, sym, blen);
	f->name = dm ? ksym_interns(s, dm) : fn;
	free(dm);
	return f->name && f->system_name ? 0 : -ENOMEM;
}

/* ---- sessions ---- */

static bool no_local;	/* kiln_sym_set_no_local() */

void kiln_sym_set_no_local(bool on)
{
	no_local = on;
}

bool kiln_sym_no_local(void)
{
	return no_local;
}

static char *debuginfo_path;	/* NULL: elfutils' default search path */

/*
 * A module's userdata once its main debug file was found: a later
 * find_debuginfo call for it is for its dwz alternate file
 * (.gnu_debugaltlink), which the debug file cache does not hold.
 */
static char main_debug_found;

/*
 * Separate debug files: a decompressed copy from the debug file cache
 * (debugcache.h) when there is one; else elfutils' search, and when that
 * finds a file with compressed sections, a copy of it is added to the
 * cache for the next run (not by light sessions).  local: the build-id
 * folders only, else also .gnu_debuglink names and debuginfod.
 */
static int find_debuginfo_cached(bool local, Dwfl_Module *mod, void **userdata,
				 const char *modname, Dwarf_Addr base,
				 const char *file_name, const char *debuglink_file,
				 GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	bool main_file = *userdata != &main_debug_found;
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	int len = 0, fd;

	if (main_file && !no_local) {
		len = dwfl_module_build_id(mod, &id, &vaddr);
		fd = len > 0 ? kiln_debugcache_open(id, (size_t)len,
						     debuginfo_file_name) : -1;
		if (fd >= 0) {
			*userdata = &main_debug_found;
			return local ? kiln_fd_raise(fd) : fd;
		}
	}
	if (local)
		fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base,
						  file_name, debuglink_file,
						  debuglink_crc,
						  debuginfo_file_name);
	else
		fd = kiln_debugsearch_standard(mod, userdata, modname, base,
					       file_name, debuglink_file,
					       debuglink_crc,
					       debuginfo_file_name);
	if (fd >= 0 && main_file) {
		*userdata = &main_debug_found;
		/* This run reads the original, as it is already open (libdwfl
		 * may hold it); the next one maps the copy. */
		if (!local && len > 0 && *debuginfo_file_name)
			kiln_debugcache_add(id, (size_t)len, *debuginfo_file_name);
	}
	/* libdwfl holds it to dwfl_end(): see ksym_resolve(). */
	return local ? kiln_fd_raise(fd) : fd;
}

int kiln_sym_find_debuginfo(Dwfl_Module *mod, void **userdata,
			    const char *modname, Dwarf_Addr base,
			    const char *file_name, const char *debuglink_file,
			    GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return find_debuginfo_cached(false, mod, userdata, modname, base,
				     file_name, debuglink_file, debuglink_crc,
				     debuginfo_file_name);
}

static const Dwfl_Callbacks callbacks = {
	/* Finds the main file of a module by build ID when asked. */
	.find_elf = dwfl_build_id_find_elf,
	/* Separate debug files: the debug file cache, then .build-id/xx/
	 * yyyy.debug under /usr/lib/debug, .gnu_debuglink next to the file,
	 * in its .debug/ and under /usr/lib/debug, then debuginfod if
	 * configured. */
	.find_debuginfo = kiln_sym_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* Separate debug files from the cache and the local build-id folders only. */
static int find_debuginfo_local(Dwfl_Module *mod, void **userdata,
				const char *modname, Dwarf_Addr base,
				const char *file_name, const char *debuglink_file,
				GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return find_debuginfo_cached(true, mod, userdata, modname, base,
				     file_name, debuglink_file, debuglink_crc,
				     debuginfo_file_name);
}

static const Dwfl_Callbacks light_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo_local,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct kiln_sym *kiln_sym_new(const struct kiln_sym_opts *opts)
{
	struct kiln_sym *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->light = opts && opts->light;
	s->defer = s->light && opts->defer_cached_lines;
	s->dwfl = dwfl_begin(s->light ? &light_callbacks : &callbacks);
	if (!s->dwfl) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	if (opts) {
		s->pid = opts->pid;
		if (opts->root && *opts->root) {
			s->root = ksym_interns(s, opts->root);
			if (!s->root) {
				kiln_sym_free(s);
				errno = ENOMEM;
				return NULL;
			}
		}
	}
	return s;
}

void kiln_sym_free(struct kiln_sym *s)
{
	struct chunk *c, *next;

	if (!s)
		return;
	dwfl_end(s->dwfl);
	for (c = s->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(s->maps);
	free(s->order);
	for (size_t i = 0; i < s->nmods; i++) {
		ksym_dwarf_release(&s->mods[i]);
		ksym_symtab_release(&s->mods[i]);
	}
	free(s->mods);
	free(s->entries);
	kiln_htab_release(&s->cache);
	free(s->strs);
	kiln_htab_release(&s->str_index);
	free(s->jits);
	free(s);
}
