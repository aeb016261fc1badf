/*
 * The symbolizer (symbolize stage): libdwfl sessions over an address space
 * described by file mappings, with a cache per address.  See symbolize.h
 * for the interface and docs/symbols.md for the design.
 */
#include "symbolize/symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "symbolize/debugcache.h"
#include "symbolize/debugsearch.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"
#include "util/sort.h"

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

struct mod {
	const char *path;	/* the mapped path, as given */
	uint64_t bias;
	Dwfl_Module *dwmod;
	const char *build_id;
	bool has_dwarf;
	struct cu_index **cus;	/* by cu, built on demand */
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
};

static void *arena_alloc(struct kiln_sym *s, size_t n)
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
static const char *intern(struct kiln_sym *s, const char *str, size_t len)
{
	struct str_key k = { s, str, len };
	uint32_t hash = (uint32_t)kiln_hash(str, len), id;
	char *copy;

	id = kiln_htab_find(&s->str_index, hash, str_eq, &k);
	if (id)
		return s->strs[id - 1];
	if (s->nstrs == s->strs_alloc) {
		size_t n = s->strs_alloc ? s->strs_alloc * 2 : 256;
		const char **q = realloc(s->strs, n * sizeof(*q));

		if (!q)
			return NULL;
		s->strs = q;
		s->strs_alloc = n;
	}
	copy = arena_alloc(s, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	copy[len] = '\0';
	if (kiln_htab_insert(&s->str_index, hash, (uint32_t)s->nstrs + 1))
		return NULL;
	s->strs[s->nstrs++] = copy;
	return copy;
}

static const char *interns(struct kiln_sym *s, const char *str)
{
	return intern(s, str, strlen(str));
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
			return fd;
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
	return fd;
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

/* Whether the debug file cache holds a decompressed copy for dwmod. */
static bool cached_dwarf(Dwfl_Module *dwmod)
{
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(dwmod, &id, &vaddr);
	int fd = len > 0 ? kiln_debugcache_open(id, (size_t)len, NULL) : -1;

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Whether an ELF file carries DWARF of its own. */
static bool own_dwarf(Dwfl_Module *dwmod)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(dwmod, &bias);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") ||
			     !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

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
			s->root = interns(s, opts->root);
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
		for (size_t j = 0; j < s->mods[i].ncus; j++) {
			free(s->mods[i].cus[j]->fns);
			free(s->mods[i].cus[j]->ranges);
			free(s->mods[i].cus[j]);
		}
		free(s->mods[i].cus);
		free(s->mods[i].aliases);
		free(s->mods[i].tab);
		free(s->mods[i].by_addr);
		if (s->mods[i].syms) {
			free(s->mods[i].syms->bounds);
			free(s->mods[i].syms->name);
			free(s->mods[i].syms->known);
			free(s->mods[i].syms);
		}
	}
	free(s->mods);
	free(s->entries);
	kiln_htab_release(&s->cache);
	free(s->strs);
	kiln_htab_release(&s->str_index);
	free(s->jits);
	free(s);
}

/* ---- mappings ---- */

static long add_map(struct kiln_sym *s, const char *path, size_t len,
		    uint64_t start, uint64_t end, uint64_t offset)
{
	struct map *m;
	const char *copy;

	if (end <= start)
		return -EINVAL;
	if (s->nmaps == s->maps_alloc) {
		size_t n = s->maps_alloc ? s->maps_alloc * 2 : 32;
		struct map *q = realloc(s->maps, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		s->maps = q;
		s->maps_alloc = n;
	}
	copy = intern(s, path, len);
	if (!copy)
		return -ENOMEM;
	m = &s->maps[s->nmaps];
	m->path = copy;
	m->start = start;
	m->end = end;
	m->offset = offset;
	m->mod = MOD_UNTRIED;
	s->order_valid = false;
	return (long)s->nmaps++;
}

/*
 * The session's mapping identical to this one, or -1: a light session
 * (the agent's) is reused for profile after profile of the same process,
 * whose mappings mostly stay; a mapping added twice would be reported to
 * libdwfl twice.  Linear: a process maps a few hundred files at most.
 */
static long same_map(const struct kiln_sym *s, const char *path,
		     uint64_t start, uint64_t end, uint64_t offset)
{
	size_t i;

	for (i = 0; i < s->nmaps; i++) {
		const struct map *m = &s->maps[i];

		if (m->start == start && m->end == end && m->offset == offset &&
		    !strcmp(m->path, path))
			return (long)i;
	}
	return -1;
}

int kiln_sym_add_mapping(struct kiln_sym *s, const char *path, uint64_t start,
			 uint64_t end, uint64_t offset)
{
	long r = add_map(s, path ? path : "", path ? strlen(path) : 0, start,
			 end, offset);

	return r < 0 ? (int)r : 0;
}

static int add_maps_entry(const struct kiln_maps_entry *e, void *ctx)
{
	struct kiln_sym *s = ctx;
	long r;

	if (e->perms[2] != 'x')
		return 0;
	r = add_map(s, e->path, e->pathlen, e->start, e->end, e->offset);
	return r < 0 ? (int)r : 0;
}

int kiln_sym_add_maps(struct kiln_sym *s, const char *text, size_t len)
{
	return kiln_maps_parse(text, len, add_maps_entry, s);
}

static int cmp_order(const void *a, const void *b, void *ctx)
{
	const struct kiln_sym *s = ctx;
	const struct map *x = &s->maps[*(const uint32_t *)a];
	const struct map *y = &s->maps[*(const uint32_t *)b];

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The index + 1 of the mapping holding addr, 0 if none, -ENOMEM. */
static long find_map(struct kiln_sym *s, uint64_t addr)
{
	size_t lo = 0, hi, i;

	if (!s->order_valid) {
		uint32_t *o = realloc(s->order,
				      (s->nmaps ? s->nmaps : 1) * sizeof(*o));

		if (!o)
			return -ENOMEM;
		s->order = o;
		for (i = 0; i < s->nmaps; i++)
			o[i] = (uint32_t)i;
		qsort_r(o, s->nmaps, sizeof(*o), cmp_order, s);
		s->order_valid = true;
	}
	/* The last mapping starting at or below addr. */
	hi = s->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->maps[s->order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	i = s->order[lo - 1];
	return addr < s->maps[i].end ? (long)i + 1 : 0;
}

/* ---- modules ---- */

static bool is_file_path(const char *path)
{
	if (path[0] != '/')
		return false;	/* "", "[heap]", "[vdso]", "anon_inode:..." */
	return strncmp(path, "//anon", 6) && strncmp(path, "/memfd:", 7) &&
	       strncmp(path, "/dev/", 5) && strncmp(path, "/SYSV", 5);
}

/*
 * Opens the file of mapping m: its path under the root, else (gone or
 * replaced) through /proc/PID/map_files.  name (size 4096) receives the
 * path under the root without " (deleted)", where libdwfl looks for
 * .gnu_debuglink files.
 */
static int open_map(struct kiln_sym *s, const struct map *m, char *name)
{
	static const char deleted[] = " (deleted)";
	size_t len = strlen(m->path), dl = sizeof(deleted) - 1;
	bool gone = len > dl && !strcmp(m->path + len - dl, deleted);
	char buf[128];
	int n, fd = -1;

	if (gone)
		len -= dl;
	n = snprintf(name, 4096, "%s%.*s", s->root ? s->root : "", (int)len,
		     m->path);
	if (n <= 0 || n >= 4096)
		return -1;
	/* Regular files only, opened without blocking: a profile or trace
	 * names any path, and a FIFO there would hang the reader. */
	if (!gone)
		fd = kiln_open_regular(name);
	if (fd < 0 && s->pid > 0) {
		snprintf(buf, sizeof(buf),
			 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, s->pid,
			 m->start, m->end);
		fd = kiln_open_regular(buf);
	}
	return fd < 0 ? -1 : fd;
}

/*
 * The [vdso] is no file, but every 64-bit process of this kernel maps the
 * same image, this one's included: a copy of its own (a memfd: nothing on
 * disk) lets libdw name the vDSO's functions of a process on this machine.
 * The image must fill the mapping m to the page (a vDSO of another
 * kernel, in a profile brought from elsewhere, would not, most likely;
 * it then stays [vdso]+0xOFFSET).  An fd, or -1.
 */
static int open_own_vdso(const struct map *m)
{
	const unsigned char *img = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const void *)img;
	uint64_t size, pages;
	int fd;

	if (!img || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	/* The section headers come last in the image. */
	size = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	pages = (size + 4095) & ~(uint64_t)4095;
	if (size > (1u << 20) || pages != m->end - m->start || m->offset)
		return -1;
	fd = memfd_create("kiln-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, img, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The load bias of the file mapped by m: the PT_LOAD segment holding file
 * offset m->offset is at runtime address m->start (less the page part).
 */
static bool elf_bias(Elf *elf, const struct map *m, uint64_t *bias)
{
	GElf_Ehdr ehdr;
	size_t i, phnum;

	if (!gelf_getehdr(elf, &ehdr))
		return false;
	if (ehdr.e_type == ET_EXEC) {
		*bias = 0;
		return true;
	}
	if (ehdr.e_type != ET_DYN || elf_getphdrnum(elf, &phnum))
		return false;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t lo;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		lo = ph.p_offset & ~(uint64_t)0xfff;
		if (m->offset < lo || m->offset >= ph.p_offset + ph.p_filesz)
			continue;
		/* File offset x is at vaddr p_vaddr + (x - p_offset) and at
		 * runtime start + (x - offset). */
		*bias = m->start - m->offset - ph.p_vaddr + ph.p_offset;
		return true;
	}
	/* A mapping outside every segment: assume offsets are vaddrs. */
	*bias = m->start - m->offset;
	return true;
}

static void hex_build_id(struct kiln_sym *s, struct mod *md)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(md->dwmod, &bits, &vaddr), i;
	char hex[2 * 64 + 1];

	if (n <= 0 || n > 64)
		return;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", bits[i]);
	md->build_id = intern(s, hex, (size_t)n * 2);
}

/* Reports the file of mapping mi to libdwfl once; sets maps[mi].mod. */
static int resolve(struct kiln_sym *s, size_t mi)
{
	struct map *m = &s->maps[mi];
	Dwfl_Module *dwmod;
	uint64_t bias;
	Dwarf_Addr b;
	struct mod *md;
	char name[4096];
	Elf *elf;
	size_t i;
	bool ok;
	int fd;

	if (m->mod != MOD_UNTRIED)
		return 0;
	m->mod = MOD_NONE;
	if (no_local)
		return 0;
	if (!strcmp(m->path, "[vdso]") && !s->root) {
		fd = open_own_vdso(m);
		snprintf(name, sizeof(name), "[vdso]");
	} else if (is_file_path(m->path)) {
		fd = open_map(s, m, name);
	} else {
		return 0;
	}
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ok = elf && elf_kind(elf) == ELF_K_ELF && elf_bias(elf, m, &bias);
	elf_end(elf);
	if (!ok) {
		close(fd);
		return 0;
	}
	for (i = 0; i < s->nmods; i++) {
		if (s->mods[i].bias == bias && !strcmp(s->mods[i].path, m->path)) {
			close(fd);
			m->mod = (int)i;
			return 0;
		}
	}
	if (s->nmods == s->mods_alloc) {
		size_t n = s->mods_alloc ? s->mods_alloc * 2 : 16;
		struct mod *q = realloc(s->mods, n * sizeof(*q));

		if (!q) {
			close(fd);
			return -ENOMEM;
		}
		s->mods = q;
		s->mods_alloc = n;
	}
	/* libdwfl reads the file through fd and closes it at dwfl_end();
	 * the file name it is given is where .gnu_debuglink files are
	 * sought.  With add_p_vaddr, the base given is the bias itself. */
	dwfl_report_begin_add(s->dwfl);
	dwmod = dwfl_report_elf(s->dwfl, m->path, name, fd, bias, true);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!dwmod) {
		close(fd);
		return 0;
	}
	md = &s->mods[s->nmods];
	memset(md, 0, sizeof(*md));
	md->path = m->path;
	md->bias = bias;
	md->dwmod = dwmod;
	/* Light sessions read DWARF from a separate debug file only when
	 * the cache holds it decompressed (a mapping, no inflating); those
	 * deferring leave that to kiln_sym_fill_lines(). */
	if (!s->light || own_dwarf(dwmod))
		md->has_dwarf = true;
	else if (cached_dwarf(dwmod))
		md->has_dwarf = !(md->lines_deferred = s->defer);
	md->has_dwarf = md->has_dwarf && dwfl_module_getdwarf(dwmod, &b) != NULL;
	hex_build_id(s, md);
	m->mod = (int)s->nmods++;
	return 0;
}

/* ---- lookups ---- */

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return n;
}

/* Fills name and system_name from a mangled or plain symbol name. */
static int set_names(struct kiln_sym *s, struct kiln_sym_frame *f,
		     const char *sys, const char *plain)
{
	char *dm = sys ? kiln_sym_demangle(sys) : NULL;

	if (!sys)
		sys = plain;
	f->system_name = interns(s, sys);
	f->name = dm ? interns(s, dm) :
		       plain ? interns(s, plain) : f->system_name;
	free(dm);
	return f->name && f->system_name ? 0 : -ENOMEM;
}

/* The length of a symbol name without its version ("write@@GLIBC_2.2.5"). */
static size_t base_len(const char *name)
{
	const char *at = strchr(name, '@');

	return at && at > name ? (size_t)(at - name) : strlen(name);
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
	size_t len = base_len(sym);
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
static int set_symbol_names(struct kiln_sym *s, struct kiln_sym_frame *f,
			    const char *sym)
{
	size_t flen = function_len(sym), blen = base_len(sym);
	const char *fn = intern(s, sym, flen);
	char *dm = fn ? kiln_sym_demangle(fn) : NULL;

	f->system_name = intern(s, sym, blen);
	f->name = dm ? interns(s, dm) : fn;
	free(dm);
	return f->name && f->system_name ? 0 : -ENOMEM;
}

static bool is_function(Dwarf_Die *die)
{
	int tag = dwarf_tag(die);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

#define MAX_FRAMES 64

/* Whether functions may lie below a DIE of this tag (the walk skips
 * types, variables and the like). */
static bool may_hold_functions(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_partial_unit:
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_entry_point:
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_with_stmt:
	case DW_TAG_common_block:
		return true;
	default:
		return false;
	}
}

struct cu_build {
	struct cu_index *ix;
	size_t fns_alloc, ranges_alloc;
	bool nomem;
};

/* Adds the functions under die (its children), enclosed by function
 * parent at depth. */
static void index_children(struct cu_build *b, Dwarf_Die *die, int32_t parent,
			   uint32_t depth, int level)
{
	Dwarf_Die child;

	if (level > 256 || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		int32_t fn = parent;
		uint32_t d = depth;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_entry_point) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			size_t first = b->ix->nranges;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (kiln_array_grow((void **)&b->ix->ranges,
						     &b->ranges_alloc,
						     b->ix->nranges + 1,
						     sizeof(*b->ix->ranges))) {
					b->nomem = true;
					return;
				}
				b->ix->ranges[b->ix->nranges++] = (struct cu_range){
					lo, hi, (uint32_t)b->ix->nfns };
			}
			if (b->ix->nranges > first) {
				if (kiln_array_grow((void **)&b->ix->fns,
						     &b->fns_alloc, b->ix->nfns + 1,
						     sizeof(*b->ix->fns))) {
					b->nomem = true;
					return;
				}
				b->ix->fns[b->ix->nfns] = (struct cu_fn){
					child, parent, depth };
				fn = (int32_t)b->ix->nfns++;
				d = depth + 1;
			}
		}
		if (may_hold_functions(tag))
			index_children(b, &child, fn, d, level + 1);
		if (b->nomem)
			return;
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int cu_range_cmp(const void *a, const void *b, void *ctx)
{
	const struct cu_range *x = a, *y = b;
	const struct cu_fn *cu_fns = ctx;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (cu_fns[x->fn].depth != cu_fns[y->fn].depth)
		return cu_fns[x->fn].depth < cu_fns[y->fn].depth ? -1 : 1;
	return x->fn < y->fn ? -1 : x->fn > y->fn;
}

/* The function index of cudie in md, built the first time (NULL: no
 * memory). */
static struct cu_index *cu_index_of(struct mod *md, Dwarf_Die *cudie)
{
	Dwarf_Off off = dwarf_dieoffset(cudie);
	size_t lo = 0, hi = md->ncus;
	struct cu_build b = { 0 };

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (md->cus[mid]->cu < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < md->ncus && md->cus[lo]->cu == off)
		return md->cus[lo];
	if (kiln_array_grow((void **)&md->cus, &md->cus_alloc, md->ncus + 1,
			     sizeof(*md->cus)))
		return NULL;
	b.ix = calloc(1, sizeof(*b.ix));
	if (!b.ix)
		return NULL;
	b.ix->cu = off;
	index_children(&b, cudie, -1, 0, 0);
	if (b.nomem) {
		free(b.ix->fns);
		free(b.ix->ranges);
		free(b.ix);
		return NULL;
	}
	if (b.ix->nranges)
		qsort_r(b.ix->ranges, b.ix->nranges, sizeof(*b.ix->ranges),
			cu_range_cmp, b.ix->fns);
	memmove(md->cus + lo + 1, md->cus + lo, (md->ncus - lo) * sizeof(*md->cus));
	md->cus[lo] = b.ix;
	md->ncus++;
	return b.ix;
}

/*
 * The innermost function of ix holding pc (DWARF address), or -1; of
 * functions at the same depth (aliases: several DIEs for one range), the
 * first in the unit, as dwarf_getscopes() finds it.  Ranges nest, and at
 * one lo the deeper come later: walking back from the last range starting
 * at or before pc, the first top-level function holding pc comes after
 * every deeper one that may hold it (and its aliases start where it does).
 */
static int32_t cu_find(const struct cu_index *ix, uint64_t pc)
{
	size_t lo = 0, hi = ix->nranges;
	int32_t best = -1;
	bool top = false;
	uint64_t top_lo = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct cu_range *r = &ix->ranges[lo];
		const struct cu_fn *f = &ix->fns[r->fn];

		if (top && r->lo < top_lo)
			break;
		if (pc >= r->hi)
			continue;
		if (best < 0 || f->depth > ix->fns[best].depth ||
		    (f->depth == ix->fns[best].depth && (int32_t)r->fn < best))
			best = (int32_t)r->fn;
		if (!f->depth && !top) {
			top = true;
			top_lo = r->lo;
		}
	}
	return best;
}

/*
 * The DIE a function DIE is an instance of: DW_AT_abstract_origin followed
 * to its end (a bounded walk), as a pointer into the DWARF data, the same
 * for the out-of-line copy of a function and every inlined copy of it.
 */
static const void *fn_origin(Dwarf_Die *die)
{
	Dwarf_Die o = *die;
	Dwarf_Attribute a;

	for (int i = 0; i < 8 && dwarf_attr(&o, DW_AT_abstract_origin, &a); i++)
		if (!dwarf_formref_die(&a, &o))
			break;
	return o.addr;
}

/*
 * Whether inlined subroutine die is a part of the function around it
 * (outer) inlined back into it, not a call: GCC's partial inlining splits
 * a function's cold tail into FN.part.N, and where it inlines that back
 * into FN, DWARF says FN is inlined into FN at FN's own declaration line
 * (libc's write() is __libc_write inlined into __libc_write, at write.c:24,
 * around the system call of its multithreaded path; 359 such places in
 * libc 2.36).  The same origin and a call at the declaration line: a real
 * recursive call inlined (msort_with_tmp's, at lines of its body) stays.
 */
static bool split_part(Dwarf_Die *die, Dwarf_Die *outer)
{
	Dwarf_Attribute a;
	Dwarf_Word call = 0;
	int decl = 0;

	return fn_origin(die) == fn_origin(outer) &&
	       !dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &call) &&
	       !dwarf_decl_line(die, &decl) && call == (Dwarf_Word)decl;
}

