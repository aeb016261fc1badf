#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A function whose tail GCC split off and inlined back into it
# (tests/workloads/splitpart.c: DWARF says split_work is inlined into
# split_work, at its declaration line, around its loop) is one frame,
# split_work, at the loop's line, in kiln record's profile and in the
# agent's, as libc's write() is "write" with or without libc's DWARF
# (docs/symbols.md).  The unit tests check every address (test-symbolize:
# test_split_part; test-debugcache: test_one_name, libc itself).
. "$(dirname "$0")/lib.sh"
need_agent
need_record

line=$(grep -n 'SPLIT-LINE' "$KILN_SRC/tests/workloads/splitpart.c" | cut -d: -f1)
[ -n "$line" ] || fail "no SPLIT-LINE marker in splitpart.c"

expect_status 0 "$KILN" record -q -F 499 -o "$T/rec.pb.gz" -- "$WL/splitpart" 1
LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/ag.prof CPUPROFILE_FREQUENCY=250 \
    "$WL/splitpart" 1 || fail "splitpart failed under the agent"
for p in rec.pb.gz ag.prof; do
    "$KILN" convert "$T/$p" -o "$T/$p.collapsed" || fail "kiln convert $p"
    has "$T/$p.collapsed" ';main;split_work [0-9]+$'
    hasnt "$T/$p.collapsed" 'split_work;split_work'
    "$KILN" top --lines -n 0 "$T/$p" > "$T/$p.lines"
    has "$T/$p.lines" " split_work .*/splitpart\.c:$line\$"
done
echo ok
