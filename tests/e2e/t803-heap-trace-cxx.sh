#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# C++ new/delete, new[]/delete[], aligned and nothrow new: exact counts at
# the C++ functions, the two leaked widgets live; a failing new still
# throws std::bad_alloc (nothrow: NULL) under the agent.  Twice: with
# libstdc++'s operators (which call malloc) and, when jemalloc is
# installed, with jemalloc's own, which never reach malloc: kiln's
# operators stand in front of both.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

check_cxx() {
    rm -f "$T/h.trace"
    same_output "$1"
    has "$T/agent.txt" "new of 2\^62 bytes threw bad_alloc"
    has "$T/agent.txt" "nothrow new of 2\^62 bytes gave NULL"
    has "$T/agent.txt" "^heapcxx: 0 misaligned lines"
    heapcheck "$T/h.trace" "$1"
    expect_total end 1
    expect_site _Z12make_widgetsv allocs 500
    expect_site _Z12make_widgetsv bytes 20000
    expect_site _Z12make_widgetsv live 0
    expect_site _Z11make_arraysv allocs 50
    expect_site _Z11make_arraysv bytes 50000
    expect_site _Z11make_arraysv live 0
    expect_site _Z12leak_widgetsv allocs 2
    expect_site _Z12leak_widgetsv live_bytes 80
    expect_site _Z12make_alignedv allocs 20
    expect_site _Z12make_alignedv bytes 2560
    expect_site _Z12make_alignedv live 0
    expect_site _Z12make_nothrowv allocs 10
    expect_site _Z12make_nothrowv bytes 400
    expect_site _Z12make_nothrowv live 0
}

check_cxx "$WL/heapcxx"
if [ -x "$WL/heapcxx-je" ]; then
    check_cxx "$WL/heapcxx-je"
else
    echo "note: jemalloc (libjemalloc-dev) not installed: heapcxx-je not checked" >&2
fi
echo ok