/*
 * The inline chain at addr from DWARF, as `eu-addr2line -i` finds it: the
 * physical nesting of the innermost scope, each inlined subroutine's
 * DW_AT_call_file/call_line giving the position in the frame around it.
 * A function's own split-off part inlined back into it (split_part) is
 * no frame of its own: the function's frame has its position.
 */
static int dwarf_frames(struct kiln_sym *s, struct mod *md, uint64_t addr,
			const char *symname, struct kiln_sym_frame *fr,
			unsigned *nfr)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(md->dwmod, addr, &bias);
	Dwarf_Die chain[MAX_FRAMES];
	struct cu_index *ix;
	Dwfl_Line *dl;
	Dwarf_Files *files = NULL;
	const char *file = NULL;
	int line = 0, n = 0, i, err = 0;
	int32_t fn;
	unsigned k = 0;

	*nfr = 0;
	if (!cudie)
		return 0;
	ix = cu_index_of(md, cudie);
	if (!ix)
		return -ENOMEM;
	/* The innermost function and the functions around it. */
	for (fn = cu_find(ix, addr - bias); fn >= 0 && n < MAX_FRAMES;
	     fn = ix->fns[fn].parent)
		chain[n++] = ix->fns[fn].die;
	if (!n)
		return 0;
	dl = dwfl_module_getsrc(md->dwmod, addr);
	if (dl)
		file = dwfl_lineinfo(dl, &(Dwarf_Addr){ 0 }, &line, NULL, NULL,
				     NULL);
	dwarf_getsrcfiles(cudie, &files, NULL);
	for (i = 0; i < n && k < MAX_FRAMES; i++) {
		Dwarf_Die *die = &chain[i];
		struct kiln_sym_frame *f = &fr[k];
		const char *df, *link, *plain;
		Dwarf_Attribute a;
		Dwarf_Word v;
		int tag;

		if (!is_function(die))
			continue;
		tag = dwarf_tag(die);
		/* (chain[] holds functions only: chain[i + 1] is the one
		 * around this one.) */
		if (tag == DW_TAG_inlined_subroutine && i + 1 < n &&
		    split_part(die, &chain[i + 1]))
			continue;
		memset(f, 0, sizeof(*f));
		link = die_linkage_name(die);
		plain = dwarf_diename(die);
		/* The outermost function is also an ELF symbol: named by it, as
		 * where no DWARF is read (the agent, for libraries whose DWARF
		 * is in a separate file), so that names do not depend on which
		 * debug files were read; DWARF names the inlined ones. */
		if (tag != DW_TAG_inlined_subroutine && symname) {
			if ((err = set_symbol_names(s, f, symname)))
				break;
		} else {
			if (!link && !plain) {
				/* An unnamed outermost function alone is no
				 * better than module+offset; inside a chain it
				 * is "??". */
				if (tag != DW_TAG_inlined_subroutine && !k)
					break;
				plain = "??";
			}
			if ((err = set_names(s, f, link, plain)))
				break;
		}
		f->file = file ? interns(s, file) : NULL;
		f->line = line;
		df = dwarf_decl_file(die);
		f->func_file = df ? interns(s, df) : f->file;
		dwarf_decl_line(die, &f->start_line);
		if ((file && !f->file) || (df && !f->func_file)) {
			err = -ENOMEM;
			break;
		}
		k++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* The caller's position is where this was inlined. */
		file = NULL;
		line = 0;
		if (files && !dwarf_formudata(dwarf_attr(die, DW_AT_call_file,
							 &a), &v))
			file = dwarf_filesrc(files, v, NULL, NULL);
		if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &v))
			line = (int)v;
	}
	*nfr = k;
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Reads md's symbol table once (see symtab_ent) and sorts its named
 * symbols by address, stably (aliases_build, sym_fast); on ENOMEM,
 * nothing.
 */
