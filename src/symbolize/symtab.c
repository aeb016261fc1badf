/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ELF symbol tables for the symbolizer (symint.h): which symbol names an
 * address, one name of several aliases by one rule, and PLT entries.
 */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symint.h"
#include "util/buf.h"
#include "util/sort.h"

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
	size_t ux = 0, uy = 0, lx = ksym_base_len(x->name), ly = ksym_base_len(y->name);
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
 * What ksym_sym_name() answers for addr, from md's own copy of the table, where
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
const char *ksym_sym_name(struct mod *md, uint64_t addr)
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
const char *ksym_plt_name(struct kiln_sym *s, struct mod *md, uint64_t addr)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(md->dwmod, &bias);
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr plt = { 0 }, plt_sec = { 0 }, sh, rsh = { 0 };
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
		return ksym_intern(s, buf, strlen(buf));
	}
}

void ksym_symtab_release(struct mod *md)
{
	free(md->aliases);
	free(md->tab);
	free(md->by_addr);
	if (md->syms) {
		free(md->syms->bounds);
		free(md->syms->name);
		free(md->syms->known);
		free(md->syms);
	}
}
