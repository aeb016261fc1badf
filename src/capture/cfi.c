/*
 * In-process stack unwinding for the SIGPROF handler (capture stage): see
 * cfi.h and docs/unwinding.md.
 *
 * Two halves that share only immutable, published memory:
 *  - kiln_cfi_refresh() (a normal thread, allocation allowed): walks the
 *    loaded objects with dl_iterate_phdr and, for each new one, reads its
 *    .eh_frame_hdr / .eh_frame from memory while the loader lock keeps it
 *    mapped, runs every FDE's CFA program and keeps one 16-byte row per
 *    change of rule, sorted by pc (lazy tables: only the FDEs unwinds
 *    asked for, built in place).  A table set (modules, executable
 *    ranges) is published with an atomic pointer swap; the set it
 *    replaces is freed once the count of handlers inside the unwinder is
 *    seen at 0 (seq_cst; the argument is in docs/unwinding.md).
 *  - kiln_cfi_unwind() (the signal handler): binary searches the ranges
 *    and the rows, and reads the stack only 8-byte aligned inside the
 *    bounds it was given.  No module memory is ever read there (lazy
 *    modules' FDE tables are copies), so a library unloaded meanwhile
 *    cannot fault it.
 */
#include "capture/cfi.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CFI_DWARF 1	/* tables are built and used */
#else
#define CFI_DWARF 0	/* checked frame pointers only */
#endif

/* One row: the rule from pc (offset from the module's load bias) on. */
struct cfi_row {
	uint32_t pc;
	int32_t cfa_off;
	int16_t ra_off;
	int16_t fp_off;		/* 0: rbp unchanged; FP_LOST: unknown */
	uint8_t kind;		/* enum kiln_cfi_kind */
	uint8_t cfa_reg;
	uint8_t plt_at;
	uint8_t pad;
};
#define FP_LOST INT16_MIN
#define BUCKET_SHIFT 10		/* 1 KiB of code per index entry */

/* A loaded object; shared by the sets that contain it (refs). */
struct cfi_mod {
	uint64_t bias;
	const void *phdr;
	int phnum;
	char *name;
	struct cfi_row *rows;
	size_t nrows;
	/*
	 * index[b]: the first row with pc >= rows[0].pc + b * BUCKET, for b
	 * in [0, nindex]; narrows the binary search to one bucket.
	 */
	uint32_t *index;
	size_t nindex;
	size_t fdes_skipped;
	int refs;		/* sets holding it; changed under c->lock */
	/*
	 * Lazy tables (kiln_cfi_set_lazy()), for a module whose
	 * .eh_frame_hdr has a search table: the table is copied (fdes, by
	 * pc), and the rows of its i-th FDE are built only once a handler
	 * needed them: it finds fde_rows[i] NULL, sets bit i of fde_want and
	 * `wanted`, and walks that frame by frame pointers; the next refresh
	 * builds the wanted FDEs in place (or, with build_now, the cached
	 * unwinder at once; published with a release store, freed with the
	 * module).  Without a search table the whole module
	 * is `pending`: the next refresh after a want builds all of it into
	 * a new module object.
	 */
	struct cfi_fde *fdes;
	size_t nfde;
	_Atomic(struct fde_rows *) *fde_rows;
	_Atomic uint64_t *fde_want;
	size_t fdes_built, fde_nrows;	/* under c->fde_lock */
	bool pending;
	_Atomic bool wanted;
};

/* An entry of a copied .eh_frame_hdr search table. */
struct cfi_fde {
	uint32_t pc;			/* its first pc, from the bias */
	int32_t at;			/* the FDE, from .eh_frame_hdr */
};

/* The rows of one FDE, the last one its end (KILN_CFI_NONE). */
struct fde_rows {
	uint32_t n;
	struct cfi_row rows[];
};

/* fde_rows[i] of an FDE built without usable rows. */
static struct fde_rows fde_none;

/* An executable PT_LOAD segment [lo, hi) of mod. */
struct cfi_range {
	uint64_t lo, hi;
	const struct cfi_mod *mod;
};

/* An immutable table set, as the handler sees it. */
struct cfi_set {
	struct cfi_range *ranges;	/* sorted by lo, disjoint */
	size_t nranges;
	struct cfi_mod **mods;
	size_t nmods;
	struct cfi_set *next;		/* c->retired list */
	uint64_t gen;			/* c->generation when published */
	const struct kiln_cfi *c;	/* its owner (outlives it) */
};

/*
 * Handlers inside the unwinder, counted in stripes picked by thread so
 * that threads unwinding at once (malloc hooks on every allocation) do
 * not fight over one cache line; reclaim() reads them all.
 */
#define INSIDE_STRIPES 16
struct inside {
	_Alignas(64) atomic_long n;
};

struct kiln_cfi {
	_Atomic(struct cfi_set *) cur;
	struct inside inside[INSIDE_STRIPES];
	pthread_mutex_t lock;		/* serializes refresh, stats, free */
	struct cfi_set *retired;	/* replaced, not yet freed */
	size_t nretired;
	unsigned long long adds, subs;	/* dl_iterate_phdr counters seen */
	bool scanned;
	bool lazy;			/* build a module's rows when needed */
	bool build_now;			/* ... by the cached unwinder itself */
	void (*wake)(void *);		/* a lazy module was first wanted */
	uint64_t skip_lo, skip_hi;	/* return addresses never stored */
	void *wake_arg;
	uint64_t generation;
	/* Serializes building lazy modules' FDEs (taken inside
	 * dl_iterate_phdr, never around it: after the loader lock). */
	pthread_mutex_t fde_lock;
};

/* ---------------------------------------------------------------- */
/* Reading .eh_frame (refresh side)                                  */

/* A bounds-checked cursor over module memory. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static bool rd_need(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	return true;
}

static uint64_t rd_uint(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (!rd_need(r, n))
		return 0;
	/* Little or big endian: the host's, as the object was loaded here. */
	switch (n) {
	case 1: v = r->p[0]; break;
	case 2: { uint16_t x; memcpy(&x, r->p, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, r->p, 4); v = x; break; }
	case 8: memcpy(&v, r->p, 8); break;
	}
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		if (!rd_need(r, 1))
			return 0;
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (!rd_need(r, 1))
			return 0;
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

