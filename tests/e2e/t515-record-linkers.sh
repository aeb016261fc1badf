#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The toolchain matrix: the shares workload linked by GNU ld, gold, LLD
# and mold, PIE and not, with and without -z separate-code.  LLD and mold
# start the code segment inside the read-only segment's last page, where
# a load bias taken from the first segment holding the mapping's page is a
# page off ([burn-lld] instead of burn_a).  In each cell: kiln record
# gives the 60/30/10 split with whole chains, and kiln's reading of perf's
# perf.data of the same program equals perf report (names, counts, shares
# within a point).  The LLD cell also through --call-graph dwarf, the
# agent (CPUPROFILE) and kiln heap.  A linker missing here is a loud skip.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_record
need_perf
need gcc
for ld in ld.bfd ld.gold ld.lld mold; do
    need "$ld"
done

src=$KILN_SRC/tests/workloads
# build NAME LINKER FLAGS...: the shares workload as CMake builds it.
build() {
    local name=$1 ld=$2
    shift 2
    gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fuse-ld="$ld" "$@" \
        -o "$T/$name" "$src/shares.c" 2>"$T/cc.err" ||
        { cat "$T/cc.err" >&2; fail "cannot link $name with $ld"; }
}
# cell NAME: kiln record and perf's perf.data of program NAME.
cell() {
    local name=$1
    expect_status 0 "$KILN" record -q -F 999 -o "$T/$name.pb.gz" -- "$T/$name" 1
    check_shares "$T/$name.pb.gz" 3
    check_chains "$T/$name.pb.gz"
    hasnt "$T/split.txt" "\\[$name\\]"
    perf_record -q -F 999 -g -o "$T/$name.data" -- "$T/$name" 1 >/dev/null 2>&1 ||
        fail "perf record of $name failed"
    compare_with_perf "$T/$name.data"
    echo "$name: ok"
}

build bfd bfd
build bfd-nopie bfd -no-pie
build bfd-noseparate bfd -Wl,-z,noseparate-code
build gold gold
build lld lld
build lld-nopie lld -no-pie
build lld-separate lld -Wl,-z,separate-code
build mold mold
build mold-nopie mold -no-pie
# The layout the matrix is for: LLD's code segment is not page-aligned.
readelf -lW "$T/lld" | awk '$1 == "LOAD" && / R E / && $2 !~ /000$/ { ok = 1 } END { exit !ok }' ||
    fail "LLD's code segment starts on a page here: the test no longer covers its layout"
for c in bfd bfd-nopie bfd-noseparate gold lld lld-nopie lld-separate mold mold-nopie; do
    cell "$c"
done

# LLD through the other paths.
expect_status 0 "$KILN" record -q -F 999 --call-graph dwarf -o "$T/dw.pb.gz" -- "$T/lld" 1
check_shares "$T/dw.pb.gz" 3
check_chains "$T/dw.pb.gz"
if [ "${KILN_SANITIZE:-OFF}" != ON ] && [ -e "$KILN_LIB" ]; then
    # The agent's timer is tick-driven here (shares alias with it: t700's
    # margin): its names and chains are what matter in this test.
    LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/agent.pb.gz "$T/lld" 1 ||
        fail "the LLD program failed under the agent"
    check_chains "$T/agent.pb.gz"
    "$KILN" top -n 3 "$T/agent.pb.gz" > "$T/agent.top"
    for f in burn_a burn_b burn_c; do has "$T/agent.top" " $f\$"; done
    hasnt "$T/agent.top" "lld\\]"
    gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fuse-ld=lld \
        -o "$T/heapbasic-lld" "$src/heapbasic.c" || fail "cannot link heapbasic with lld"
    expect_status 0 "$KILN" heap -o "$T/h" -- "$T/heapbasic-lld"
    has "$T/err" '20\.0 KiB +83\.3% +5 blocks  leak_here \(heapbasic\.c:[0-9]+\) <- run <- main'
    "$KILN" convert "$T/h.trace.zst" -o "$T/h.collapsed" || fail "kiln convert of the heap trace"
    has "$T/h.collapsed" '(^|;)main;run;alloc_small '
    hasnt "$T/h.collapsed" '\[heapbasic-lld\]'
fi
echo ok
