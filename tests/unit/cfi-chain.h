/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The call chains of cfi-chain.c (no frame pointers, CFI only) and
 * cfi-chain-fp.c (frame pointers everywhere), for tests/unit/test-cfi.c.
 * Each chain_a calls chain_b, chain_c, then chain_d, which spins until
 * *stop is non-zero.  chain_deep recurses depth times, then calls fn.
 */
#ifndef KILN_TESTS_CFI_CHAIN_H
#define KILN_TESTS_CFI_CHAIN_H

int chain_a(volatile int *stop);
int chain_b(volatile int *stop);
int chain_c(volatile int *stop);
int chain_d(volatile int *stop);
int chain_deep(int depth, int (*fn)(void *), void *arg);

int fp_chain_a(volatile int *stop);
int fp_chain_b(volatile int *stop);
int fp_chain_c(volatile int *stop);
int fp_chain_d(volatile int *stop);
int fp_chain_deep(int depth, int (*fn)(void *), void *arg);

#if defined(__x86_64__)
/* Calls fn(arg) with garbage in rbp (its CFI restores the caller's). */
int cfi_asm_call(int (*fn)(volatile int *), volatile int *arg);
/* Labels inside hand-written CFI (cfi-chain.c); never called. */
extern const char cfi_asm_rules[], cfi_asm_r1[], cfi_asm_r2[], cfi_asm_r3[],
	cfi_asm_r4[], cfi_asm_r5[], cfi_asm_r6[], cfi_asm_r7[], cfi_asm_r8[],
	cfi_asm_gap[], cfi_asm_sigframe[];
#endif

#endif
