#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln heap on heapbasic: exact per-site numbers for every measure
# (calls, bytes allocated, bytes at the peak, leaked, temporary), the
# summary's totals, the pprof heap profile (go tool pprof reads the
# sample types), the timeline SVG, and kiln top/flame/convert reading the
# trace directly with --sample-type.
. "$(dirname "$0")/lib.sh"
need_agent

expect_status 0 "$KILN" heap -o "$T/b" -- "$WL/heapbasic"
has "$T/out" '^heapbasic: 6 aligned blocks, done$'
sum=$T/err
# 8 MiB + the 5 leaked pages live together at the peak; the rest is libc.
has "$sum" '^calls to allocation functions: [0-9]+ '
has "$sum" '^temporary allocations: [0-9]+ '
has "$sum" '^peak heap memory consumption: [0-9]+ \(8\.0[0-9] MiB\) in [0-9]+ blocks after '
has "$sum" '^total memory leaked: [0-9]+ \(24\.0 KiB\) in 6 blocks$'
has "$sum" 'most memory leaked:'
has "$sum" '20\.0 KiB +83\.3% +5 blocks  leak_here \(heapbasic\.c:[0-9]+\) <- run <- main'
has "$sum" 'most temporary allocations:'
[ -s "$T/b.trace.zst" ] || fail "no trace"
[ -s "$T/b.heap.pb.gz" ] || fail "no pprof profile"
[ -s "$T/b.heap.svg" ] || fail "no timeline"

# Per site, exact, through kiln convert of the trace (leaf = the caller
# of the allocation function).
val() { # MEASURE FUNC: the value of the stack ending in FUNC
    "$KILN" convert "$T/b.trace.zst" --sample-type "$1" -o "$T/m.collapsed" ||
        fail "convert --sample-type $1"
    awk -v f="$2" '{ n = split($1, a, ";"); if (a[n] == f) s += $2 } END { print s + 0 }' "$T/m.collapsed"
}
check() { # MEASURE FUNC WANT
    local v
    v=$(val "$1" "$2")
    [ "$v" = "$3" ] || { cat "$T/m.collapsed" >&2; fail "$2: $1 = $v, want $3"; }
}
check calls alloc_small 1000
check allocated alloc_small 100000
check calls alloc_calloc 100
check allocated alloc_calloc 32000
check calls alloc_grow 30
check allocated alloc_grow 4480
# posix_memalign 1000, aligned_alloc 2048, memalign 3000, valloc 5000,
# pvalloc 6000 -> 8192 (a page multiple), reallocarray 700
check calls alloc_aligned 6
check calls leak_here 5
check leaked leak_here 20480
check peak leak_here 20480
check peak peak_big 8388608
check peak alloc_small 0
check leaked alloc_grow 0
# malloc 64 / realloc (free + alloc) / realloc / free: each freed at once
check temporary alloc_grow 30
check temporary peak_big 1
check temporary alloc_small 0
grep -q '^_start;__libc_start_main;__libc_start_call_main;main;run;peak_big ' "$T/m.collapsed" ||
    fail "peak_big's call chain is not whole"

# kiln top reads the trace: the default measure is allocated
expect_status 0 "$KILN" top -n 3 "$T/b.trace.zst"
has "$T/out" '^Type: allocated$'
has "$T/out" ' peak_big$'
expect_status 0 "$KILN" top --sample-type leaked "$T/b.trace.zst"
has "$T/out" '^Type: leaked$'
has "$T/out" '20kB +83\.33% .* leak_here$'
expect_status 2 "$KILN" top --sample-type inuse_space "$T/b.trace.zst"
has "$T/err" 'allocated'
expect_status 0 "$KILN" flame --sample-type peak "$T/b.trace.zst" -o "$T/flame.svg"
has "$T/flame.svg" 'peak_big'

# the pprof heap profile
if command -v go >/dev/null 2>&1; then
    go tool pprof -sample_index=inuse_space -unit=B -top "$T/b.heap.pb.gz" > "$T/go.txt" 2>&1 ||
        { cat "$T/go.txt"; fail "go tool pprof"; }
    has "$T/go.txt" '20480B +83\.33% .* leak_here$'
    go tool pprof -sample_index=peak_space -unit=B -top "$T/b.heap.pb.gz" > "$T/go.txt" 2>&1
    has "$T/go.txt" '8388608B .* peak_big$'
    go tool pprof -sample_index=alloc_objects -top "$T/b.heap.pb.gz" > "$T/go.txt" 2>&1
    has "$T/go.txt" '^ +1000 .* alloc_small$'
fi

# the timeline: one SVG, the big block's site in the legend
has "$T/b.heap.svg" '^<svg version="1.1" width="1200" height="600"'
has "$T/b.heap.svg" '8.00 MiB peak_big \(heapbasic.c:[0-9]+\)'
has "$T/b.heap.svg" 'peak 8.0[0-9] MiB at '
[ "$(grep -c '</svg>' "$T/b.heap.svg")" = 1 ] || fail "not one SVG document"
exit 0
