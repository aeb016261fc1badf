/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The load bias of a mapped ELF file (symbolize stage; see elfbias.h).
 */
#include "symbolize/elfbias.h"

/*
 * The first byte of the page holding file offset off, for pages of the
 * segment's alignment between 4 KiB and 64 KiB (x86-64's and arm64's
 * largest): a mapping's offset is a multiple of the machine's page size,
 * which the segment's alignment is at least.
 */
static uint64_t page_floor(const GElf_Phdr *ph, uint64_t off)
{
	uint64_t pg = ph->p_align;

	if (pg < 4096 || (pg & (pg - 1)))
		pg = 4096;
	else if (pg > 65536)
		pg = 65536;
	return off & ~(pg - 1);
}

bool kiln_sym_elf_bias(Elf *elf, uint64_t start, uint64_t offset,
		       uint64_t *bias)
{
	GElf_Ehdr ehdr;
	GElf_Phdr best;
	size_t i, n;
	int best_rank = -1;

	if (!gelf_getehdr(elf, &ehdr) ||
	    (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN))
		return false;
	if (elf_getphdrnum(elf, &n))
		n = 0;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t lo;
		int rank = 0;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		lo = page_floor(&ph, ph.p_offset);
		if (offset < lo || offset >= ph.p_offset + ph.p_filesz)
			continue;
		if (ph.p_flags & PF_X)
			rank += 2;
		if (lo == offset)
			rank += 1;
		if (rank > best_rank) {
			best = ph;
			best_rank = rank;
		}
	}
	if (best_rank < 0) {
		*bias = 0;
		return ehdr.e_type == ET_EXEC;
	}
	/* File offset x is at vaddr p_vaddr + (x - p_offset) and at runtime
	 * start + (x - offset). */
	*bias = start - offset - best.p_vaddr + best.p_offset;
	return true;
}
