/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's insides, shared by its files (not an interface: see
 * symbolize.h): the session and module structures, and the functions one
 * part calls in another.
 *
 *   symbolize.c  sessions, strings
 *   modules.c    mappings, modules reported to libdwfl
 *   lookup.c     an address's lookup (its per-address cache), profiles
 *   symtab.c     ELF symbol tables: aliases, the fast interval index,
 *                PLT entries
 *   dwarf.c      DWARF: a compile unit's function index, inline chains
 *   cuaddr.c     an address's compile unit and line (also without
 *                .debug_aranges); disasm.c uses it too
 *   lines.c      lines read apart (kiln_sym_fill_lines())
 *   jit.c        perf JIT maps
 */
#ifndef KILN_SYMBOLIZE_SYMINT_H
#define KILN_SYMBOLIZE_SYMINT_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "symbolize/symbolize.h"
#include "util/htab.h"

#define KSYM_HIDDEN __attribute__((visibility("hidden")))

/* ---- an arena of strings and frame arrays that never move ---- */

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

#define CHUNK_MIN (64 * 1024)

/* Mapping states: an index into s->mods when >= 0. */
#define MOD_UNTRIED (-1)
#define MOD_NONE (-2)

struct map {
	const char *path;	/* as given, in the arena */
	uint64_t start, end, offset;
	int mod;
	/*
	 * Runtime address minus the module's address (its Dwfl_Module's
	 * space): 0 for the mapping the module was reported for, the
	 * difference of the biases for another mapping of the same file at
	 * another place (node's embedded builtins mapped a second time).
	 */
	uint64_t shift;
};

/*
 * The functions of one compilation unit with code (subprograms, inlined
 * subroutines, entry points), indexed by address: built by one walk of
 * the unit's DIE tree the first time an address falls in it, instead of
 * a walk per address (dwarf_getscopes(): tens of microseconds even for a
 * small unit, milliseconds for a large C++ one).
 */
struct cu_fn {
	Dwarf_Die die;
	int32_t parent;		/* index of the enclosing function, -1: none */
	uint32_t depth;		/* functions around it */
};

struct cu_range {
	uint64_t lo, hi;	/* [lo, hi), DWARF addresses (no bias) */
	uint32_t fn;
};

struct cu_index {
	Dwarf_Off cu;		/* the unit's DIE offset */
	struct cu_fn *fns;
	size_t nfns;
	struct cu_range *ranges;	/* by lo, then depth */
	size_t nranges;
};

/*
 * The answers of dwfl_module_addrinfo() for a module, by elementary
 * interval: between two consecutive "bounds" (every symbol's start and
 * end, every section's start and end) the set of symbols that start at
 * or before an address, cover it, or share its section is the same, and
 * so is the symbol libdwfl picks for it (by that set alone: sized symbols
 * covering it, binding, sizeless labels of its section).  libdwfl scans
 * the whole symbol table for every address (libc's full table: 10,000
 * symbols, 150 us an address); here it is asked once per interval.
 * Built at a module's SYM_CACHE_AFTER-th lookup, when its table is large.
 */
struct sym_cache {
	uint64_t *bounds;	/* sorted, distinct */
	size_t nbounds;
	const char **name;	/* nbounds + 1 intervals: the answer, or NULL */
	uint8_t *known;		/* whether name[i] was asked yet */
};

/*
 * A module's symbol table as libdwfl hands it out (dwfl_module_getsym_info),
 * read once: the interval bounds, the aliases and the names of addresses
 * come from this copy instead of a libdwfl scan of the table each.
 */
struct symtab_ent {
	uint64_t addr;		/* st_value adjusted (bias) */
	uint64_t size;
	const char *name;	/* NULL: libdwfl gave none */
	uint8_t info;		/* st_info */
	bool eligible;		/* one dwfl_module_addrinfo() may return */
	bool global_part;	/* at or after the first global's index */
};

/* A named symbol of the table, in the order of addresses. */
struct sym_by_addr {
	uint64_t addr;
	uint64_t max_end;	/* the largest end of an eligible one up to here */
	uint32_t ndx;		/* into the table */
};

/* A function symbol of a module, for choosing among aliases. */
struct alias {
	uint64_t addr;
	const char *name;	/* libelf's string, with any @version */
	uint8_t rank;		/* binding: GLOBAL 0, WEAK 1, other 2 */
};