static void symtab_read(struct mod *md)
{
	int nsyms = dwfl_module_getsymtab(md->dwmod);
	int first_global = dwfl_module_getsymtab_first_global(md->dwmod);
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(md->dwmod, &bias);
	GElf_Ehdr eh;
	size_t n = 0;

	md->tab_read = true;
	if (nsyms <= 0)
		return;
	md->tab = malloc((size_t)nsyms * sizeof(*md->tab));
	if (!md->tab)
		return;
	for (int i = 0; i < nsyms; i++) {
		struct symtab_ent *t = &md->tab[i];
		GElf_Sym sym;
		GElf_Addr a;
		GElf_Word shndx;
		Elf *e;
		Dwarf_Addr b;
		const char *name = dwfl_module_getsym_info(md->dwmod, i, &sym,
							   &a, &shndx, &e, &b);
		int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;

		t->addr = name ? a : 0;
		t->size = name ? sym.st_size : 0;
		t->name = name;
		t->info = name ? sym.st_info : 0;
		/* libdwfl searches the globals from first_global on, then
		 * the locals from index 1 (index 0 only when all are
		 * globals). */
		t->global_part = i >= first_global;
		t->eligible = name && *name && sym.st_shndx != SHN_UNDEF &&
			      type != STT_SECTION && type != STT_FILE &&
			      type != STT_TLS && (i > 0 || first_global == 0);
		n += name != NULL;
	}
	md->by_addr = malloc((n ? n : 1) * sizeof(*md->by_addr));
	if (!md->by_addr)
		goto fail;
	n = 0;
	for (int i = 0; i < nsyms; i++)
		if (md->tab[i].name)
			md->by_addr[n++] = (struct sym_by_addr){
				md->tab[i].addr, 0, (uint32_t)i };
	/* Stably, as qsort's merge sort did: aliases at one address stay
	 * in table order. */
	if (kiln_sort_by_u64(md->by_addr, n, sizeof(*md->by_addr),
			     offsetof(struct sym_by_addr, addr)))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct symtab_ent *t = &md->tab[md->by_addr[i].ndx];
		uint64_t end = t->eligible ? t->addr + t->size : 0;
		uint64_t prev = i ? md->by_addr[i - 1].max_end : 0;

		md->by_addr[i].max_end = end > prev ? end : prev;
	}
	md->ntab = (size_t)nsyms;
	md->nby_addr = n;
	/*
	 * libdwfl also tries a symbol's st_value resolved through a
	 * function descriptor (ppc64's .opd): machines without them only.
	 */
	md->fast_ok = first_global >= 0 && elf && gelf_getehdr(elf, &eh) &&
		      eh.e_type != ET_REL &&
		      (eh.e_machine == EM_X86_64 || eh.e_machine == EM_386 ||
		       eh.e_machine == EM_AARCH64);
	return;
