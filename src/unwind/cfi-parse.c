/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CFI unwinder's table builder (capture stage, normal context:
 * allocation allowed): reads a loaded object's .eh_frame_hdr and
 * .eh_frame straight from memory while dl_iterate_phdr's loader lock keeps
 * it mapped, runs every FDE's CFA program and keeps one 16-byte row per
 * change of rule, sorted by pc and indexed by bucket; for lazy tables,
 * copies the search table and builds single FDEs in place when unwinds
 * asked for them.  cfi.c calls it while it builds a table set; cfi-walk.c
 * only for kiln_cfi_set_build_now() (kcfi_build_now()).  This file parses
 * the CIEs and FDEs and collects the rows; cfi-cfa.c runs their CFA
 * programs (cfi-parse.h).  See cfiint.h and docs/unwinding.md.
 */
#include "unwind/cfiint.h"
#include "unwind/cfi-parse.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct fde_rows kcfi_fde_none;

/* Parses the CIE at p (inside [lo, hi)).  false if malformed. */
static bool parse_cie(const uint8_t *p, const uint8_t *lo, const uint8_t *hi,
		      struct cie *cie)
{
	struct rd r = { p, hi, false };
	uint64_t len = rd_uint(&r, 4), id, version;
	const char *aug;
	const uint8_t *end;

	memset(cie, 0, sizeof(*cie));
	cie->at = p;
	if (p < lo)
		return false;
	if (len == 0xffffffff)
		len = rd_uint(&r, 8);
	if (r.bad || len > (uint64_t)(hi - r.p))
		return false;
	end = r.p + len;
	r.end = end;
	id = rd_uint(&r, 4);
	version = rd_uint(&r, 1);
	if (r.bad || id != 0 || (version != 1 && version != 3 && version != 4))
		return false;
	aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (!rd_need(&r, 1))
		return false;
	r.p++;
	if (version == 4) {
		/* address_size, segment_selector_size */
		if (rd_uint(&r, 1) != sizeof(void *) || rd_uint(&r, 1) != 0)
			return false;
	}
	cie->code_align = rd_uleb(&r);
	cie->data_align = rd_sleb(&r);
	cie->ra_reg = version == 1 ? rd_uint(&r, 1) : rd_uleb(&r);
	cie->fde_enc = PE_absptr;
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		const uint8_t *aend;

		if (!rd_need(&r, alen))
			return false;
		aend = r.p + alen;
		cie->aug_z = true;
		/* Letters after an unknown one cannot be decoded: stop there. */
		for (const char *a = aug + 1; *a && strchr("RLPSB", *a); a++) {
			switch (*a) {
			case 'R': cie->fde_enc = (uint8_t)rd_uint(&r, 1); break;
			case 'L': (void)rd_uint(&r, 1); break;
			case 'P': {
				uint8_t enc = (uint8_t)rd_uint(&r, 1);
				/* The personality may be indirect: skip its bytes. */
				(void)rd_enc(&r, enc & 0x7f, 0);
				break;
			}
			case 'S': cie->signal = true; break;
			}
			if (r.bad || r.p > aend)
				return false;
		}
		r.p = aend;
	} else if (aug[0]) {
		return false;	/* e.g. "eh": obsolete, unparsable */
	}
	if (r.bad || !cie->code_align)
		return false;
	cie->insn = r.p;
	cie->insn_end = end;
	return true;
}

/* Module memory readable around .eh_frame, and where it starts. */
struct ehsrc {
	const uint8_t *lo, *hi;		/* the readable PT_LOAD */
	const uint8_t *eh_frame;
	uint64_t hdr;			/* datarel base */
};

/*
 * Adds the rows of the FDE at p.  Returns the FDE's end (the next record)
 * or NULL at the terminator or when the record is unreadable; a CIE is
 * skipped.  A malformed FDE is counted and skipped.
 */