enum {
	PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02,
	PE_udata4 = 0x03, PE_udata8 = 0x04, PE_sleb128 = 0x09,
	PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
	PE_pcrel = 0x10, PE_datarel = 0x30, PE_indirect = 0x80,
	PE_omit = 0xff,
};

/*
 * Reads a pointer in DW_EH_PE encoding enc.  pcrel is relative to the
 * field's own (runtime) address, datarel to `data` (.eh_frame_hdr).
 * textrel, funcrel, aligned and indirect are not used by eh_frame
 * producers on Linux and make the read fail.
 */
static uint64_t rd_enc(struct rd *r, uint8_t enc, uint64_t data)
{
	uint64_t at = (uint64_t)(uintptr_t)r->p, v;

	if (enc == PE_omit) {
		r->bad = true;
		return 0;
	}
	switch (enc & 0x0f) {
	case PE_absptr: v = rd_uint(r, sizeof(void *)); break;
	case PE_uleb128: v = rd_uleb(r); break;
	case PE_udata2: v = rd_uint(r, 2); break;
	case PE_udata4: v = rd_uint(r, 4); break;
	case PE_udata8: v = rd_uint(r, 8); break;
	case PE_sleb128: v = (uint64_t)rd_sleb(r); break;
	case PE_sdata2: v = (uint64_t)(int64_t)(int16_t)rd_uint(r, 2); break;
	case PE_sdata4: v = (uint64_t)(int64_t)(int32_t)rd_uint(r, 4); break;
	case PE_sdata8: v = rd_uint(r, 8); break;
	default: r->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0: break;
	case PE_pcrel: v += at; break;
	case PE_datarel: v += data; break;
	default: r->bad = true; return 0;
	}
	if (enc & PE_indirect)
		r->bad = true;
	return v;
}

/* What a CIE says about the FDEs that use it. */
struct cie {
	const uint8_t *at;		/* cache key */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool aug_z, signal;
	const uint8_t *insn, *insn_end;
};

/* A register rule we track (only rbp and the return address matter). */
enum { R_SAME, R_OFFSET, R_UNDEF, R_LOST };
struct reg_rule {
	uint8_t how;
	int64_t off;
};

/* The CFA-program state: one row's worth. */
struct cfa_state {
	uint8_t cfa_how;		/* CFA_REG, CFA_PLT, CFA_LOST */
	uint64_t cfa_reg;
	int64_t cfa_off;
	uint8_t plt_at;
	struct reg_rule fp, ra;
};
enum { CFA_REG, CFA_PLT, CFA_LOST };

#define STATE_STACK 16

/* Rows being collected for one module, with an order for ties. */
struct tmp_row {
	struct cfi_row r;
	uint32_t seq;
	uint8_t prio;			/* 0: end of an FDE, 1: a rule */
};

struct build {
	struct tmp_row *v;
	size_t n, cap;
	uint64_t bias;
	size_t skipped;
	bool nomem;
};

static bool push_row(struct build *b, const struct cfi_row *r, uint8_t prio)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		struct tmp_row *v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			b->nomem = true;
			return false;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n].r = *r;
	b->v[b->n].seq = (uint32_t)b->n;
	b->v[b->n].prio = prio;
	b->n++;
	return true;
}

static bool fits16(int64_t v)
{
	return v > INT16_MIN && v <= INT16_MAX;
}

/* Turns the state into the row the handler applies. */
static struct cfi_row make_row(const struct cfa_state *s, bool signal)
{
	struct cfi_row r = { .kind = KILN_CFI_UNKNOWN };

	if (signal) {
		r.kind = KILN_CFI_SIGNAL;
		return r;
	}
	if (s->ra.how == R_UNDEF) {
		r.kind = KILN_CFI_OUTERMOST;
		return r;
	}
	if (s->cfa_how == CFA_PLT) {
		/* The linker's .plt expression: RA at CFA - 8, rbp untouched. */
		r.kind = KILN_CFI_PLT;
		r.cfa_reg = KILN_CFI_REG_RSP;
		r.cfa_off = (int32_t)s->cfa_off;
		r.ra_off = -8;
		r.plt_at = s->plt_at;
		return r;
	}
	if (s->cfa_how != CFA_REG || s->ra.how != R_OFFSET ||
	    (s->cfa_reg != KILN_CFI_REG_RSP && s->cfa_reg != KILN_CFI_REG_RBP) ||
	    s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX ||
	    !fits16(s->ra.off))
		return r;
	r.kind = KILN_CFI_RULE;
	r.cfa_reg = (uint8_t)s->cfa_reg;
	r.cfa_off = (int32_t)s->cfa_off;
	r.ra_off = (int16_t)s->ra.off;
	if (s->fp.how == R_OFFSET && fits16(s->fp.off) && s->fp.off)
		r.fp_off = (int16_t)s->fp.off;
	else if (s->fp.how == R_SAME)
		r.fp_off = 0;
	else
		r.fp_off = FP_LOST;
	return r;
}

/* Adds the row of state s at absolute location loc, inside [lo, hi). */
static bool emit(struct build *b, const struct cfa_state *s, bool signal,
		 uint64_t loc, uint64_t hi)
{
	struct cfi_row r;

	if (loc >= hi)
		return true;
	r = make_row(s, signal);
	r.pc = (uint32_t)(loc - b->bias);
	return push_row(b, &r, 1);
}

/* Recognizes ld's .plt CFA expression (see docs/unwinding.md). */
static bool plt_expr(const uint8_t *p, uint64_t len, uint8_t *at)
{
	static const uint8_t pat[] = {
		0x77, 0x08,		/* DW_OP_breg7 (rsp) 8 */
		0x80, 0x00,		/* DW_OP_breg16 (rip) 0 */
		0x3f, 0x1a,		/* DW_OP_lit15, DW_OP_and */
		0x00,			/* DW_OP_lit<N> (N = 10 or 11) */
		0x2a,			/* DW_OP_ge */
		0x33, 0x24, 0x22,	/* DW_OP_lit3, DW_OP_shl, DW_OP_plus */
	};

	if (len != sizeof(pat))
		return false;
	for (size_t i = 0; i < sizeof(pat); i++)
		if (i != 6 && p[i] != pat[i])
			return false;
	if (p[6] < 0x30 || p[6] > 0x3f)
		return false;
	*at = p[6] - 0x30;
	return true;
}