fail:
	free(md->tab);
	free(md->by_addr);
	md->tab = NULL;
	md->by_addr = NULL;
}

/* Builds md's sym_cache (see there); NULL when the table is small or
 * memory is short (then libdwfl is asked every time). */
static struct sym_cache *sym_cache_build(struct mod *md)
{
	struct sym_cache *c;
	GElf_Addr bias;
	Elf *elf;
	size_t n = 0, cap;

	if (!md->tab_read)
		symtab_read(md);
	if (!md->tab || md->ntab < SYM_CACHE_MIN_SYMS)
		return NULL;
	c = calloc(1, sizeof(*c));
	cap = 2 * md->ntab + 256;
	if (!c || !(c->bounds = malloc(cap * sizeof(*c->bounds))))
		goto fail;
	for (size_t i = 0; i < md->ntab; i++) {
		if (!md->tab[i].name)
			continue;
		c->bounds[n++] = md->tab[i].addr;
		c->bounds[n++] = md->tab[i].addr + md->tab[i].size;
	}
	/* Sections: a sizeless label counts only in its own section. */
	elf = dwfl_module_getelf(md->dwmod, &bias);
	if (elf) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
				continue;
			if (kiln_array_grow((void **)&c->bounds, &cap, n + 2,
					    sizeof(*c->bounds)))
				goto fail;
			c->bounds[n++] = sh.sh_addr + bias;
			c->bounds[n++] = sh.sh_addr + bias + sh.sh_size;
		}
	}
	/* (Tens of thousands of addresses in libc: a radix sort, not qsort's
	 * calls to cmp_u64().) */
	if (kiln_sort_by_u64(c->bounds, n, sizeof(*c->bounds), 0))
		qsort(c->bounds, n, sizeof(*c->bounds), cmp_u64);
	{
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (!k || c->bounds[k - 1] != c->bounds[i])
				c->bounds[k++] = c->bounds[i];
		n = k;
	}
	c->nbounds = n;
	c->name = calloc(n + 1, sizeof(*c->name));
	c->known = calloc(n + 1, 1);
	if (!c->name || !c->known)
		goto fail;
	return c;