static const uint8_t *parse_fde(struct build *b, const struct ehsrc *src,
				const uint8_t *p, struct cie *cie)
{
	struct rd r = { p, src->hi, false };
	uint64_t len = rd_uint(&r, 4), cie_off, pc_begin, pc_range, hi, loc;
	const uint8_t *end, *id_at, *cie_at;
	struct cfa_state init, s;
	struct rd ir;

	if (p < src->lo)
		return NULL;
	if (len == 0xffffffff)
		len = rd_uint(&r, 8);
	if (r.bad || len == 0 || len > (uint64_t)(src->hi - r.p))
		return NULL;
	end = r.p + len;
	r.end = end;
	id_at = r.p;
	cie_off = rd_uint(&r, 4);
	if (r.bad)
		return NULL;
	if (cie_off == 0)
		return end;				/* a CIE */
	if (cie_off > (uint64_t)(id_at - src->lo))
		goto skip;
	cie_at = id_at - cie_off;
	if (cie->at != cie_at && !parse_cie(cie_at, src->lo, src->hi, cie)) {
		cie->at = NULL;
		goto skip;
	}
	pc_begin = rd_enc(&r, cie->fde_enc, src->hdr);
	pc_range = rd_enc(&r, cie->fde_enc & 0x0f, 0);
	if (cie->aug_z) {
		uint64_t alen = rd_uleb(&r);

		if (!rd_need(&r, alen))
			goto skip;
		r.p += alen;
	}
	if (r.bad)
		goto skip;
	if (pc_range == 0)
		return end;
	/* Rows are 32-bit offsets from the bias. */
	if (pc_begin < b->bias || pc_begin - b->bias > UINT32_MAX ||
	    pc_range > UINT32_MAX - (pc_begin - b->bias))
		goto skip;
	hi = pc_begin + pc_range;

	/* Defaults: CFA unknown until defined, rbp unchanged, RA unknown. */
	memset(&init, 0, sizeof(init));
	init.cfa_how = CFA_LOST;
	init.fp.how = R_SAME;
	init.ra.how = R_LOST;
	ir = (struct rd){ cie->insn, cie->insn_end, false };
	loc = pc_begin;
	if (!kcfi_run_cfa(&ir, cie, &init, &init, NULL, &loc, hi, src->hdr))
		goto skip;
	s = init;
	if (!kcfi_run_cfa(&r, cie, &s, &init, b, &loc, hi, src->hdr)) {
		/* What ran stays; the rest of the FDE is unknown. */
		struct cfa_state lost = s;

		if (b->nomem)
			return NULL;
		lost.cfa_how = CFA_LOST;
		if (!kcfi_emit(b, &lost, false, loc, hi))
			return NULL;
		b->skipped++;
	} else if (!kcfi_emit(b, &s, cie->signal, loc, hi)) {
		return NULL;
	}
	/* The end of the FDE: no rule after it (unless an FDE starts there). */
	{
		struct cfi_row endr = { .pc = (uint32_t)(hi - b->bias),
					.kind = KILN_CFI_NONE };
		if (!push_row(b, &endr, 0))
			return NULL;
	}
	return end;
skip:
	b->skipped++;
	return end;
}

static int tmp_cmp(const void *a, const void *b)
{
	const struct tmp_row *x = a, *y = b;

	if (x->r.pc != y->r.pc)
		return x->r.pc < y->r.pc ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool same_rule(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->kind == b->kind && a->cfa_reg == b->cfa_reg &&
	       a->cfa_off == b->cfa_off && a->ra_off == b->ra_off &&
	       a->fp_off == b->fp_off && a->plt_at == b->plt_at;
}

/* Rows mostly come in order already (FDEs sorted by the linker): sorts
 * them only when they are not; the check costs one pass. */
static void sort_rows(struct build *b)
{
	for (size_t i = 1; i < b->n; i++) {
		if (tmp_cmp(&b->v[i - 1], &b->v[i]) > 0) {
			qsort(b->v, b->n, sizeof(*b->v), tmp_cmp);
			break;
		}
	}
}

/*
 * Copies the sorted rows of b into out (room for b->n), keeping the last
 * row of each pc (a rule beats the end of a previous FDE at the same pc)
 * and dropping rows that repeat their predecessor's rule; returns how
 * many it kept.
 */
static size_t compact_rows(const struct build *b, struct cfi_row *out)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++) {
		const struct cfi_row *r = &b->v[i].r;

		if (i + 1 < b->n && b->v[i + 1].r.pc == r->pc)
			continue;
		if (n && same_rule(&out[n - 1], r))
			continue;
		if (!n && r->kind == KILN_CFI_NONE)
			continue;
		out[n++] = *r;
	}
	return n;
}

