/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer's mappings and modules (symbolize stage): the address
 * space of a session (mappings added, found by address) and the files
 * behind them reported to libdwfl once, with their bias, build ID and
 * whether their DWARF is read.  See symint.h.
 */
#include "symbolize/symbolize.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/debugcache.h"
#include "symbolize/elfbias.h"
#include "symbolize/symint.h"
#include "util/file.h"
#include "util/maps.h"
#include "util/buf.h"

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
	m->shift = 0;
	s->order_valid = false;
	return (long)s->nmaps++;
}

/*
 * The session's mapping identical to this one, or -1: a light session
 * (the agent's) is reused for profile after profile of the same process,
 * whose mappings mostly stay; a mapping added twice would be reported to
 * libdwfl twice.  Linear: a process maps a few hundred files at most.
 */
long ksym_same_map(const struct kiln_sym *s, const char *path,
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
long ksym_find_map(struct kiln_sym *s, uint64_t addr)
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

bool ksym_is_file_path(const char *path)
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

/* Files reported to libdwfl by every session of the process. */
static unsigned long files_reported;

unsigned long kiln_sym_files_reported(void)
{
	return __atomic_load_n(&files_reported, __ATOMIC_RELAXED);
}

/* Reports the file of mapping mi to libdwfl once; sets maps[mi].mod. */
int ksym_resolve(struct kiln_sym *s, size_t mi)
{
	struct map *m = &s->maps[mi];
	Dwfl_Module *dwmod;
	uint64_t bias;
	Dwarf_Addr b;
	struct mod *md;
	char name[4096];
	GElf_Ehdr ehdr;
	Elf *elf;
	size_t i;
	bool ok, exec;
	int fd;

	if (m->mod != MOD_UNTRIED)
		return 0;
	m->mod = MOD_NONE;
	if (kiln_sym_no_local())
		return 0;
	/* One module per file: another mapping of it at another place
	 * (another part mapped again, another process's copy placed in a
	 * shared session) is looked up in the same module, through the ELF
	 * libdwfl holds: the file is not opened again. */
	for (i = 0; i < s->nmods; i++) {
		if (strcmp(s->mods[i].path, m->path))
			continue;
		elf = dwfl_module_getelf(s->mods[i].dwmod, &b);
		if (elf && elf_bias(elf, m, &bias)) {
			m->mod = (int)i;
			m->shift = bias - s->mods[i].bias;
		}
		return 0;
	}
	if (!strcmp(m->path, "[vdso]") && !s->root) {
		fd = open_own_vdso(m);
		snprintf(name, sizeof(name), "[vdso]");
	} else if (ksym_is_file_path(m->path)) {
		fd = open_map(s, m, name);
	} else {
		return 0;
	}
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ok = elf && elf_kind(elf) == ELF_K_ELF && elf_bias(elf, m, &bias);
	/* libdwfl places an ET_EXEC file where it was linked, whatever
	 * base it is given: a copy mapped elsewhere is shifted to it. */
	exec = ok && gelf_getehdr(elf, &ehdr) && ehdr.e_type == ET_EXEC;
	elf_end(elf);
	if (!ok) {
		close(fd);
		return 0;
	}
	m->shift = exec ? bias : 0;
	bias -= m->shift;
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
	__atomic_fetch_add(&files_reported, 1, __ATOMIC_RELAXED);
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