fail:
	if (c) {
		free(c->bounds);
		free(c->name);
		free(c->known);
		free(c);
	}
	return NULL;
}

/* Collects md's function symbols by address, once; none on ENOMEM. */
static void aliases_build(struct mod *md)
{
	size_t n = 0;

	md->aliases_built = true;
	if (!md->tab_read)
		symtab_read(md);
	if (!md->tab)
		return;
	md->aliases = malloc(md->nby_addr * sizeof(*md->aliases) + 1);
	if (!md->aliases)
		return;
	/* (by_addr is in the order of addresses, and at one address in
	 * table order: symtab_read() sorted it stably.) */
	for (size_t i = 0; i < md->nby_addr; i++) {
		const struct symtab_ent *t = &md->tab[md->by_addr[i].ndx];
		const char *name = t->name;
		int type = GELF_ST_TYPE(t->info);
		int bind = GELF_ST_BIND(t->info);

		if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		md->aliases[n].addr = t->addr;
		md->aliases[n].name = name;
		md->aliases[n].rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
		n++;
	}
	md->naliases = n;
}

/* Whether alias x names a function better than y (see pick_alias). */
static bool better_alias(const struct alias *x, const struct alias *y)
{
	size_t ux = 0, uy = 0, lx = base_len(x->name), ly = base_len(y->name);
	int c;

	if (x->rank != y->rank)
		return x->rank < y->rank;
	while (x->name[ux] == '_')
		ux++;
	while (y->name[uy] == '_')
		uy++;
	if (ux != uy)
		return ux < uy;
	if (lx != ly)
		return lx < ly;
	c = strncmp(x->name, y->name, lx);
	return c ? c < 0 : strcmp(x->name, y->name) < 0;
}