enum {
	CFA_advance_loc = 0x40, CFA_offset = 0x80, CFA_restore = 0xc0,
	CFA_nop = 0x00, CFA_set_loc = 0x01, CFA_advance_loc1 = 0x02,
	CFA_advance_loc2 = 0x03, CFA_advance_loc4 = 0x04,
	CFA_offset_extended = 0x05, CFA_restore_extended = 0x06,
	CFA_undefined = 0x07, CFA_same_value = 0x08, CFA_register = 0x09,
	CFA_remember_state = 0x0a, CFA_restore_state = 0x0b,
	CFA_def_cfa = 0x0c, CFA_def_cfa_register = 0x0d,
	CFA_def_cfa_offset = 0x0e, CFA_def_cfa_expression = 0x0f,
	CFA_expression = 0x10, CFA_offset_extended_sf = 0x11,
	CFA_def_cfa_sf = 0x12, CFA_def_cfa_offset_sf = 0x13,
	CFA_val_offset = 0x14, CFA_val_offset_sf = 0x15,
	CFA_val_expression = 0x16, CFA_GNU_args_size = 0x2e,
	CFA_GNU_negative_offset_extended = 0x2f,
};

/* The rule of register reg in s (NULL: a register we do not track). */
static struct reg_rule *rule_of(struct cfa_state *s, const struct cie *cie,
				uint64_t reg)
{
	if (reg == KILN_CFI_REG_RBP)
		return &s->fp;
	if (reg == cie->ra_reg)
		return &s->ra;
	return NULL;
}

/*
 * Runs a CFA program over s.  With b (an FDE's program) rows are emitted
 * at each advance and loc moves; without it (the CIE's initial
 * instructions) no location may change.  init is the state after the
 * CIE's program (DW_CFA_restore).  false: the program is malformed or
 * uses what we do not know; the caller ends the FDE's rows there.
 */
