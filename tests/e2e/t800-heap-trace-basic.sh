#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HEAP_TRACE: every allocation function of heapbasic is traced with
# its exact count, bytes and site, the known leak stays live, the trace
# ends with an end record, and the program prints the same.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

same_output "$WL/heapbasic"
heapcheck "$T/h.trace" "$WL/heapbasic"
expect_total end 1
expect_total lost 0
expect_site alloc_small allocs 1000
expect_site alloc_small bytes 100000
expect_site alloc_small live 0
expect_site alloc_calloc allocs 100
expect_site alloc_calloc bytes 32000
expect_site alloc_calloc live 0
# 10 x (malloc 64, realloc 128, realloc 256): 30 blocks, the old ones freed.
expect_site alloc_grow allocs 30
expect_site alloc_grow bytes 4480
expect_site alloc_grow live 0
# posix_memalign, aligned_alloc, memalign, valloc, pvalloc, reallocarray.
expect_site alloc_aligned allocs 6
expect_site alloc_aligned bytes 17748
expect_site alloc_aligned live 0
expect_site leak_here allocs 5
expect_site leak_here live 5
expect_site leak_here live_bytes 20480
expect_site peak_big bytes 8388608
expect_site peak_big live 0
grep -q "^header pid=[0-9]* ppid=[0-9]* sample=0 cmd=$WL/heapbasic$" "$T/check.txt" ||
    { cat "$T/check.txt"; fail "bad header"; }
# The full stacks reach main through run.
"$KILN" top -n 0 "$T/h.trace" > "$T/top.txt" 2>&1 || { cat "$T/top.txt"; fail "kiln top cannot read the trace"; }
has "$T/top.txt" "alloc_small"
has "$T/top.txt" " run$"
echo ok
