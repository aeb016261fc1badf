/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call chains for tests/unit/test-cfi.c, compiled into that test with
 * -fomit-frame-pointer (see CMakeLists.txt): chain_a -> chain_b ->
 * cfi_asm_call -> chain_c -> chain_d, where chain_d is a frameless leaf
 * that spins until *stop is set, and cfi_asm_call (hand-written below)
 * fills rbp with garbage before calling on, so only CFI unwinds it.
 * cfi-chain-fp.c includes this file again with frame pointers
 * (CFI_CHAIN_FP): fp_chain_a .. fp_chain_d, no assembly.
 *
 * Also: chain_deep() (a recursion of known depth, for timing) and
 * cfi_asm_rules, a function that is never called, whose hand-written CFI
 * covers each rule kind the tables know (labels cfi_asm_r1 .. r8).
 */
#include "cfi-chain.h"

#if defined(CFI_CHAIN_FP)
#define CHAIN(x) fp_##x
#define VIA(fn, arg) fn(arg)
#elif !defined(__x86_64__)
#define CHAIN(x) x
#define VIA(fn, arg) fn(arg)
#else
#define CHAIN(x) x
#define VIA(fn, arg) cfi_asm_call((int (*)(volatile int *))(fn), (arg))
#endif

__attribute__((noinline)) int CHAIN(chain_d)(volatile int *stop)
{
	int n = 0;
#ifdef CFI_CHAIN_FP
	/*
	 * gcc 12 gives a leaf that needs no stack no frame even with
	 * -mno-omit-leaf-frame-pointer; a variable-size alloca forces one.
	 */
	volatile char *p = __builtin_alloca(16 + (*stop & 1));

	p[0] = 0;
#endif
	while (!*stop)
		n++;
	return n;
}

__attribute__((noinline)) int CHAIN(chain_c)(volatile int *stop)
{
	volatile char pad[40];

	pad[0] = 3;
	return CHAIN(chain_d)(stop) + pad[0];
}

__attribute__((noinline)) int CHAIN(chain_b)(volatile int *stop)
{
	volatile char pad[24];

	pad[0] = 2;
	return VIA(CHAIN(chain_c), stop) + pad[0];
}

__attribute__((noinline)) int CHAIN(chain_a)(volatile int *stop)
{
	volatile long pad[3];

	pad[1] = 1;
	return CHAIN(chain_b)(stop) + (int)pad[1];
}

__attribute__((noinline)) int CHAIN(chain_deep)(int depth, int (*fn)(void *),
						void *arg)
{
	volatile char pad[16];

	pad[0] = (char)depth;
	if (depth <= 0)
		return fn(arg);
	return CHAIN(chain_deep)(depth - 1, fn, arg) + pad[0];
}

#if !defined(CFI_CHAIN_FP) && defined(__x86_64__)
__asm__(
	".text\n"
	/* int cfi_asm_call(int (*fn)(volatile int *), volatile int *arg) */
	".globl cfi_asm_call\n"
	".type cfi_asm_call, @function\n"
	"cfi_asm_call:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	sub $32, %rsp\n"
	".cfi_def_cfa_offset 48\n"
	"	movabs $0x5a5a5a5a5a5a5a5a, %rbp\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"	add $32, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"	pop %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfi_asm_call, .-cfi_asm_call\n"

	/* Never called: each label starts a row of a known rule. */
	".globl cfi_asm_rules\n"
	".type cfi_asm_rules, @function\n"
	"cfi_asm_rules:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".globl cfi_asm_r1\n"
	"cfi_asm_r1:\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	".globl cfi_asm_r2\n"
	"cfi_asm_r2:\n"
	".cfi_def_cfa_register %rbp\n"
	".cfi_remember_state\n"
	"	leave\n"
	".globl cfi_asm_r3\n"
	"cfi_asm_r3:\n"
	".cfi_def_cfa %rsp, 8\n"
	".cfi_restore %rbp\n"
	"	ret\n"
	".globl cfi_asm_r4\n"
	"cfi_asm_r4:\n"
	".cfi_restore_state\n"
	"	nop\n"
	".globl cfi_asm_r5\n"
	"cfi_asm_r5:\n"
	/* ld's .plt expression: rsp + 8 + ((rip & 15) >= 11) << 3 */
	".cfi_escape 0x0f,0x0b,0x77,0x08,0x80,0x00,0x3f,0x1a,0x3b,0x2a,0x33,0x24,0x22\n"
	"	nop\n"
	".globl cfi_asm_r6\n"
	"cfi_asm_r6:\n"
	/* Another CFA expression (breg7 16): not applied. */
	".cfi_escape 0x0f,0x02,0x77,0x10\n"
	"	nop\n"
	".globl cfi_asm_r7\n"
	"cfi_asm_r7:\n"
	/* CFA rsp+40; rbp by expression (DW_CFA_expression breg6 0): lost. */
	".cfi_def_cfa %rsp, 40\n"
	".cfi_escape 0x10,0x06,0x02,0x76,0x00\n"
	"	nop\n"
	".globl cfi_asm_r8\n"
	"cfi_asm_r8:\n"
	".cfi_undefined %rip\n"
	"	nop\n"
	".cfi_endproc\n"
	".size cfi_asm_rules, .-cfi_asm_rules\n"
	/* Code no FDE covers. */
	".globl cfi_asm_gap\n"
	"cfi_asm_gap:\n"
	"	nop\n"
	"	nop\n"
	/* A signal trampoline's FDE ('S' augmentation). */
	".globl cfi_asm_sigframe\n"
	".type cfi_asm_sigframe, @function\n"
	"cfi_asm_sigframe:\n"
	".cfi_startproc\n"
	".cfi_signal_frame\n"
	"	nop\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfi_asm_sigframe, .-cfi_asm_sigframe\n");
#endif