static bool run_cfa(struct rd *r, const struct cie *cie, struct cfa_state *s,
		    const struct cfa_state *init, struct build *b,
		    uint64_t *loc, uint64_t hi, uint64_t data)
{
	struct cfa_state stack[STATE_STACK];
	int depth = 0;

	while (r->p < r->end && !r->bad) {
		uint8_t op = (uint8_t)rd_uint(r, 1), low = op & 0x3f;
		uint64_t reg, delta = 0, newloc;
		int64_t off;
		struct reg_rule *rr;
		bool advance = false;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			delta = low * cie->code_align;
			advance = true;
			break;
		case CFA_offset:
			off = (int64_t)rd_uleb(r) * cie->data_align;
			if ((rr = rule_of(s, cie, low)))
				*rr = (struct reg_rule){ R_OFFSET, off };
			break;
		case CFA_restore:
			if ((rr = rule_of(s, cie, low)))
				*rr = *rule_of((struct cfa_state *)init, cie, low);
			break;
		default:
			switch (op) {
			case CFA_nop:
				break;
			case CFA_set_loc:
				newloc = rd_enc(r, cie->fde_enc, data);
				if (!b || r->bad || newloc < *loc)
					return false;
				delta = newloc - *loc;
				advance = true;
				break;
			case CFA_advance_loc1:
				delta = rd_uint(r, 1) * cie->code_align;
				advance = true;
				break;
			case CFA_advance_loc2:
				delta = rd_uint(r, 2) * cie->code_align;
				advance = true;
				break;
			case CFA_advance_loc4:
				delta = rd_uint(r, 4) * cie->code_align;
				advance = true;
				break;
			case CFA_offset_extended:
				reg = rd_uleb(r);
				off = (int64_t)rd_uleb(r) * cie->data_align;
				if ((rr = rule_of(s, cie, reg)))
					*rr = (struct reg_rule){ R_OFFSET, off };
				break;
			case CFA_offset_extended_sf:
				reg = rd_uleb(r);
				off = rd_sleb(r) * cie->data_align;
				if ((rr = rule_of(s, cie, reg)))
					*rr = (struct reg_rule){ R_OFFSET, off };
				break;
			case CFA_GNU_negative_offset_extended:
				reg = rd_uleb(r);
				off = -(int64_t)rd_uleb(r) * cie->data_align;
				if ((rr = rule_of(s, cie, reg)))
					*rr = (struct reg_rule){ R_OFFSET, off };
				break;
			case CFA_restore_extended:
				reg = rd_uleb(r);
				if ((rr = rule_of(s, cie, reg)))
					*rr = *rule_of((struct cfa_state *)init,
						       cie, reg);
				break;
			case CFA_undefined:
				reg = rd_uleb(r);
				if ((rr = rule_of(s, cie, reg)))
					rr->how = (rr == &s->ra) ? R_UNDEF
								  : R_LOST;
				break;
			case CFA_same_value:
				reg = rd_uleb(r);
				if ((rr = rule_of(s, cie, reg)))
					rr->how = R_SAME;
				break;
			case CFA_register:
				reg = rd_uleb(r);
				(void)rd_uleb(r);
				if ((rr = rule_of(s, cie, reg)))
					rr->how = R_LOST;
				break;
			case CFA_val_offset:
			case CFA_val_offset_sf:
				reg = rd_uleb(r);
				if (op == CFA_val_offset)
					(void)rd_uleb(r);
				else
					(void)rd_sleb(r);
				if ((rr = rule_of(s, cie, reg)))
					rr->how = R_LOST;
				break;
			case CFA_expression:
			case CFA_val_expression: {
				uint64_t len;

				reg = rd_uleb(r);
				len = rd_uleb(r);
				if (!rd_need(r, len))
					return false;
				r->p += len;
				if ((rr = rule_of(s, cie, reg)))
					rr->how = R_LOST;
				break;
			}
			case CFA_remember_state:
				if (depth == STATE_STACK)
					return false;
				stack[depth++] = *s;
				break;
			case CFA_restore_state:
				if (!depth)
					return false;
				/* The CFA and register rules both come back. */
				*s = stack[--depth];
				break;
			case CFA_def_cfa:
				s->cfa_reg = rd_uleb(r);
				s->cfa_off = (int64_t)rd_uleb(r);
				s->cfa_how = CFA_REG;
				break;
			case CFA_def_cfa_sf:
				s->cfa_reg = rd_uleb(r);
				s->cfa_off = rd_sleb(r) * cie->data_align;
				s->cfa_how = CFA_REG;
				break;
			case CFA_def_cfa_register:
				s->cfa_reg = rd_uleb(r);
				if (s->cfa_how == CFA_PLT)
					s->cfa_how = CFA_LOST;
				break;
			case CFA_def_cfa_offset:
				s->cfa_off = (int64_t)rd_uleb(r);
				if (s->cfa_how == CFA_PLT)
					s->cfa_how = CFA_LOST;
				break;
			case CFA_def_cfa_offset_sf:
				s->cfa_off = rd_sleb(r) * cie->data_align;
				if (s->cfa_how == CFA_PLT)
					s->cfa_how = CFA_LOST;
				break;
			case CFA_def_cfa_expression: {
				uint64_t len = rd_uleb(r);

				if (!rd_need(r, len))
					return false;
				if (plt_expr(r->p, len, &s->plt_at)) {
					s->cfa_how = CFA_PLT;
					s->cfa_off = 8;
				} else {
					s->cfa_how = CFA_LOST;
				}
				r->p += len;
				break;
			}
			case CFA_GNU_args_size:
				(void)rd_uleb(r);
				break;
			default:
				return false;	/* an opcode we do not know */
			}
		}
		if (r->bad)
			return false;
		if (advance) {
			if (!b)
				return false;	/* no advance in a CIE */
			if (!emit(b, s, cie->signal, *loc, hi))
				return false;
			if (delta >= hi - *loc)
				return true;	/* past the FDE: done */
			*loc += delta;
		}
	}
	return !r->bad;
}

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
	if (!run_cfa(&ir, cie, &init, &init, NULL, &loc, hi, src->hdr))
		goto skip;
	s = init;
	if (!run_cfa(&r, cie, &s, &init, b, &loc, hi, src->hdr)) {
		/* What ran stays; the rest of the FDE is unknown. */
		struct cfa_state lost = s;

		if (b->nomem)
			return NULL;
		lost.cfa_how = CFA_LOST;
		if (!emit(b, &lost, false, loc, hi))
			return NULL;
		b->skipped++;
	} else if (!emit(b, &s, cie->signal, loc, hi)) {
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

/*
 * Builds the rows of a loaded object from its PT_GNU_EH_FRAME segment.
 * Runs inside dl_iterate_phdr, so the object stays mapped.  An object
 * without (usable) .eh_frame_hdr simply gets no rows.  false: no memory.
 */
static bool parse_module(const struct dl_phdr_info *info, struct cfi_mod *mod)
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

/*
 * Sets up a lazy module: its search table copied (the handler may not
 * read module memory), no rows yet; without a table the whole module
 * waits (pending).  false: no memory.
 */
static bool lazy_module(const struct dl_phdr_info *info, struct cfi_mod *mod)
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
	struct fde_rows *fr = &fde_none;
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

/* Builds the FDEs handlers asked for in lazy module m (c->lock held,
 * inside dl_iterate_phdr with m's object as info). */
static void build_wanted(struct kiln_cfi *c, const struct dl_phdr_info *info,
			 struct cfi_mod *m)
{
	struct ehsrc src;
	const uint8_t *tab;
	uint64_t count;

	if (!eh_source(info, &src, &tab, &count))
		return;
	for (size_t w = 0; w < (m->nfde + 63) / 64; w++) {
		uint64_t bits = atomic_exchange(&m->fde_want[w], 0);

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

/* ---------------------------------------------------------------- */
/* Table sets (refresh side)                                         */

/* Whether m is the object info describes: the same bias, program
 * headers and name (another object may reuse an unloaded one's address). */
static bool same_object(const struct cfi_mod *m, const struct dl_phdr_info *info)
{
	return m->bias == info->dlpi_addr && m->phdr == info->dlpi_phdr &&
	       m->phnum == info->dlpi_phnum &&
	       !strcmp(m->name, info->dlpi_name ? info->dlpi_name : "");
}

static void mod_put(struct cfi_mod *m)
{
	if (m && --m->refs == 0) {
		for (size_t i = 0; m->fde_rows && i < m->nfde; i++) {
			struct fde_rows *fr = atomic_load(&m->fde_rows[i]);

			if (fr != &fde_none)
				free(fr);
		}
		free(m->fdes);
		free(m->fde_rows);
		free(m->fde_want);
		free(m->rows);
		free(m->index);
		free(m->name);
		free(m);
	}
}

static void set_free(struct cfi_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++)
		mod_put(s->mods[i]);
	free(s->mods);
	free(s->ranges);
	free(s);
}

/* Frees the replaced sets if no handler is inside the unwinder now. */
static void reclaim(struct kiln_cfi *c)
{
	/*
	 * seq_cst pairs with the handler's increment-then-load: a handler
	 * that still reads a retired set incremented its stripe of `inside`
	 * before our swap, so we cannot read 0 there until it has left; one
	 * that increments after we read its stripe loads the new set.
	 */
	int i;

	if (!c->retired)
		return;
	for (i = 0; i < INSIDE_STRIPES; i++)
		if (atomic_load(&c->inside[i].n) != 0)
			return;
	while (c->retired) {
		struct cfi_set *s = c->retired;

		c->retired = s->next;
		set_free(s);
	}
	c->nretired = 0;
}

struct scan {
	struct kiln_cfi *c;
	const struct cfi_set *old;
	struct cfi_set *set;
	size_t cap_mods, cap_ranges;
	bool unchanged, nomem;
	bool force;		/* wanted modules: scan even if nothing moved */
};

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t ncap = *cap ? 2 * *cap : 32;
	void *nv = realloc(*v, ncap * size);
	if (!nv)
		return false;
	*v = nv;
	*cap = ncap;
	return true;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	struct cfi_set *set = sc->set;
	struct cfi_mod *mod = NULL;
	bool wanted = false;	/* a lazy module a handler needed */
	bool lazy;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	bool counters = size >= offsetof(struct dl_phdr_info, dlpi_subs) +
				sizeof(info->dlpi_subs);

	if (counters && !set->nmods && sc->c->scanned && !sc->force &&
	    info->dlpi_adds == sc->c->adds && info->dlpi_subs == sc->c->subs) {
		sc->unchanged = true;
		return 1;
	}
	if (counters && !set->nmods) {
		sc->c->adds = info->dlpi_adds;
		sc->c->subs = info->dlpi_subs;
	}
	/* Same object as before: the same bias, headers and name. */
	for (size_t i = 0; sc->old && i < sc->old->nmods; i++) {
		struct cfi_mod *m = sc->old->mods[i];

		if (same_object(m, info)) {
			/* A lazy module a handler needed: built anew below. */
			wanted = m->pending && atomic_load(&m->wanted);
			if (!wanted)
				mod = m;
			break;
		}
	}
	if (!grow((void **)&set->mods, &sc->cap_mods, set->nmods,
		  sizeof(*set->mods)))
		goto nomem;
	if (mod) {
		mod->refs++;
	} else {
		mod = calloc(1, sizeof(*mod));
		if (!mod)
			goto nomem;
		mod->bias = info->dlpi_addr;
		mod->phdr = info->dlpi_phdr;
		mod->phnum = info->dlpi_phnum;
		mod->refs = 1;
		mod->name = strdup(name);
		/* Lazy: rows only for a module a handler asked for, and for
		 * the program itself (the first object), where most samples
		 * land from the start. */
		lazy = CFI_DWARF && sc->c->lazy && set->nmods > 0 && !wanted;
		if (!mod->name ||
		    (lazy && !lazy_module(info, mod)) ||
		    (CFI_DWARF && !lazy && !parse_module(info, mod))) {
			mod_put(mod);
			goto nomem;
		}
	}
	set->mods[set->nmods++] = mod;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		if (!grow((void **)&set->ranges, &sc->cap_ranges, set->nranges,
			  sizeof(*set->ranges)))
			goto nomem;
		set->ranges[set->nranges++] = (struct cfi_range){
			.lo = info->dlpi_addr + ph->p_vaddr,
			.hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
			.mod = mod,
		};
	}
	return 0;
nomem:
	sc->nomem = true;
	return 1;
}

