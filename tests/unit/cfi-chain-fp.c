/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The call chain of cfi-chain.c with frame pointers (leaf functions too):
 * fp_chain_a .. fp_chain_d and fp_chain_deep, for tests/unit/test-cfi.c.
 */
#define CFI_CHAIN_FP 1
#include "cfi-chain.c"