#define SYM_CACHE_AFTER 4
#define SYM_CACHE_MIN_SYMS 256

/*
 * The compile units of a module by address (cuaddr.c), read from the
 * units' own ranges the first time libdwfl finds no unit for an address
 * (a file without .debug_aranges: clang's default).
 */
struct ksym_cu_span {
	uint64_t lo, hi;	/* [lo, hi), DWARF addresses (no bias) */
	Dwarf_Die die;		/* the unit's DIE */
};

struct ksym_cutab {
	struct ksym_cu_span *v;	/* by lo */
	size_t n;
	uint64_t bias;		/* the module's DWARF bias */
	bool built;
};

struct mod {
	const char *path;	/* the mapped path, as given */
	uint64_t bias;		/* as libdwfl has it (0 for ET_EXEC files) */
	Dwfl_Module *dwmod;
	const char *build_id;
	bool has_dwarf;
	struct cu_index **cus;	/* by cu, built on demand */
	struct ksym_cutab cutab;	/* units by address, where libdwfl has none */
	size_t ncus, cus_alloc;
	struct sym_cache *syms;	/* see sym_cache; NULL until built */
	unsigned lookups;	/* symbol lookups so far */
	struct alias *aliases;	/* function symbols by address (see pick_alias) */
	size_t naliases;
	bool aliases_built;
	struct symtab_ent *tab;	/* see symtab_ent; NULL until read (or none) */
	size_t ntab;
	bool tab_read;
	bool fast_ok;		/* sym_fast() may answer (see there) */
	bool lines_deferred;	/* its DWARF is kiln_sym_fill_lines()' */
	struct sym_by_addr *by_addr;	/* named symbols by address, stably */
	size_t nby_addr;
};

struct entry {
	uint64_t addr;
	uint32_t map;		/* index + 1 into s->maps, 0 for none */
	size_t njits;		/* JIT entries known when it was looked up */
	struct kiln_sym_info info;
};

struct jit {
	uint64_t start, end;
	const char *name;
};

struct kiln_sym {
	Dwfl *dwfl;
	bool light;		/* see kiln_sym_opts.light */
	bool defer;		/* see kiln_sym_opts.defer_cached_lines */
	size_t lines_next;	/* entries before it: tried by fill_lines */
	int pid;
	const char *root;

	struct chunk *chunks;

	struct map *maps;
	size_t nmaps, maps_alloc;
	uint32_t *order;	/* map indexes sorted by start */
	bool order_valid;

	struct mod *mods;
	size_t nmods, mods_alloc;

	struct entry *entries;
	size_t nentries, entries_alloc;
	struct kiln_htab cache;

	const char **strs;	/* interned strings, for names repeated */
	size_t nstrs, strs_alloc;
	struct kiln_htab str_index;

	struct jit *jits;
	size_t njits, jits_alloc;
	bool jits_sorted;
	const char *jit_module;
	/* kiln_sym_load_own_perfmap(): whose map was read, and how far. */
	int own_map_pid;
	uint64_t own_map_off;
	int own_jd_pid;		/* kiln_sym_load_own_jitdump(), as above */
	uint64_t own_jd_off;
};

/* The most frames one address gives (inlined ones and their function). */
#define MAX_FRAMES 64

/* The length of a symbol name without its version ("write@@GLIBC_2.2.5"). */
static inline size_t ksym_base_len(const char *name)
{
	const char *at = strchr(name, '@');

	return at && at > name ? (size_t)(at - name) : strlen(name);
}

/* symbolize.c: the session's arena and interned strings (NULL: no memory). */
KSYM_HIDDEN void *ksym_arena_alloc(struct kiln_sym *s, size_t n);
KSYM_HIDDEN const char *ksym_intern(struct kiln_sym *s, const char *str,
				    size_t len);
KSYM_HIDDEN const char *ksym_interns(struct kiln_sym *s, const char *str);
/* Frame f named from a (mangled) symbol and a plain name; 0 or -ENOMEM. */
KSYM_HIDDEN int ksym_set_names(struct kiln_sym *s, struct kiln_sym_frame *f,
			       const char *sys, const char *plain);