/*
 * Sorts the collected rows, keeps the last row of each pc (a rule beats
 * the end of a previous FDE at the same pc), drops rows that repeat their
 * predecessor's rule, and moves them into mod.  false: out of memory.
 */
static bool finish_rows(struct build *b, struct cfi_mod *mod)
{
	size_t n = 0;

	if (!b->n)
		return true;
	sort_rows(b);
	mod->rows = malloc(b->n * sizeof(*mod->rows));
	if (!mod->rows)
		return false;
	n = compact_rows(b, mod->rows);
	mod->nrows = n;
	if (n < b->n) {
		struct cfi_row *v = realloc(mod->rows, (n ? n : 1) * sizeof(*v));
		if (v)
			mod->rows = v;
	}
	if (!n)
		return true;
	mod->nindex = ((mod->rows[n - 1].pc - mod->rows[0].pc) >> BUCKET_SHIFT) + 1;
	mod->index = malloc((mod->nindex + 1) * sizeof(*mod->index));
	if (!mod->index)
		return false;
	for (size_t bk = 0, i = 0; bk <= mod->nindex; bk++) {
		uint64_t at = mod->rows[0].pc + ((uint64_t)bk << BUCKET_SHIFT);

		while (i < n && mod->rows[i].pc < at)
			i++;
		mod->index[bk] = (uint32_t)i;
	}
	return true;
}

/* The PT_LOAD of info holding [addr, addr+1), or NULL. */
static const ElfW(Phdr) *load_of(const struct dl_phdr_info *info, uint64_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) &&
		    addr >= lo && addr - lo < ph->p_memsz)
			return ph;
	}
	return NULL;
}

/*
 * Finds the .eh_frame of a loaded object through its PT_GNU_EH_FRAME
 * segment (src), and the segment's binary search table: *tab, *count
 * entries of 8 bytes (0 when there is none usable).  false: no usable
 * .eh_frame_hdr.  Runs inside dl_iterate_phdr, so the object is mapped.
 */
static bool eh_source(const struct dl_phdr_info *info, struct ehsrc *src,
		      const uint8_t **tab, uint64_t *count)
{
	const ElfW(Phdr) *hdrph = NULL, *seg;
	struct rd r;
	uint8_t frame_enc, count_enc, table_enc;
	uint64_t eh_frame, n;

	*tab = NULL;
	*count = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdrph = &info->dlpi_phdr[i];
	if (!hdrph)
		return false;
	src->hdr = info->dlpi_addr + hdrph->p_vaddr;
	seg = load_of(info, src->hdr);
	if (!seg)
		return false;
	src->lo = (const uint8_t *)(uintptr_t)(info->dlpi_addr + seg->p_vaddr);
	src->hi = src->lo + seg->p_filesz;
	if (src->hdr + hdrph->p_memsz > (uint64_t)(uintptr_t)src->hi)
		return false;

	r = (struct rd){ (const uint8_t *)(uintptr_t)src->hdr,
			 (const uint8_t *)(uintptr_t)src->hdr + hdrph->p_memsz,
			 false };
	if (rd_uint(&r, 1) != 1)
		return false;
	frame_enc = (uint8_t)rd_uint(&r, 1);
	count_enc = (uint8_t)rd_uint(&r, 1);
	table_enc = (uint8_t)rd_uint(&r, 1);
	eh_frame = rd_enc(&r, frame_enc, src->hdr);
	if (r.bad)
		return false;
	/* .eh_frame is usually in the same segment; find its own if not. */
	seg = load_of(info, eh_frame);
	if (!seg)
		return false;
	src->lo = (const uint8_t *)(uintptr_t)(info->dlpi_addr + seg->p_vaddr);
	src->hi = src->lo + seg->p_filesz;
	src->eh_frame = (const uint8_t *)(uintptr_t)eh_frame;
	if (src->eh_frame >= src->hi)
		return false;

	n = count_enc == PE_omit ? 0 : rd_enc(&r, count_enc, src->hdr);
	if (!r.bad && table_enc == (PE_datarel | PE_sdata4) && n &&
	    n <= (uint64_t)(r.end - r.p) / 8) {
		*tab = r.p;
		*count = n;
	}
	return true;
}

