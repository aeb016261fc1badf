#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real profile: `perf record -g` of the shares workload through
# `perf script`, drawn by `kiln flame`: burn_a has about 60% of the width,
# times show in milliseconds, and colours tell the program's code (warm)
# from the C library (teal) and the kernel (blue).
. "$(dirname "$0")/lib.sh"
need_perf

perf_record -q -F 999 -g -o "$T/perf.data" -- "$WL/shares" 1 >/dev/null 2>&1 ||
    fail "perf record failed"
perf script -i "$T/perf.data" > "$T/x.perf" 2>/dev/null || fail "perf script failed"
expect_status 0 "$KILN" flame "$T/x.perf" -o "$T/x.svg"

# Share of a frame (summed over its boxes) from the tooltips.
share() {
    grep -o "<title>$2 ([^<]*%)</title>" "$1" |
        sed 's/.*, \([0-9.]*\)%)<\/title>$/\1/' | awk '{ s += $1 } END { print s + 0 }'
}
fill_of() {
    grep -o "<title>$2 ([^<]*</title><rect [^>]*>" "$1" | head -1 |
        sed -n 's/.*fill="rgb(\([0-9]*\),\([0-9]*\),\([0-9]*\))".*/\1 \2 \3/p'
}
pa=$(share "$T/x.svg" burn_a); pb=$(share "$T/x.svg" burn_b)
within "$pa" 60 6 || fail "burn_a has $pa% of the graph, expected about 60%"
within "$pb" 30 6 || fail "burn_b has $pb% of the graph, expected about 30%"
has "$T/x.svg" '<title>main \([0-9,]+\.[0-9]{2} ms, '
has "$T/x.svg" '>cpu/nanoseconds, total [0-9,.]+ ms</text>'

read -r r g b <<< "$(fill_of "$T/x.svg" burn_a)"
[ "${r:-0}" -ge 205 ] && [ "${b:-99}" -le 55 ] || fail "burn_a (program code) is rgb($r,$g,$b), not warm"
lib=$(grep -o '<title>__libc_start[a-z_]* (' "$T/x.svg" | head -1 | sed 's/<title>\(.*\) (/\1/')
if [ -n "$lib" ]; then
    read -r r g b <<< "$(fill_of "$T/x.svg" "$lib")"
    [ "$g" -ge 165 ] && [ "$r" -lt 120 ] || fail "$lib (libc) is rgb($r,$g,$b), not teal"
fi
# Kernel frames, if perf recorded any (interrupts during the run).
kern=$(grep -o '<title>\(asm_\|__schedule\|irqentry\)[a-z_]* (' "$T/x.svg" | head -1 | sed 's/<title>\(.*\) (/\1/')
if [ -n "$kern" ]; then
    read -r r g b <<< "$(fill_of "$T/x.svg" "$kern")"
    [ "$b" -ge 215 ] && [ "$r" -lt 180 ] || fail "$kern (kernel) is rgb($r,$g,$b), not blue"
fi
exit 0
