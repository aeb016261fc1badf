/*
 * The CFI unwinder's table builder (capture stage, normal context:
 * allocation allowed): reads a loaded object's .eh_frame_hdr and
 * .eh_frame straight from memory while dl_iterate_phdr's loader lock keeps
 * it mapped, runs every FDE's CFA program and keeps one 16-byte row per
 * change of rule, sorted by pc and indexed by bucket; for lazy tables,
 * copies the search table and builds single FDEs in place when unwinds
 * asked for them.  cfi.c calls it while it builds a table set; cfi-walk.c
 * only for kiln_cfi_set_build_now() (kcfi_build_now()).  See cfiint.h and
 * docs/unwinding.md.
 */
#include "unwind/cfiint.h"
#include "util/varint.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct fde_rows kcfi_fde_none;

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

/*
 * DWARF lets a LEB128 run past ten bytes (padding): util/varint.h reads
 * the first ten (the low 64 bits), the rest are skipped here.  false when
 * the section ends inside it.
 */
static bool skip_leb_tail(struct rd *r)
{
	r->p += KILN_VARINT_MAX;
	while (rd_need(r, 1))
		if (!(*r->p++ & 0x80))
			return true;
	return false;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v;
	int n;

	if (r->bad)
		return 0;
	n = kiln_varint_get_proto(r->p, (size_t)(r->end - r->p), &v);
	if (n > 0) {
		r->p += n;
		return v;
	}
	if (n == KILN_VARINT_LONG && skip_leb_tail(r))
		return v;
	r->bad = true;
	return 0;
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v;
	int n;

	if (r->bad)
		return 0;
	n = kiln_varint_get_signed(r->p, (size_t)(r->end - r->p), &v);
	if (n > 0) {
		r->p += n;
		return v;
	}
	/* Ten bytes or more: the low 64 bits, no sign extended past them. */
	if (n == KILN_VARINT_WIDE) {
		r->p += KILN_VARINT_MAX;
		return v;
	}
	if (n == KILN_VARINT_LONG && skip_leb_tail(r))
		return v;
	r->bad = true;
	return 0;
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

void kcfi_build_wanted(struct kiln_cfi *c, const struct dl_phdr_info *info,
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