static int range_cmp(const void *a, const void *b)
{
	const struct cfi_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct kiln_cfi *kiln_cfi_new(void)
{
	struct kiln_cfi *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	atomic_init(&c->cur, NULL);
	for (int i = 0; i < INSIDE_STRIPES; i++)
		atomic_init(&c->inside[i].n, 0);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->fde_lock, NULL);
	return c;
}

void kiln_cfi_free(struct kiln_cfi *c)
{
	if (!c)
		return;
	set_free(atomic_exchange(&c->cur, NULL));
	while (c->retired) {
		struct cfi_set *s = c->retired;

		c->retired = s->next;
		set_free(s);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->fde_lock);
	free(c);
}

/* Whether a handler asked for the rows of a whole pending module
 * (fdes: or for some FDEs of a lazy one). */
static bool wanted_any(const struct cfi_set *s, bool fdes)
{
	for (size_t i = 0; s && i < s->nmods; i++)
		if ((s->mods[i]->pending || (fdes && s->mods[i]->fde_rows)) &&
		    atomic_load(&s->mods[i]->wanted))
			return true;
	return false;
}

/* dl_iterate_phdr callback: builds the wanted FDEs of the modules of the
 * set given that are still loaded (the loader lock keeps them so). */
static int build_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct cfi_set *set = arg;
	struct kiln_cfi *c = (struct kiln_cfi *)set->c;

	(void)size;
	for (size_t i = 0; i < set->nmods; i++) {
		struct cfi_mod *m = set->mods[i];

		if (m->fde_rows && same_object(m, info) &&
		    atomic_exchange(&m->wanted, false)) {
			build_wanted(c, info, m);
			break;
		}
	}
	return 0;
}