/*
 * Of the function symbols at the address of `name` (a function that
 * starts at symaddr), the one kiln names it by, in every session alike,
 * whether the module's full symbol table (a separate debug file) or only
 * its dynamic one was found, and whatever order the linker wrote them in:
 * exported before local (GLOBAL, then WEAK), then the fewest leading
 * underscores, then the shortest, then the first in byte order.  libc's
 * write() is "write", not "__write", "__libc_write" or "__GI___write";
 * __libc_start_main is "__libc_start_main", not "__libc_start_main_impl".
 * GLOBAL before WEAK: getpid() is "__getpid" (GLOBAL; getpid is WEAK), as
 * perf names it, and the vDSO's clock_gettime is "__vdso_clock_gettime",
 * not its WEAK alias "clock_gettime", which would read as libc's calling
 * itself.  A linked file's .symtab makes hidden symbols LOCAL, so a
 * binding reads the same in .symtab and .dynsym: the same name whichever
 * table was found.
 */
static const struct alias *best_alias(struct mod *md, uint64_t symaddr)
{
	const struct alias *best = NULL;
	size_t lo = 0, hi;

	if (!md->aliases_built)
		aliases_build(md);
	hi = md->naliases;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (md->aliases[mid].addr < symaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < md->naliases && md->aliases[lo].addr == symaddr; lo++)
		if (!best || better_alias(&md->aliases[lo], best))
			best = &md->aliases[lo];
	return best;
}

static const char *pick_alias(struct mod *md, uint64_t symaddr,
			      const GElf_Sym *sym, const char *name)
{
	int type = GELF_ST_TYPE(sym->st_info);
	const struct alias *best;

	if (!name || (type != STT_FUNC && type != STT_GNU_IFUNC))
		return name;
	best = best_alias(md, symaddr);
	return best ? best->name : name;
}

/*
 * What sym_name() answers for addr, from md's own copy of the table, where
 * that answer does not depend on the order of libdwfl's search: true with
 * *name set (NULL: no symbol), false where libdwfl must be asked.
 *
 * libdwfl (__libdwfl_addrsym) searches the globals, then, when it found
 * no symbol with a size covering addr (and no global label sits at addr
 * itself), the locals.  Of the covering symbols it keeps the closest
 * start, and among those the table's order and the bindings decide: where
 * every covering symbol of the part searched starts at one address and
 * is a function, pick_alias() gives the same alias of them all.  Without
 * a covering symbol, it falls back to a label (a symbol without a size)
 * that starts at or after the end of every symbol below addr: where no
 * label starts at the highest start below addr, there is none, and no
 * name.
 */
