/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The load bias of a mapped ELF file: the one computation every stage
 * that turns a runtime address into a file address uses (the symbolizer,
 * the DWARF unwinder of perf samples, and through them kiln record,
 * perf.data replay, the agent's profiles and heap traces).
 */
#ifndef KILN_SYMBOLIZE_ELFBIAS_H
#define KILN_SYMBOLIZE_ELFBIAS_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The load bias (runtime address minus ELF virtual address) of elf when
 * its bytes from file offset `offset` are mapped executable at runtime
 * address `start` (the columns of /proc/PID/maps).  An ET_EXEC file mapped
 * where it was linked has bias 0; a part of it mapped again elsewhere
 * (node maps its embedded builtins a second time, at another address,
 * from another file offset) has the bias of that copy, and one no segment
 * holds is taken as mapped where linked (0).  Only code is symbolized and unwound: a data mapping's bias is
 * not what this answers (R and RW segments can share a page offset and
 * RELRO turns part of RW into R, so nothing in one mapping tells them
 * apart).
 *
 * A page-aligned offset may fall in two segments' pages: LLD starts the
 * code segment inside the page where the read-only one ends (LOAD off
 * 0xa50 vaddr 0x1a50 R E after LOAD off 0 vaddr 0 R), so offset 0 is in
 * both and only the mapping's protection tells which one is mapped
 * there; they differ by a page in what they give.  The segment chosen is
 * an executable one, then the one whose first page starts at offset (a
 * whole mapping rather than the tail of a split one).
 *
 * true with *bias set; false when elf is not ET_EXEC/ET_DYN or no
 * PT_LOAD segment holds offset.
 */
bool kiln_sym_elf_bias(Elf *elf, uint64_t start, uint64_t offset,
		       uint64_t *bias);

#endif