void kiln_cfi_set_lazy(struct kiln_cfi *c, bool lazy, void (*wake)(void *),
		       void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->lazy = lazy;
	c->wake = wake;
	c->wake_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

void kiln_cfi_fork_child(struct kiln_cfi *c)
{
	/* A thread of the parent may have been building an FDE: it is not
	 * in the child, and its FDE, never published, is built again. */
	pthread_mutex_init(&c->fde_lock, NULL);
}

void kiln_cfi_set_skip(struct kiln_cfi *c, uint64_t lo, uint64_t hi)
{
	c->skip_lo = lo;
	c->skip_hi = hi;
}

void kiln_cfi_set_build_now(struct kiln_cfi *c, bool now)
{
	pthread_mutex_lock(&c->lock);
	c->build_now = now;
	pthread_mutex_unlock(&c->lock);
}

bool kiln_cfi_wanted(struct kiln_cfi *c)
{
	bool w;

	pthread_mutex_lock(&c->lock);
	w = wanted_any(atomic_load(&c->cur), true);
	pthread_mutex_unlock(&c->lock);
	return w;
}

int kiln_cfi_refresh(struct kiln_cfi *c)
{
	struct scan sc = { .c = c };
	unsigned long long adds, subs;
	struct cfi_set *old;
	int err = 0;

	pthread_mutex_lock(&c->lock);
	reclaim(c);
	sc.old = atomic_load(&c->cur);
	/* FDEs handlers asked for: built in place, no new set. */
	if (wanted_any(sc.old, true))
		dl_iterate_phdr(build_one, (void *)sc.old);
	sc.set = calloc(1, sizeof(*sc.set));
	if (!sc.set) {
		err = -ENOMEM;
		goto out_unlock;
	}
	adds = c->adds;
	subs = c->subs;
	sc.force = wanted_any(sc.old, false);
	dl_iterate_phdr(scan_one, &sc);
	if (sc.unchanged) {
		set_free(sc.set);
		goto out_unlock;
	}
	if (sc.nomem) {
		/* Scan again next time: the counters were not honoured. */
		c->adds = adds;
		c->subs = subs;
		set_free(sc.set);
		err = -ENOMEM;
		goto out_unlock;
	}
	if (sc.set->nranges)
		qsort(sc.set->ranges, sc.set->nranges, sizeof(*sc.set->ranges),
		      range_cmp);
	c->scanned = true;
	sc.set->gen = ++c->generation;
	sc.set->c = c;
	old = atomic_exchange(&c->cur, sc.set);
	if (old) {
		old->next = c->retired;
		c->retired = old;
		c->nretired++;
	}
	reclaim(c);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return err;
}

void kiln_cfi_stats(struct kiln_cfi *c, struct kiln_cfi_stats *st)
{
	const struct cfi_set *s;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&c->lock);
	pthread_mutex_lock(&c->fde_lock);
	s = atomic_load(&c->cur);
	if (s) {
		st->modules = s->nmods;
		st->bytes = sizeof(*s) + s->nmods * sizeof(*s->mods) +
			    s->nranges * sizeof(*s->ranges);
		for (size_t i = 0; i < s->nmods; i++) {
			const struct cfi_mod *m = s->mods[i];

			st->rows += m->nrows + m->fde_nrows;
			st->modules_cfi += m->nrows + m->fde_nrows > 0;
			st->fdes_skipped += m->fdes_skipped;
			st->fdes_built += m->fdes_built;
			st->bytes += sizeof(*m) +
				     m->nrows * sizeof(struct cfi_row) +
				     m->nindex * sizeof(uint32_t) +
				     m->nfde * (sizeof(*m->fdes) +
						sizeof(*m->fde_rows)) +
				     m->fdes_built * sizeof(struct fde_rows) +
				     m->fde_nrows * sizeof(struct cfi_row);
		}
	}
	st->generation = c->generation;
	st->retired = c->nretired;
	pthread_mutex_unlock(&c->fde_lock);
	pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------------------- */
/* The handler side: no allocation, no locks, no module memory.      */

/* A byte of initial-exec TLS: its address tells threads apart. */
static __thread char stripe_anchor __attribute__((tls_model("initial-exec")));

/* The calling thread's stripe of c->inside. */
static inline atomic_long *inside_of(struct kiln_cfi *c)
{
	uint64_t a = (uint64_t)(uintptr_t)&stripe_anchor;

	a ^= a >> 21;
	a *= 0x9E3779B97F4A7C15ull;
	return &c->inside[a >> 60].n;
}

/* The executable range holding pc, or NULL. */
static const struct cfi_range *find_range(const struct cfi_set *s, uint64_t pc)
{
	size_t lo = 0, hi;

	if (!s)
		return NULL;
	hi = s->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= s->ranges[lo - 1].hi)
		return NULL;
	return &s->ranges[lo - 1];
}

static void want(const struct cfi_set *set, const struct cfi_mod *m);

/* The last row starting at or before off, searched in rows[lo, hi)
 * (sorted by pc): rows[lo - 1] when none there does, NULL if lo is 0. */
static const struct cfi_row *last_row(const struct cfi_row *rows, size_t lo,
				      size_t hi, uint64_t off)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &rows[lo - 1] : NULL;
}

struct now_arg {
	struct kiln_cfi *c;
	struct cfi_mod *m;
	size_t i;
};

/* dl_iterate_phdr callback of build_now(): builds the FDE in m's object
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

/*
 * Builds lazy module m's FDE i on the spot (kiln_cfi_set_build_now();
 * the cached unwinder, never a signal handler: it takes the loader lock
 * and allocates).
 */
static void build_now(const struct cfi_set *set, const struct cfi_mod *m,
		      size_t i)
{
	struct now_arg a = { (struct kiln_cfi *)set->c, (struct cfi_mod *)m, i };

	dl_iterate_phdr(now_one, &a);
}

/*
 * The row for offset off in lazy module m: the last row at or before it
 * of the FDE whose range may hold it, or NULL (no rule; an FDE not built
 * yet is asked for, or built now when `now`).
 */
static const struct cfi_row *fde_row(const struct cfi_set *set,
				     const struct cfi_mod *m, uint32_t off,
				     bool now)
{
	size_t lo = 0, hi = m->nfde, i;
	const struct fde_rows *fr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->fdes[mid].pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	i = lo - 1;
	fr = atomic_load_explicit(&m->fde_rows[i], memory_order_acquire);
	if (!fr && now && set->c) {
		build_now(set, m, i);
		fr = atomic_load_explicit(&m->fde_rows[i], memory_order_acquire);
	}
	if (!fr) {
		_Atomic uint64_t *w = &m->fde_want[i >> 6];
		uint64_t bit = 1ull << (i & 63);

		if (!(atomic_load_explicit(w, memory_order_relaxed) & bit))
			atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
		want(set, m);
		return NULL;
	}
	return last_row(fr->rows, 0, fr->n, off);
}

/* The row for pc in mod, or NULL (then: no CFI).  set: the set holding
 * m, whose owner is asked for rows a lazy module lacks (or builds them
 * now: `now`). */
static const struct cfi_row *find_row(const struct cfi_set *set,
				      const struct cfi_mod *m, uint64_t pc,
				      bool now)
{
	size_t lo, hi, bk;
	uint64_t off = pc - m->bias;

	if (m->pending) {
		want(set, m);
		return NULL;	/* lazy: built by the next refresh */
	}
	if (pc < m->bias || off > UINT32_MAX)
		return NULL;
	if (m->fde_rows)
		return fde_row(set, m, (uint32_t)off, now);
	if (!m->nrows || off < m->rows[0].pc)
		return NULL;
	bk = (off - m->rows[0].pc) >> BUCKET_SHIFT;
	if (bk >= m->nindex)
		return &m->rows[m->nrows - 1];
	/* Rows of the bucket; the answer is among them or just before. */
	lo = m->index[bk];
	hi = m->index[bk + 1];
	return last_row(m->rows, lo, hi, off);
}

/* An 8-byte read inside [lo, hi), aligned; false if outside. */
/*
 * A word of the stack at addr, inside [lo, hi).  delta is 0 for the live
 * stack; for a copy of it, the copy's address less the stack's (the walk
 * computes with the thread's own addresses and reads the copy).
 */