static bool sym_fast(struct mod *md, uint64_t addr, const char **name)
{
	const struct alias *best;
	size_t lo = 0, hi = md->nby_addr;
	uint64_t gv = 0, lv = 0, top_end;
	bool gfound = false, lfound = false, gbad = false, lbad = false;
	bool glabel = false, label = false;

	if (!md->fast_ok)
		return false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (md->by_addr[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The end of the symbols at or below addr: a label there is the
	 * fallback's candidate. */
	top_end = lo ? md->by_addr[lo - 1].max_end : 0;
	/* Down from the last symbol at or below addr, while one may cover
	 * it (max_end), start at addr or start at top_end. */
	while (lo-- > 0) {
		const struct sym_by_addr *e = &md->by_addr[lo];
		const struct symtab_ent *t = &md->tab[e->ndx];
		int type = GELF_ST_TYPE(t->info);
		bool fn = type == STT_FUNC || type == STT_GNU_IFUNC;

		if (e->addr < addr && e->addr < top_end && e->max_end <= addr)
			break;
		if (!t->eligible)
			continue;
		if (!t->size) {
			label |= e->addr == top_end;
			glabel |= e->addr == addr && t->global_part;
			continue;
		}
		if (addr - e->addr >= t->size)
			continue;
		if (t->global_part) {
			gbad |= !fn || (gfound && gv != e->addr);
			gv = e->addr;
			gfound = true;
		} else {
			lbad |= !fn || (lfound && lv != e->addr);
			lv = e->addr;
			lfound = true;
		}
	}
	if (!gfound && !lfound) {
		if (label)
			return false;
		*name = NULL;
		return true;
	}
	if (gfound ? gbad : lbad || glabel)
		return false;
	best = best_alias(md, gfound ? gv : lv);
	if (!best)
		return false;
	*name = best->name;
	return true;
}

/*
 * The symbol name of addr in md: the symbol dwfl_module_addrinfo() finds,
 * or the alias of it that pick_alias() prefers.
 */
static const char *sym_name(struct mod *md, uint64_t addr)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	struct sym_cache *c;
	size_t lo = 0, hi;
	const char *name;

	if (!md->tab_read)
		symtab_read(md);
	if (!md->syms && ++md->lookups == SYM_CACHE_AFTER)
		md->syms = sym_cache_build(md);
	c = md->syms;
	if (!c) {
		if (sym_fast(md, addr, &name))
			return name;
		name = dwfl_module_addrinfo(md->dwmod, addr, &off, &sym, NULL,
					    NULL, NULL);
		return pick_alias(md, addr - off, &sym, name);
	}
	/* The interval: after the last bound at or below addr. */
	hi = c->nbounds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->bounds[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (c->known[lo])
		return c->name[lo];
	if (!sym_fast(md, addr, &name)) {
		name = dwfl_module_addrinfo(md->dwmod, addr, &off, &sym, NULL,
					    NULL, NULL);
		name = pick_alias(md, addr - off, &sym, name);
	}
	c->name[lo] = name;
	c->known[lo] = 1;
	return name;
}

/*
 * The name of a PLT stub, "memcmp@plt" as perf shows it: stubs have no
 * symbols; the i-th stub of .plt.sec (or of .plt, after its header)
 * jumps through the i-th relocation of .rela.plt, whose symbol names it.
 * NULL where addr is in no stub or the machine's layout is unknown.
 */
static const char *plt_name(struct kiln_sym *s, struct mod *md, uint64_t addr)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(md->dwmod, &bias);
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr plt = { 0 }, plt_sec = { 0 }, sh, rsh;
	GElf_Ehdr eh;
	size_t shstrndx, head, i;
	uint64_t a;
	bool have_plt = false, have_sec = false;

	if (!elf || !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	if (eh.e_machine == EM_X86_64 || eh.e_machine == EM_386)
		head = 16;
	else if (eh.e_machine == EM_AARCH64)
		head = 32;
	else
		return NULL;
	a = addr - bias;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".plt")) {
			plt = sh;
			have_plt = true;
		} else if (!strcmp(name, ".plt.sec")) {
			plt_sec = sh;
			have_sec = true;
		} else if (!strcmp(name, ".rela.plt") && sh.sh_type == SHT_RELA) {
			rela = scn;
			rsh = sh;
		}
	}
	if (!rela || !rsh.sh_entsize)
		return NULL;
	if (have_sec && a >= plt_sec.sh_addr && a < plt_sec.sh_addr + plt_sec.sh_size)
		i = (size_t)(a - plt_sec.sh_addr) / 16;
	else if (have_plt && a >= plt.sh_addr + head &&
		 a < plt.sh_addr + plt.sh_size && !have_sec)
		i = (size_t)(a - plt.sh_addr - head) / 16;
	else
		return NULL;
	if (i >= rsh.sh_size / rsh.sh_entsize)
		return NULL;
	{
		Elf_Data *d = elf_getdata(rela, NULL);
		Elf_Scn *symscn = elf_getscn(elf, rsh.sh_link);
		GElf_Shdr ssh;
		GElf_Rela r;
		GElf_Sym sym;
		Elf_Data *sd;
		const char *name;
		char buf[256];

		if (!d || !symscn || !gelf_getshdr(symscn, &ssh) ||
		    !gelf_getrela(d, (int)i, &r) || !GELF_R_SYM(r.r_info))
			return NULL;
		sd = elf_getdata(symscn, NULL);
		if (!sd || !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
			return NULL;
		name = elf_strptr(elf, ssh.sh_link, sym.st_name);
		if (!name || !*name)
			return NULL;
		snprintf(buf, sizeof(buf), "%s@plt", name);
		return intern(s, buf, strlen(buf));
	}
}

static int symbolize(struct kiln_sym *s, struct mod *md, uint64_t addr,
		     struct kiln_sym_info *info)
{
	struct kiln_sym_frame fr[MAX_FRAMES], *out;
	const char *symname;
	unsigned n = 0;
	int err;

