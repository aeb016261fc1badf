#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record on C++ (demangled names from DWARF and the symbol table) and
# on code inlined twice (inline frames with their own lines).
. "$(dirname "$0")/lib.sh"
need_record

expect_status 0 "$KILN" record -q -F 999 -o "$T/cxx.pb.gz" -- "$WL/cxxnames" 1
"$KILN" top -n 0 "$T/cxx.pb.gz" > "$T/cxx.txt"
has "$T/cxx.txt" "kiln_wl::Counter::step\(unsigned long\)$"
hasnt "$T/cxx.txt" "_ZN7kiln_wl"

expect_status 0 "$KILN" record -q -F 999 -o "$T/inl.pb.gz" -- "$WL/inlined" 1
"$KILN" convert "$T/inl.pb.gz" -o "$T/inl.collapsed"
has "$T/inl.collapsed" "(^|;)main;(run;)?outer_loop;mix_middle;mix_inner [0-9]+$"
# The inner frame's line is the marked line of the source.
inner=$(grep -n 'INNER-LINE' "$KILN_SRC/tests/workloads/inlined.c" | cut -d: -f1)
"$KILN" top -n 0 --lines "$T/inl.pb.gz" > "$T/lines.txt"
has "$T/lines.txt" "mix_inner .*inlined.c:$inner\$"
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -traces "$T/inl.pb.gz" > "$T/traces.txt" 2>/dev/null
    has "$T/traces.txt" "mix_inner \(inline\)"
fi
echo ok