static inline bool rd_stack(uint64_t addr, uint64_t lo, uint64_t hi,
			    uint64_t delta, uint64_t *out)
{
	if ((addr & 7) || addr < lo || hi < 8 || addr > hi - 8)
		return false;
	*out = *(const volatile uint64_t *)(uintptr_t)(addr + delta);
	return true;
}

static inline size_t cache_slot(uint64_t a)
{
	return (size_t)((a * 0x9E3779B97F4A7C15ull) >> 56) & (KILN_CFI_CACHE - 1);
}

/*
 * Asks the next refresh for rows of lazy module m (the whole module, or
 * the FDEs whose bits the caller set before), waking its owner's thread
 * the first time since the last refresh (the module lives as long as the
 * set the caller holds: see `inside`).  Async-signal-safe if the wake
 * function is.
 */
static void want(const struct cfi_set *set, const struct cfi_mod *m)
{
	_Atomic bool *w = &((struct cfi_mod *)m)->wanted;

	/* release: the refresh that clears `wanted` sees the FDE bits. */
	if (atomic_load_explicit(w, memory_order_relaxed) ||
	    atomic_exchange_explicit(w, true, memory_order_release))
		return;
	if (set->c && set->c->wake)
		set->c->wake(set->c->wake_arg);
}

/* find_row() through the caller's cache (NULL: none). */
static inline const struct cfi_row *cached_row(struct kiln_cfi_cache *cache,
					       const struct cfi_set *set,
					       const struct cfi_range *rg, uint64_t a)
{
	size_t i;
	const struct cfi_row *row;

	if (!cache)
		return find_row(set, rg->mod, a, false);
	i = cache_slot(a);
	if (cache->e[i].pc == a)
		return cache->e[i].row;
	row = find_row(set, rg->mod, a, set->c && set->c->build_now);
	if (!row && (rg->mod->pending || rg->mod->fde_rows))
		return row;	/* may be built later: not remembered */
	cache->e[i].pc = a;
	cache->e[i].row = row;
	cache->e[i].range = rg;
	return row;
}

/* find_range() for a return address, through the cache (its entry is
 * keyed by the address the next lookup uses, ra - 1). */
static inline const struct cfi_range *cached_range(struct kiln_cfi_cache *cache,
						   const struct cfi_set *set,
						   uint64_t ra)
{
	if (cache) {
		size_t i = cache_slot(ra - 1);

		if (cache->e[i].pc == ra - 1)
			return cache->e[i].range;
	}
	return find_range(set, ra);
}

/* walk()'s flag for copies whose frame pointer is not known: find it. */
#define SCAN_FP (1u << 30)
/* How far above sp a frame record is looked for (words). */
#define SCAN_WORDS 512

/*
 * Whether the instruction before ra is a call (e8 rel32, or ff /2 in its
 * register, [reg], disp8 and disp32 forms), read with process_vm_readv:
 * a module unloaded meanwhile fails the read instead of faulting.
 */
static bool call_before(uint64_t ra)
{
	uint8_t b[8];
	struct iovec l = { b, sizeof(b) }, r = { (void *)(uintptr_t)(ra - 8), 8 };
	static const int ff_at[] = { 2, 3, 6, 7 };
	size_t i;

	if (ra < 8 || process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 8)
		return false;
	if (b[8 - 5] == 0xe8)
		return true;
	for (i = 0; i < sizeof(ff_at) / sizeof(*ff_at); i++)
		if (b[8 - ff_at[i]] == 0xff && ((b[9 - ff_at[i]] >> 3) & 7) == 2)
			return true;
	return false;
}

/*
 * The frame pointer of a function that keeps one, when the registers
 * did not say (a thread blocked in the kernel gives only its sp and pc):
 * the lowest frame record above sp -- a saved frame pointer that points
 * higher up the stack (or is 0, the outermost) next to a return address
 * that follows a call into a module the set knows.  A stale record left
 * in the function's locals by an earlier call from the same caller names
 * the same caller.  0 if none.
 */
static uint64_t scan_fp(const struct cfi_set *set, uint64_t sp, uint64_t lo,
			uint64_t hi, uint64_t delta)
{
	uint64_t s, saved, ra;
	int i;

	for (i = 0, s = sp; i < SCAN_WORDS; i++, s += 8) {
		if (!rd_stack(s, lo, hi, delta, &saved) ||
		    !rd_stack(s + 8, lo, hi, delta, &ra))
			return 0;
		if ((saved && (saved <= s + 8 || saved >= hi || (saved & 7))) ||
		    !find_range(set, ra) || !call_before(ra))
			continue;
		return s;
	}
	return 0;
}

