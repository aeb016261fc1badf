#!/usr/bin/env bash
# ctest-labels: noasan
# C++ new/delete and new[]/delete[] arrive through malloc and free: exact
# counts at the C++ functions, the two leaked widgets live.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

same_output "$WL/heapcxx"
heapcheck "$T/h.trace" "$WL/heapcxx"
expect_total end 1
expect_site _Z12make_widgetsv allocs 500
expect_site _Z12make_widgetsv bytes 20000
expect_site _Z12make_widgetsv live 0
expect_site _Z11make_arraysv allocs 50
expect_site _Z11make_arraysv bytes 50000
expect_site _Z11make_arraysv live 0
expect_site _Z12leak_widgetsv allocs 2
expect_site _Z12leak_widgetsv live_bytes 80
echo ok
