/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A library for tests/unit/test-cfichain.c, built twice (chainlib-a,
 * chainlib-b) with frames of different sizes and no frame pointers: the
 * two unwind differently through the same offsets, and one is loaded where
 * the other was unloaded.
 */
#ifndef CHAIN_PAD
#define CHAIN_PAD 8
#endif

/* Calls fn(arg) from a frame of CHAIN_PAD bytes of locals. */
__attribute__((noinline)) int chain_lib_call(int (*fn)(void *), void *arg)
{
	volatile char pad[CHAIN_PAD];

	pad[0] = 1;
	pad[CHAIN_PAD - 1] = 2;
	return fn(arg) + pad[0] + pad[CHAIN_PAD - 1];
}