static int walk(const struct cfi_set *set, struct kiln_cfi_cache *cache,
		uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lo, uint64_t hi,
		uint64_t delta, unsigned flags, uint64_t *pcs, int max)
{
	bool fp_ok = !(flags & SCAN_FP), exact = true;
	int n = 0;

	if (max < 1)
		return 0;
	pcs[n++] = pc;
	if (sp > lo)
		lo = sp;	/* nothing the walk needs lies below sp */
	const struct cfi_range *rg = find_range(set, pc);

	while (n < max) {
		const struct cfi_row *row = NULL;
		uint64_t npc, nsp, nfp = fp, cfa;
		bool nfp_ok = fp_ok, nexact = false;
		int kind = KILN_CFI_NONE;

		if (!rg && n > 1)
			break;
#if CFI_DWARF
		if (rg && !(flags & KILN_CFI_FP_ONLY)) {
			row = cached_row(cache, set, rg, exact ? pc : pc - 1);
			if (row)
				kind = row->kind;
		}
#endif
		switch (kind) {
		case KILN_CFI_RULE:
			if (row->cfa_reg != KILN_CFI_REG_RSP && !fp_ok &&
			    (flags & SCAN_FP) && (fp = scan_fp(set, sp, lo, hi, delta)))
				fp_ok = true;
			if (row->cfa_reg == KILN_CFI_REG_RSP)
				cfa = sp;
			else if (fp_ok)
				cfa = fp;
			else
				return n;
			cfa += (uint64_t)(int64_t)row->cfa_off;
			if (!rd_stack(cfa + (uint64_t)(int64_t)row->ra_off, lo, hi, delta,
				      &npc))
				return n;
			if (row->fp_off == FP_LOST) {
				nfp_ok = false;
			} else if (row->fp_off) {
				if (!rd_stack(cfa + (uint64_t)(int64_t)row->fp_off,
					      lo, hi, delta, &nfp))
					return n;
				nfp_ok = true;
			}
			nsp = cfa;
			break;
		case KILN_CFI_PLT:
			cfa = sp + (uint64_t)(int64_t)row->cfa_off +
			      ((pc & 15) >= row->plt_at ? 8 : 0);
			if (!rd_stack(cfa - 8, lo, hi, delta, &npc))
				return n;
			nsp = cfa;
			break;
#if CFI_DWARF
		case KILN_CFI_SIGNAL: {
			/* rt_sigreturn's frame: the ucontext_t lies at sp. */
			uint64_t g = sp + offsetof(ucontext_t, uc_mcontext.gregs);

			if (!rd_stack(g + 8 * REG_RIP, lo, hi, delta, &npc) ||
			    !rd_stack(g + 8 * REG_RSP, lo, hi, delta, &nsp) ||
			    !rd_stack(g + 8 * REG_RBP, lo, hi, delta, &nfp))
				return n;
			nfp_ok = true;
			nexact = true;
			break;
		}
#endif
		case KILN_CFI_OUTERMOST:
			return n;
		default:
			/* No usable rule: the frame-pointer chain. */
			if (!fp_ok && (flags & SCAN_FP) &&
			    (fp = scan_fp(set, sp, lo, hi, delta)))
				fp_ok = true;
			if (!fp_ok || fp < sp)
				return n;
			if (!rd_stack(fp, lo, hi, delta, &nfp) ||
			    !rd_stack(fp + 8, lo, hi, delta, &npc))
				return n;
			nsp = fp + 16;
			nfp_ok = true;
			break;
		}
		if (!npc || nsp <= sp)
			break;
		if (rg && npc - rg->lo < rg->hi - rg->lo) {
			/* Mostly a caller in the same module. */
		} else if (!(rg = cached_range(cache, set, npc))) {
			break;
		}
		if (!set->c || npc - set->c->skip_lo >= set->c->skip_hi - set->c->skip_lo)
			pcs[n++] = npc;
		pc = npc;
		sp = nsp;
		fp = nfp;
		fp_ok = nfp_ok;
		exact = nexact;
	}
	return n;
}

int kiln_cfi_unwind_regs(struct kiln_cfi *c, const struct kiln_cfi_regs *r,
			 uint64_t stack_lo, uint64_t stack_hi, unsigned flags,
			 uint64_t *pcs, int max)
{
	int n;

	/* seq_cst: see reclaim(). */
	atomic_long *in = inside_of(c);

	atomic_fetch_add(in, 1);
	n = walk(atomic_load(&c->cur), NULL, r->pc, r->sp, r->fp, stack_lo,
		 stack_hi, 0, flags, pcs, max);
	atomic_fetch_sub(in, 1);
	return n;
}

int kiln_cfi_unwind_copy(struct kiln_cfi *c, const struct kiln_cfi_regs *r,
			 const void *copy, size_t len, uint64_t *pcs, int max)
{
	int n;
	atomic_long *in = inside_of(c);

	atomic_fetch_add(in, 1);
	n = walk(atomic_load(&c->cur), NULL, r->pc, r->sp, r->fp, r->sp,
		 r->sp + len, (uint64_t)(uintptr_t)copy - r->sp,
		 r->fp ? 0 : SCAN_FP, pcs, max);
	atomic_fetch_sub(in, 1);
	return n;
}

int kiln_cfi_unwind_cached(struct kiln_cfi *c, struct kiln_cfi_cache *cache,
			   const struct kiln_cfi_regs *r, uint64_t stack_lo,
			   uint64_t stack_hi, uint64_t *pcs, int max)
{
	atomic_long *in = inside_of(c);
	const struct cfi_set *set;
	int n;

	atomic_fetch_add(in, 1);
	set = atomic_load(&c->cur);
	if (set && cache->gen != set->gen) {
		/* The rows of another set (by generation: a new set may
		 * reuse a freed one's address): forget them all. */
		memset(cache->e, 0, sizeof(cache->e));
		cache->gen = set->gen;
	}
	n = walk(set, cache, r->pc, r->sp, r->fp, stack_lo, stack_hi, 0, 0, pcs, max);
	atomic_fetch_sub(in, 1);
	return n;
}

int kiln_cfi_unwind(struct kiln_cfi *c, const void *ucontext,
		    uint64_t stack_lo, uint64_t stack_hi, uint64_t *pcs,
		    int max)
{
	const ucontext_t *uc = ucontext;
	struct kiln_cfi_regs r;

#if defined(__x86_64__)
	r.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	r.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	r.fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
	r.pc = uc->uc_mcontext.pc;
	r.sp = uc->uc_mcontext.sp;
	r.fp = uc->uc_mcontext.regs[29];
#else
	(void)uc;
	return 0;
#endif
	return kiln_cfi_unwind_regs(c, &r, stack_lo, stack_hi, 0, pcs, max);
}

int kiln_cfi_lookup(struct kiln_cfi *c, uint64_t pc, struct kiln_cfi_rule *out)
{
	const struct cfi_range *rg;
	const struct cfi_row *row = NULL;
	int err = 0;

	atomic_long *in = inside_of(c);

	memset(out, 0, sizeof(*out));
	atomic_fetch_add(in, 1);
	rg = find_range(atomic_load(&c->cur), pc);
	if (!rg) {
		err = -ENOENT;
		goto out;
	}
	row = find_row(atomic_load(&c->cur), rg->mod, pc, false);
	if (!row)
		goto out;
	out->kind = row->kind;
	out->cfa_reg = row->cfa_reg;
	out->cfa_off = row->cfa_off;
	out->ra_off = row->ra_off;
	out->fp_off = row->fp_off == FP_LOST ? 0 : row->fp_off;
	out->fp_lost = row->fp_off == FP_LOST;
	out->plt_at = row->plt_at;
out:
	atomic_fetch_sub(in, 1);
	return err;
}