/* The FDE at offset off from .eh_frame_hdr, or NULL if outside src. */
static const uint8_t *fde_at(const struct ehsrc *src, int32_t off)
{
	const uint8_t *at = (const uint8_t *)(uintptr_t)(src->hdr + (int64_t)off);

	return at < src->lo || at >= src->hi ? NULL : at;
}

/* The FDE that entry i of a search table points to, or NULL if outside. */
static const uint8_t *table_fde(const struct ehsrc *src, const uint8_t *tab,
				uint64_t i)
{
	int32_t off;

	memcpy(&off, tab + 8 * i + 4, 4);
	return fde_at(src, off);
}

bool kcfi_parse_module(const struct dl_phdr_info *info, struct cfi_mod *mod)
{
	struct build b = { .bias = info->dlpi_addr };
	struct ehsrc src;
	struct cie cie = { 0 };
	const uint8_t *tab;
	uint64_t count;
	bool ok = true;

	if (!eh_source(info, &src, &tab, &count))
		return true;
	if (count) {
		/* The binary search table lists every FDE. */
		for (uint64_t i = 0; i < count && ok; i++) {
			const uint8_t *at = table_fde(&src, tab, i);

			if (!at) {
				b.skipped++;
				continue;
			}
			if (!parse_fde(&b, &src, at, &cie) && b.nomem)
				ok = false;
		}
	} else {
		/* No table: walk .eh_frame up to its zero terminator. */
		const uint8_t *p = src.eh_frame;

		while (p && p < src.hi && ok) {
			p = parse_fde(&b, &src, p, &cie);
			if (b.nomem)
				ok = false;
		}
	}
	if (ok && !b.nomem)
		ok = finish_rows(&b, mod);
	else
		ok = false;
	mod->fdes_skipped = b.skipped;
	free(b.v);
	return ok;
}

bool kcfi_lazy_module(const struct dl_phdr_info *info, struct cfi_mod *mod)
{
	struct ehsrc src;
	const uint8_t *tab;
	uint64_t count, n = 0;

	if (!eh_source(info, &src, &tab, &count))
		return true;		/* no CFI at all */
	if (!count || count > UINT32_MAX) {
		mod->pending = true;
		return true;
	}
	mod->fdes = malloc(count * sizeof(*mod->fdes));
	if (!mod->fdes)
		return false;
	for (uint64_t i = 0; i < count; i++) {
		int32_t loc, at;
		uint64_t pc;

		memcpy(&loc, tab + 8 * i, 4);
		memcpy(&at, tab + 8 * i + 4, 4);
		pc = src.hdr + (uint64_t)(int64_t)loc;
		/* Rows are 32-bit offsets from the bias (parse_fde()). */
		if (pc < mod->bias || pc - mod->bias > UINT32_MAX) {
			mod->fdes_skipped++;
			continue;
		}
		mod->fdes[n].pc = (uint32_t)(pc - mod->bias);
		mod->fdes[n].at = at;
		n++;
	}
	mod->nfde = n;
	mod->fde_rows = calloc(n ? n : 1, sizeof(*mod->fde_rows));
	mod->fde_want = calloc((n + 63) / 64 + 1, sizeof(*mod->fde_want));
	return mod->fde_rows && mod->fde_want;
}