/* Frame f named after ELF symbol sym (see there); 0 or -ENOMEM. */
KSYM_HIDDEN int ksym_set_symbol_names(struct kiln_sym *s,
				      struct kiln_sym_frame *f, const char *sym);
/* A mapping added to the session: its index, or -ENOMEM / -EINVAL. */
KSYM_HIDDEN long ksym_add_map(struct kiln_sym *s, const char *path, size_t len,
			      uint64_t start, uint64_t end, uint64_t offset);

/* modules.c: the mapping identical to this one, or -1. */
KSYM_HIDDEN long ksym_same_map(const struct kiln_sym *s, const char *path,
			       uint64_t start, uint64_t end, uint64_t offset);
/* The index + 1 of the mapping holding addr, 0 if none, -ENOMEM. */
KSYM_HIDDEN long ksym_find_map(struct kiln_sym *s, uint64_t addr);
/* lookup.c: kiln_sym_prof() on mapping only (an id; 0: every mapping). */
KSYM_HIDDEN int ksym_prof_only(struct kiln_sym *s, struct kiln_prof *p,
			       unsigned flags, uint32_t only);
/* Whether a mapping's path names a file (not "[heap]", a memfd, ...). */
KSYM_HIDDEN bool ksym_is_file_path(const char *path);
/* Reports the file of mapping mi to libdwfl once; 0 or -ENOMEM. */
KSYM_HIDDEN int ksym_resolve(struct kiln_sym *s, size_t mi);

/* dwarf.c: the inline chain at addr into fr[], *nfr frames; 0 or -ENOMEM. */
KSYM_HIDDEN int ksym_dwarf_frames(struct kiln_sym *s, struct mod *md,
				  uint64_t addr, const char *symname,
				  struct kiln_sym_frame *fr, unsigned *nfr);
/* Frees md's compile unit indexes. */
KSYM_HIDDEN void ksym_dwarf_release(struct mod *md);

/*
 * cuaddr.c: the compile unit DIE holding addr (an address of mod's space,
 * bias included) and the unit's bias into *bias, as dwfl_module_addrdie()
 * gives it, falling back on t (filled the first time) where libdwfl finds
 * none.  NULL: no unit holds addr (or no memory for t).  The DIE lives as
 * long as mod and t.
 */
KSYM_HIDDEN Dwarf_Die *ksym_cu_at(Dwfl_Module *mod, struct ksym_cutab *t,
				  Dwarf_Addr addr, Dwarf_Addr *bias);
/*
 * name, a file name of unit cu's line table or attributes, absolute: as
 * it is when it is, else joined to the unit's DW_AT_comp_dir in buf (len
 * bytes) when that is absolute and the join fits.  Returns name or buf.
 */
KSYM_HIDDEN const char *ksym_cu_path(Dwarf_Die *cu, const char *name,
				     char *buf, size_t len);
/* The source file of DWARF address pc from the line table of unit cu
 * (through ksym_cu_path(): libdw's string or buf) and its line into
 * *line (0: none); NULL: none. */
KSYM_HIDDEN const char *ksym_cu_line(Dwarf_Die *cu, Dwarf_Addr pc, int *line,
				     char *buf, size_t len);
/* ksym_cu_line() in ksym_cu_at()'s unit: addr's source file and its line
 * into *line; NULL: none. */
KSYM_HIDDEN const char *ksym_src_at(Dwfl_Module *mod, struct ksym_cutab *t,
				    Dwarf_Addr addr, int *line, char *buf,
				    size_t len);
/* Frees t's table, leaving it empty and unbuilt. */
KSYM_HIDDEN void ksym_cutab_release(struct ksym_cutab *t);

/* symtab.c: the ELF symbol covering addr (NULL: none), with its version. */
KSYM_HIDDEN const char *ksym_sym_name(struct mod *md, uint64_t addr);
/* "name@plt" for a PLT entry's address, interned; NULL otherwise. */
KSYM_HIDDEN const char *ksym_plt_name(struct kiln_sym *s, struct mod *md,
				      uint64_t addr);
/* Frees md's symbol table copies and indexes. */
KSYM_HIDDEN void ksym_symtab_release(struct mod *md);

/* jit.c: the JIT map entry covering addr, or NULL. */
KSYM_HIDDEN const struct jit *ksym_find_jit(struct kiln_sym *s, uint64_t addr);

#endif
