/*
 * The symbolizer (symbolize stage): libdwfl sessions over an address space
 * described by file mappings, with a cache per address.  See symbolize.h
 * for the interface, symint.h for the files that make it, and
 * docs/symbols.md for the design.
 */
#include "symbolize/symbolize.h"

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
#include "symbolize/elfbias.h"
#include "symbolize/symint.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"
#include "util/buf.h"

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
	/* libdwfl holds it to dwfl_end(): see resolve(). */
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

/* ---- mappings ---- */

long ksym_add_map(struct kiln_sym *s, const char *path, size_t len,
		  uint64_t start, uint64_t end, uint64_t offset)
{
	struct map *m;
	const char *copy;

	if (end <= start)
		return -EINVAL;
	if (KILN_GROW(s->maps, s->maps_alloc, s->nmaps + 1, 32))
		return -ENOMEM;
	copy = ksym_intern(s, path, len);
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
	long r = ksym_add_map(s, path ? path : "", path ? strlen(path) : 0, start,
			      end, offset);

	return r < 0 ? (int)r : 0;
}

static int add_maps_entry(const struct kiln_maps_entry *e, void *ctx)
{
	struct kiln_sym *s = ctx;
	long r;

	if (e->perms[2] != 'x')
		return 0;
	r = ksym_add_map(s, e->path, e->pathlen, e->start, e->end, e->offset);
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
 * its frames then stay "[vdso]").  An fd, or -1.
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
 * The load bias of the file mapped by m (every mapping a session holds
 * is executable: kiln_sym_add_maps() keeps only those, and the profiles'
 * and perf's mappings are code); a mapping outside every segment is taken
 * to map offsets at their vaddrs.
 */
static bool elf_bias(Elf *elf, const struct map *m, uint64_t *bias)
{
	GElf_Ehdr ehdr;

	if (kiln_sym_elf_bias(elf, m->start, m->offset, bias))
		return true;
	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_type != ET_DYN)
		return false;
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
	md->build_id = ksym_intern(s, hex, (size_t)n * 2);
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
	if (KILN_GROW(s->mods, s->mods_alloc, s->nmods + 1, 16)) {
		close(fd);
		return -ENOMEM;
	}
	/* libdwfl reads the file through fd and closes it at dwfl_end();
	 * the file name it is given is where .gnu_debuglink files are
	 * sought.  With add_p_vaddr, the base given is the bias itself.
	 * Inside someone else's process (light), away from the numbers a
	 * host reopens after closing every fd (util/file.h). */
	if (s->light)
		fd = kiln_fd_raise(fd);
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
			struct kiln_sym_frame *f = ksym_arena_alloc(s, sizeof(*f));

			if (!f)
				return -ENOMEM;
			memset(f, 0, sizeof(*f));
			if ((err = ksym_set_names(s, f, j->name, NULL)))
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
	if (!info.nframes && (j = ksym_find_jit(s, addr))) {
		struct kiln_sym_frame *f = ksym_arena_alloc(s, sizeof(*f));

		if (!f)
			return -ENOMEM;
		memset(f, 0, sizeof(*f));
		if ((err = ksym_set_names(s, f, j->name, NULL)))
			return err;
		info.frames = f;
		info.nframes = 1;
		if (!info.module) {
			info.module = s->jit_module;
			info.file_offset = addr;
		}
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
	long map = find_map(s, addr);

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
