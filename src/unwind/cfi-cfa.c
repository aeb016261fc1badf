/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CFI unwinder's CFA programs (capture stage, normal context, with
 * cfi-parse.c): a CIE's initial instructions and an FDE's program run over
 * the rules we track (the CFA, rbp and the return address), one row
 * emitted at each advance, ld's .plt expression recognized.  See
 * cfi-parse.h and docs/unwinding.md.
 */
#include "unwind/cfiint.h"
#include "unwind/cfi-parse.h"

#include <stdbool.h>
#include <stdint.h>

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
bool kcfi_emit(struct build *b, const struct cfa_state *s, bool signal,
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
 * The extended opcodes that set one register's rule in s (restore: back
 * to init's).  1: op was one of them (r->bad says if it was cut short),
 * 0: it is not, -1: malformed.
 */
static int rule_op(struct rd *r, const struct cie *cie, struct cfa_state *s,
		   const struct cfa_state *init, uint8_t op)
{
	struct reg_rule *rr;
	uint64_t reg, len;
	int64_t off;

	switch (op) {
	case CFA_offset_extended:
	case CFA_offset_extended_sf:
	case CFA_GNU_negative_offset_extended:
		reg = rd_uleb(r);
		if (op == CFA_offset_extended_sf)
			off = rd_sleb(r) * cie->data_align;
		else
			off = (int64_t)rd_uleb(r) * cie->data_align;
		if (op == CFA_GNU_negative_offset_extended)
			off = -off;
		if ((rr = rule_of(s, cie, reg)))
			*rr = (struct reg_rule){ R_OFFSET, off };
		return 1;
	case CFA_restore_extended:
		reg = rd_uleb(r);
		if ((rr = rule_of(s, cie, reg)))
			*rr = *rule_of((struct cfa_state *)init, cie, reg);
		return 1;
	case CFA_undefined:
		reg = rd_uleb(r);
		if ((rr = rule_of(s, cie, reg)))
			rr->how = (rr == &s->ra) ? R_UNDEF : R_LOST;
		return 1;
	case CFA_same_value:
		reg = rd_uleb(r);
		if ((rr = rule_of(s, cie, reg)))
			rr->how = R_SAME;
		return 1;
	case CFA_register:
	case CFA_val_offset:
	case CFA_val_offset_sf:
		reg = rd_uleb(r);
		if (op == CFA_val_offset_sf)
			(void)rd_sleb(r);
		else
			(void)rd_uleb(r);
		if ((rr = rule_of(s, cie, reg)))
			rr->how = R_LOST;
		return 1;
	case CFA_expression:
	case CFA_val_expression:
		reg = rd_uleb(r);
		len = rd_uleb(r);
		if (!rd_need(r, len))
			return -1;
		r->p += len;
		if ((rr = rule_of(s, cie, reg)))
			rr->how = R_LOST;
		return 1;
	default:
		return 0;
	}
}

/* The opcodes that define the CFA, as rule_op() answers. */
static int cfa_op(struct rd *r, const struct cie *cie, struct cfa_state *s,
		  uint8_t op)
{
	uint64_t len;

	switch (op) {
	case CFA_def_cfa:
		s->cfa_reg = rd_uleb(r);
		s->cfa_off = (int64_t)rd_uleb(r);
		s->cfa_how = CFA_REG;
		return 1;
	case CFA_def_cfa_sf:
		s->cfa_reg = rd_uleb(r);
		s->cfa_off = rd_sleb(r) * cie->data_align;
		s->cfa_how = CFA_REG;
		return 1;
	case CFA_def_cfa_register:
		s->cfa_reg = rd_uleb(r);
		break;
	case CFA_def_cfa_offset:
		s->cfa_off = (int64_t)rd_uleb(r);
		break;
	case CFA_def_cfa_offset_sf:
		s->cfa_off = rd_sleb(r) * cie->data_align;
		break;
	case CFA_def_cfa_expression:
		len = rd_uleb(r);
		if (!rd_need(r, len))
			return -1;
		if (plt_expr(r->p, len, &s->plt_at)) {
			s->cfa_how = CFA_PLT;
			s->cfa_off = 8;
		} else {
			s->cfa_how = CFA_LOST;
		}
		r->p += len;
		return 1;
	default:
		return 0;
	}
	/* A register or offset changed under a PLT expression: unknown. */
	if (s->cfa_how == CFA_PLT)
		s->cfa_how = CFA_LOST;
	return 1;
}

/*
 * Runs a CFA program over s.  With b (an FDE's program) rows are emitted
 * at each advance and loc moves; without it (the CIE's initial
 * instructions) no location may change.  init is the state after the
 * CIE's program (DW_CFA_restore).  false: the program is malformed or
 * uses what we do not know; the caller ends the FDE's rows there.
 */
bool kcfi_run_cfa(struct rd *r, const struct cie *cie, struct cfa_state *s,
		  const struct cfa_state *init, struct build *b,
		  uint64_t *loc, uint64_t hi, uint64_t data)
{
	struct cfa_state stack[STATE_STACK];
	int depth = 0, done;

	while (r->p < r->end && !r->bad) {
		uint8_t op = (uint8_t)rd_uint(r, 1), low = op & 0x3f;
		uint64_t delta = 0, newloc;
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
			case CFA_GNU_args_size:
				(void)rd_uleb(r);
				break;
			default:
				done = rule_op(r, cie, s, init, op);
				if (!done)
					done = cfa_op(r, cie, s, op);
				if (done <= 0)
					return false;	/* malformed, or unknown */
			}
		}
		if (r->bad)
			return false;
		if (advance) {
			if (!b)
				return false;	/* no advance in a CIE */
			if (!kcfi_emit(b, s, cie->signal, *loc, hi))
				return false;
			if (delta >= hi - *loc)
				return true;	/* past the FDE: done */
			*loc += delta;
		}
	}
	return !r->bad;
}