/* Builds the rows of lazy module m's FDE i (c->fde_lock held, m mapped). */
static void build_fde(struct cfi_mod *m, const struct ehsrc *src, size_t i)
{
	struct build b = { .bias = m->bias };
	struct cie cie = { 0 };
	const uint8_t *at = fde_at(src, m->fdes[i].at);
	struct fde_rows *fr = &kcfi_fde_none;
	size_t n;

	if (at)
		parse_fde(&b, src, at, &cie);
	else
		b.skipped++;
	if (b.nomem) {
		/* Not built: asked for again by the next handler that needs it. */
		free(b.v);
		return;
	}
	if (b.n) {
		fr = malloc(sizeof(*fr) + b.n * sizeof(fr->rows[0]));
		if (!fr) {
			free(b.v);
			return;
		}
		sort_rows(&b);
		n = compact_rows(&b, fr->rows);
		fr->n = (uint32_t)n;
		m->fde_nrows += n;
	}
	m->fdes_skipped += b.skipped;
	m->fdes_built++;
	free(b.v);
	atomic_store_explicit(&m->fde_rows[i], fr, memory_order_release);
}

/*
 * A lazy module with at most this many FDEs is built whole when a sample
 * first needs one of them: it is in use, and a deep stack through it
 * (an interpreter's C frames) would otherwise need a round of sample,
 * wake-up and build per function it passes through, its stacks cut
 * short meanwhile (CPython's library, about 5,000 FDEs, 3 ms to build:
 * stacks reached main after 0.3 s at 999 Hz, after seconds at 99 Hz).
 * Larger ones (node's 76,000) stay FDE by FDE: their rows would pass the
 * agent's memory bound; so does every library once WHOLE_BUDGET FDEs were
 * built whole (about 1.1 MB of rows for CPython's library, 0.7 MB for
 * libstdc++'s 4,900: the budget holds libc and two such libraries).
 */
#define WHOLE_FDES 8192
#define WHOLE_BUDGET 16384

void kcfi_build_wanted(struct kiln_cfi *c, const struct dl_phdr_info *info,
		       struct cfi_mod *m)
{
	struct ehsrc src;
	const uint8_t *tab;
	uint64_t count;
	bool whole;

	if (!eh_source(info, &src, &tab, &count))
		return;
	pthread_mutex_lock(&c->fde_lock);
	whole = !m->fdes_built && m->nfde <= WHOLE_FDES &&
		c->whole_fdes + m->nfde <= WHOLE_BUDGET;
	if (whole)
		c->whole_fdes += m->nfde;
	pthread_mutex_unlock(&c->fde_lock);
	for (size_t w = 0; w < (m->nfde + 63) / 64; w++) {
		uint64_t bits = atomic_exchange(&m->fde_want[w], 0);

		if (whole)
			bits = ~0ull;

		while (bits) {
			size_t i = w * 64 + (size_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			pthread_mutex_lock(&c->fde_lock);
			if (i < m->nfde && !atomic_load_explicit(&m->fde_rows[i],
								 memory_order_relaxed))
				build_fde(m, &src, i);
			pthread_mutex_unlock(&c->fde_lock);
		}
	}
}

struct now_arg {
	struct kiln_cfi *c;
	struct cfi_mod *m;
	size_t i;
};

/* dl_iterate_phdr callback of kcfi_build_now(): builds the FDE in m's object
 * if it is still loaded (the loader lock keeps it mapped meanwhile). */
static int now_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct now_arg *a = arg;
	struct cfi_mod *m = a->m;
	struct ehsrc src;
	const uint8_t *tab;
	uint64_t count;

	(void)size;
	if (!same_object(m, info))
		return 0;
	if (eh_source(info, &src, &tab, &count)) {
		pthread_mutex_lock(&a->c->fde_lock);
		if (!atomic_load_explicit(&m->fde_rows[a->i], memory_order_relaxed))
			build_fde(m, &src, a->i);
		pthread_mutex_unlock(&a->c->fde_lock);
	}
	return 1;
}

void kcfi_build_now(const struct cfi_set *set, const struct cfi_mod *m,
		    size_t i)
{
	struct now_arg a = { (struct kiln_cfi *)set->c, (struct cfi_mod *)m, i };

	dl_iterate_phdr(now_one, &a);
}
