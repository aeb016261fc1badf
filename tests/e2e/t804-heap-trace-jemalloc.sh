#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program linked with jemalloc is traced as fully as one using glibc,
# mallocx/rallocx/dallocx/sdallocx included; one with jemalloc linked
# statically into it is told that its allocations cannot be seen.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"
[ -x "$WL/heapje" ] || skip "jemalloc (libjemalloc-dev) is not installed"

same_output "$WL/heapje"
heapcheck "$T/h.trace" "$WL/heapje"
expect_total end 1
expect_site std_calls allocs 200
expect_site std_calls live 0
# 100 mallocx + 50 rallocx; dallocx and sdallocx free them all.
expect_site x_calls allocs 150
expect_site x_calls bytes 76800
expect_site x_calls live 0
expect_site leak_x allocs 4
expect_site leak_x live_bytes 1332
hasnt "$T/agent.err" "cannot see"

if [ -x "$WL/heapje-static" ]; then
    rm -f "$T/h.trace"
    same_output "$WL/heapje-static"
    has "$T/agent.err" "heap profiling cannot see the program's allocations: its allocator is linked statically into '.*heapje-static'"
fi
echo ok
