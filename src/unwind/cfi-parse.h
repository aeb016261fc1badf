/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the CFI table builder's two files share (capture stage, normal
 * context): cfi-parse.c (CIEs, FDEs, the rows of a module) and cfi-cfa.c
 * (the CFA programs): the bounds-checked reader over module memory, a
 * CIE, the CFA-program state, the rows being collected.
 */
#ifndef KILN_UNWIND_CFI_PARSE_H
#define KILN_UNWIND_CFI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/cfiint.h"
#include "util/varint.h"

/* A bounds-checked cursor over module memory. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static inline bool rd_need(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	return true;
}

static inline uint64_t rd_uint(struct rd *r, size_t n)
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
static inline bool skip_leb_tail(struct rd *r)
{
	r->p += KILN_VARINT_MAX;
	while (rd_need(r, 1))
		if (!(*r->p++ & 0x80))
			return true;
	return false;
}

static inline uint64_t rd_uleb(struct rd *r)
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

static inline int64_t rd_sleb(struct rd *r)
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
static inline uint64_t rd_enc(struct rd *r, uint8_t enc, uint64_t data)
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

static inline bool push_row(struct build *b, const struct cfi_row *r, uint8_t prio)
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

/* cfi-cfa.c: adds the row of state s at absolute location loc, inside
 * [lo, hi); false: no memory. */
bool kcfi_emit(struct build *b, const struct cfa_state *s, bool signal,
	       uint64_t loc, uint64_t hi);
/* Runs a CFA program over s (see there); false: malformed or unknown. */
bool kcfi_run_cfa(struct rd *r, const struct cie *cie, struct cfa_state *s,
		  const struct cfa_state *init, struct build *b,
		  uint64_t *loc, uint64_t hi, uint64_t data);

#endif
