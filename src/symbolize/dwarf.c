/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DWARF for the symbolizer (symint.h): the functions of a compilation unit
 * indexed by address, and an address's inline chain as `eu-addr2line -i`
 * finds it.
 */
#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symint.h"
#include "util/buf.h"

/* ---- names from DWARF ---- */

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

static bool is_function(Dwarf_Die *die)
{
	int tag = dwarf_tag(die);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

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
int ksym_dwarf_frames(struct kiln_sym *s, struct mod *md, uint64_t addr,
		      const char *symname, struct kiln_sym_frame *fr,
		      unsigned *nfr)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = ksym_cu_at(md->dwmod, &md->cutab, addr, &bias);
	Dwarf_Die chain[MAX_FRAMES];
	struct cu_index *ix;
	Dwarf_Files *files = NULL;
	const char *file = NULL;
	/* Names made absolute (ksym_cu_path()): file's until it is interned
	 * in the next frame, a declaration's until it is interned. */
	char fbuf[PATH_MAX], dbuf[PATH_MAX];
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
	file = ksym_cu_line(cudie, addr - bias, &line, fbuf, sizeof(fbuf));
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
			if ((err = ksym_set_symbol_names(s, f, symname)))
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
			if ((err = ksym_set_names(s, f, link, plain)))
				break;
		}
		f->file = file ? ksym_interns(s, file) : NULL;
		f->line = line;
		df = ksym_cu_path(cudie, dwarf_decl_file(die), dbuf, sizeof(dbuf));
		f->func_file = df ? ksym_interns(s, df) : f->file;
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
			file = ksym_cu_path(cudie, dwarf_filesrc(files, v, NULL,
								 NULL),
					    fbuf, sizeof(fbuf));
		if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &v))
			line = (int)v;
	}
	*nfr = k;
	return err;
}

void ksym_dwarf_release(struct mod *md)
{
	ksym_cutab_release(&md->cutab);
	for (size_t j = 0; j < md->ncus; j++) {
		free(md->cus[j]->fns);
		free(md->cus[j]->ranges);
		free(md->cus[j]);
	}
	free(md->cus);
}
