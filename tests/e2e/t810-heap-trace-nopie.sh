#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program built without PIE that takes malloc's address (its PLT entry
# is then malloc's canonical address, which dlsym(RTLD_DEFAULT) returns)
# is traced in full, and is not told that its allocator is linked
# statically.  Before: the warning, with a full trace.  (A program that
# does link its allocator statically is still told: t804.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"
need readelf

exe=$WL/heapnopie
[ -x "$exe" ] || skip "heapnopie was not built"
# The case this test is for: malloc undefined in the program, with a value.
readelf -W --dyn-syms "$exe" |
    awk '$8 ~ /^malloc(@|$)/ && $7 == "UND" && $2 !~ /^0+$/ { found = 1 } END { exit !found }' ||
    { readelf -W --dyn-syms "$exe" >&2; fail "heapnopie has no canonical PLT entry for malloc"; }
same_output "$exe"
hasnt "$T/agent.err" "cannot see"
heapcheck "$T/h.trace" "$exe"
expect_site nopie_direct allocs 300
expect_site nopie_direct live 300
expect_site nopie_direct live_bytes 30000
expect_site nopie_pointer allocs 200
expect_site nopie_pointer live 0
expect_total end 1
echo ok
