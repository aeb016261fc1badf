/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compile unit and source line of an address (symbolize stage, see
 * symint.h): kiln's one way from an address to file:line, used by the
 * symbolizer's inline chains (dwarf.c) and by the disassembler (disasm.c).
 *
 * libdwfl (elfutils 0.188, Debian 12) finds an address's unit through
 * .debug_aranges alone: dwfl_module_addrdie() and dwfl_module_getsrc()
 * answer "address out of range" for every address of a file without that
 * section, which is clang's default (it emits .debug_aranges only with
 * -gdwarf-aranges; gcc always does).  Where libdwfl finds no unit, the
 * units' own ranges (DW_AT_low_pc/high_pc or DW_AT_ranges, DWARF 5
 * rnglists too) are read once into a table searched by address.  The line
 * then comes from the unit's line table (dwarf_getsrc_die()), which libdw
 * reads in DWARF 5 form too (0-based file table, directory 0 the compile
 * directory, DW_LNCT_path with a directory index).
 *
 * A file name libdw leaves relative is made absolute with the unit's
 * compile directory (ksym_cu_path()): DWARF 5 line tables name a file by
 * a directory entry that may itself be relative to entry 0, the compile
 * directory (`cc -g src/x.c` gives directory "src", file "x.c"; gcc 12
 * and clang 14 alike), and libdw 0.188 joins the two but not entry 0.
 * addr2line and llvm-symbolizer print such names absolute too.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symint.h"
#include "util/buf.h"

static int span_cmp(const void *a, const void *b)
{
	const struct ksym_cu_span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->hi > y->hi) - (x->hi < y->hi);
}

/* Every unit's address ranges into t, sorted by start; 0 or -ENOMEM. */
static int cutab_build(Dwfl_Module *mod, struct ksym_cutab *t)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias = 0;
	size_t alloc = 0;

	while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (kiln_array_grow((void **)&t->v, &alloc, t->n + 1,
					    sizeof(*t->v)))
				return -ENOMEM;
			t->v[t->n++] = (struct ksym_cu_span){ lo, hi, *cu };
		}
	}
	t->bias = bias;
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), span_cmp);
	return 0;
}

Dwarf_Die *ksym_cu_at(Dwfl_Module *mod, struct ksym_cutab *t,
		      Dwarf_Addr addr, Dwarf_Addr *bias)
{
	Dwarf_Die *die = dwfl_module_addrdie(mod, addr, bias);
	size_t lo = 0, hi;
	uint64_t pc;

	if (die)
		return die;
	if (!t->built) {
		t->built = true;
		if (cutab_build(mod, t)) {
			ksym_cutab_release(t);
			t->built = true;
			return NULL;
		}
	}
	pc = addr - t->bias;
	hi = t->n;
	/* The last span starting at or before pc: units' ranges do not
	 * overlap (one unit's may lie between another's, hence spans). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= t->v[lo - 1].hi)
		return NULL;
	*bias = t->bias;
	return &t->v[lo - 1].die;
}

const char *ksym_cu_path(Dwarf_Die *cu, const char *name, char *buf,
			 size_t len)
{
	Dwarf_Attribute a;
	const char *dir;
	int n;

	if (!name || name[0] == '/')
		return name;
	dir = dwarf_formstring(dwarf_attr_integrate(cu, DW_AT_comp_dir, &a));
	if (!dir || dir[0] != '/')
		return name;
	n = snprintf(buf, len, "%s%s%s", dir,
		     dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	return n > 0 && (size_t)n < len ? buf : name;
}

const char *ksym_cu_line(Dwarf_Die *cu, Dwarf_Addr pc, int *line, char *buf,
			 size_t len)
{
	Dwarf_Line *l = dwarf_getsrc_die(cu, pc);
	const char *file;

	*line = 0;
	if (!l || (file = dwarf_linesrc(l, NULL, NULL)) == NULL)
		return NULL;
	if (dwarf_lineno(l, line))
		*line = 0;
	return ksym_cu_path(cu, file, buf, len);
}

const char *ksym_src_at(Dwfl_Module *mod, struct ksym_cutab *t,
			Dwarf_Addr addr, int *line, char *buf, size_t len)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = ksym_cu_at(mod, t, addr, &bias);

	*line = 0;
	return cu ? ksym_cu_line(cu, addr - bias, line, buf, len) : NULL;
}

void ksym_cutab_release(struct ksym_cutab *t)
{
	free(t->v);
	*t = (struct ksym_cutab){ 0 };
}
