/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A function's instructions (symbolize stage): the symbol covering an
 * offset of an ELF file, its bytes read from that file (its build ID
 * checked against the profile's), decoded by capstone, each instruction
 * with its source line from the file's DWARF (or its separate debug
 * file's, found as the symbolizer finds it).  For kiln serve's
 * disassembly view (docs/kiln-serve.md, "Disassembly": why capstone and
 * not binutils' libopcodes).
 *
 * Built into a library of its own (kiln_disasm, with capstone) that only
 * the CLI links: libkiln.so, inside profiled programs, never loads it.
 * Each call has its own libdwfl session and capstone handle: calls may
 * run on any thread.  Not async-signal-safe (it allocates).
 */
#ifndef KILN_SYMBOLIZE_DISASM_H
#define KILN_SYMBOLIZE_DISASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_diag;

/* One instruction. */
struct kiln_insn {
	uint64_t addr;		/* its address in the file's own layout (ELF
				 * virtual address) */
	uint64_t offset;	/* its offset in the file */
	uint32_t size;		/* bytes */
	char text[192];		/* mnemonic and operands, Intel syntax */
	uint32_t file;		/* index in files + 1; 0: no line known */
	int line;
};

/* A function's instructions (kiln_disasm_at()); release with
 * kiln_disasm_release(). */
struct kiln_disasm {
	char *symbol;		/* demangled where mangled */
	uint64_t start, end;	/* its range, [start, end), file addresses */
	char *build_id;		/* the file's, lower-case hex, or NULL */
	const char *arch;	/* "x86-64", "aarch64" */
	struct kiln_insn *insns;
	size_t n;
	bool truncated;		/* longer than KILN_DISASM_MAX bytes: cut */
	char **files;		/* source files the lines name */
	size_t nfiles;
};

#define KILN_DISASM_MAX (256 * 1024)

/*
 * Disassembles the function of ELF file path that covers file offset
 * `offset` (an address a profile sampled, made a file offset through its
 * mapping).  build_id (hex; NULL or "": not checked) must be the file's.
 * 0 with out filled, or with d filled: -ENOENT (no such regular file),
 * -ESTALE (another build ID: the file changed since the profile was
 * taken), -ENOEXEC (not an ELF file, or no symbol covers the offset),
 * -ENOTSUP (a machine capstone is not asked to decode here); or -ENOMEM.
 */
int kiln_disasm_at(const char *path, const char *build_id, uint64_t offset,
		   struct kiln_disasm *out, struct kiln_diag *d);
void kiln_disasm_release(struct kiln_disasm *x);

/*
 * The decoder under both: one machine's instruction decoder (capstone),
 * reused over many pieces of code (kiln doctor judges prologues with it).
 * kiln_decoder_open(): machine is an ELF e_machine (EM_X86_64,
 * EM_AARCH64); *arch names it ("x86-64").  0, -ENOTSUP (a machine not
 * decoded), -ENOENT (capstone, loaded by the first call, is missing) or
 * -ENOMEM.
 */
struct kiln_decoder;
int kiln_decoder_open(struct kiln_decoder **out, int machine,
		      const char **arch);
void kiln_decoder_close(struct kiln_decoder *dec);

/* One decoded instruction; the strings and bytes live until the next
 * kiln_decoder_next() on the same decoder. */
struct kiln_decoded {
	uint64_t addr;
	uint32_t size;
	const uint8_t *bytes;
	const char *mnemonic, *ops;	/* Intel syntax on x86-64 */
	bool call;			/* a call (x86 call, arm64 bl/blr) */
};

/*
 * Decodes the instruction at *code (*left bytes, at address *addr) and
 * moves the three past it.  false at the end or at bytes that are no
 * instruction (nothing moves then).
 */
bool kiln_decoder_next(struct kiln_decoder *dec, const uint8_t **code,
		       size_t *left, uint64_t *addr, struct kiln_decoded *out);

/* The instruction holding file offset off (binary search), or NULL.
 * Inline: the web stage uses it without linking the decoder. */
static inline const struct kiln_insn *
kiln_disasm_find(const struct kiln_disasm *x, uint64_t off)
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct kiln_insn *in = &x->insns[mid];

		if (off < in->offset)
			hi = mid;
		else if (off >= in->offset + in->size)
			lo = mid + 1;
		else
			return in;
	}
	return NULL;
}

#endif