	symname = sym_name(md, addr);
	if (symname && !*symname)
		symname = NULL;
	if (md->has_dwarf) {
		err = dwarf_frames(s, md, addr, symname, fr, &n);
		if (err)
			return err;
	}
	if (!n && symname) {
		/* Only the symbol table knows this address.  Symbol versions
		 * ("clock_gettime@@GLIBC_2.17") are no part of the name. */
		memset(fr, 0, sizeof(fr[0]));
		if ((err = set_symbol_names(s, fr, symname)))
			return err;
		n = 1;
	}
	if (!n && (symname = plt_name(s, md, addr))) {
		memset(fr, 0, sizeof(fr[0]));
		if ((err = set_names(s, fr, symname, NULL)))
			return err;
		n = 1;
	}
	if (!n)
		return 0;
	out = arena_alloc(s, n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	memcpy(out, fr, n * sizeof(*out));
	info->frames = out;
	info->nframes = n;
	return 0;
}

static int cmp_jit(const void *a, const void *b)
{
	const struct jit *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct jit *find_jit(struct kiln_sym *s, uint64_t addr)
{
	size_t lo = 0, hi = s->njits;

	if (!s->njits)
		return NULL;
	if (!s->jits_sorted) {
		qsort(s->jits, s->njits, sizeof(*s->jits), cmp_jit);
		s->jits_sorted = true;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->jits[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= s->jits[lo - 1].end)
		return NULL;
	return &s->jits[lo - 1];
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
		    (j = find_jit(s, addr))) {
			struct kiln_sym_frame *f = arena_alloc(s, sizeof(*f));

			if (!f)
				return -ENOMEM;
			memset(f, 0, sizeof(*f));
			if ((err = set_names(s, f, j->name, NULL)))
				return err;
			e->info.frames = f;
			e->info.nframes = 1;
			if (!e->info.module) {
				e->info.module = s->jit_module;
				e->info.file_offset = addr;
			}
		}
		e->njits = s->njits;
		*out = e->info;
		return 0;
	}
	memset(&info, 0, sizeof(info));
	if (map) {
		struct map *m = &s->maps[map - 1];

		err = resolve(s, map - 1);
		if (err)
			return err;
		m = &s->maps[map - 1];
		info.module = m->path;
		info.file_offset = addr - m->start + m->offset;
		if (m->mod >= 0) {
			struct mod *md = &s->mods[m->mod];

			info.build_id = md->build_id;
			info.has_dwarf = md->has_dwarf;
			err = symbolize(s, md, addr, &info);
			if (err)
				return err;
		}
	}
	if (!info.nframes && (j = find_jit(s, addr))) {
		struct kiln_sym_frame *f = arena_alloc(s, sizeof(*f));

		if (!f)
			return -ENOMEM;
		memset(f, 0, sizeof(*f));
		if ((err = set_names(s, f, j->name, NULL)))
			return err;
		info.frames = f;
		info.nframes = 1;
		if (!info.module) {
			info.module = s->jit_module;
			info.file_offset = addr;
		}
	}
	if (s->nentries == s->entries_alloc) {
		size_t n = s->entries_alloc ? s->entries_alloc * 2 : 256;
		struct entry *q = realloc(s->entries, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		s->entries = q;
		s->entries_alloc = n;
	}
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
	long map = find_map(s, addr);

	if (map < 0)
		return (int)map;
	return lookup_in(s, (uint32_t)map, addr, out);
}

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
	str = intern(s, c->p + *pos, n);
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

		if (add_map(from, m->path, strlen(m->path), m->start, m->end,
			    m->offset) < 0) {
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
		fr = arena_alloc(s, h.nframes * sizeof(*fr));
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

/* ---- JIT symbol maps ---- */

int kiln_sym_add_perfmap(struct kiln_sym *s, const char *text, size_t len,
			 struct kiln_diag *d)
{
	const char *p = text, *end = text + len;
	size_t lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q;
		uint64_t start, size;
		bool ok = true;
		struct jit *j;

		lineno++;
		q = kiln_scan_blank(p, le);
		while (le > q && (le[-1] == '\r' || le[-1] == ' '))
			le--;
		if (q == le) {
			p = (nl ? nl : end) + 1;
			continue;
		}
		if (le - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		start = kiln_scan_hex(&q, le, &ok);
		if (!ok || q == le || (*q != ' ' && *q != '\t'))
			return kiln_diag(d, "line %zu: expected \"START SIZE "
					 "name\" in hexadecimal", lineno);
		q = kiln_scan_blank(q, le);
		if (le - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		size = kiln_scan_hex(&q, le, &ok);
		if (!ok || q == le || (*q != ' ' && *q != '\t'))
			return kiln_diag(d, "line %zu: expected a hexadecimal "
					 "size and a name after the start",
					 lineno);
		q = kiln_scan_blank(q, le);
		if (!size || start + size < start)
			return kiln_diag(d, "line %zu: bad size 0x%" PRIx64,
					 lineno, size);
		if (s->njits == s->jits_alloc) {
			size_t n = s->jits_alloc ? s->jits_alloc * 2 : 64;
			struct jit *r = realloc(s->jits, n * sizeof(*r));

			if (!r)
				return -ENOMEM;
			s->jits = r;
			s->jits_alloc = n;
		}
		j = &s->jits[s->njits];
		j->start = start;
		j->end = start + size;
		j->name = intern(s, q, (size_t)(le - q));
		if (!j->name)
			return -ENOMEM;
		s->njits++;
		s->jits_sorted = false;
		p = (nl ? nl : end) + 1;
	}
	return 0;
}

int kiln_sym_load_perfmap(struct kiln_sym *s, int pid, struct kiln_diag *d)
{
	uint64_t off = 0;

	return kiln_sym_load_perfmap_from(s, pid, &off, d);
}

int kiln_sym_load_perfmap_from(struct kiln_sym *s, int pid, uint64_t *offset,
			       struct kiln_diag *d)
{
	char path[64], *text = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err;

	if (no_local)
		return 0;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	/* /tmp is everyone's: a FIFO or device there is not a JIT map. */
	fd = kiln_open_regular(path);
	if (fd == -EINVAL || fd == -EISDIR || fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	if (*offset && lseek(fd, (off_t)*offset, SEEK_SET) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	for (;;) {
		if (len == cap) {
			size_t c = cap ? cap * 2 : 65536;
			char *t = realloc(text, c);

			if (!t) {
				err = -ENOMEM;
				goto out;
			}
			text = t;
			cap = c;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	/* Only whole lines: a runtime may be writing the last one now. */
	while (len && text[len - 1] != '\n')
		len--;
	*offset += len;
	s->jit_module = interns(s, path);
	err = s->jit_module ? kiln_sym_add_perfmap(s, text, len, d) : -ENOMEM;
out:
	free(text);
	close(fd);
	return err;
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

		/* A mapping without a range (perf script gives none) cannot
		 * place its file in the address space. */
		if (!(is_file_path(file) || !strcmp(file, "[vdso]")) ||
		    m->limit <= m->start)
			continue;
		r = s->light ? same_map(s, file, m->start, m->limit, m->offset) : -1;
		if (r < 0)
			r = add_map(s, file, strlen(file), m->start, m->limit,
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
