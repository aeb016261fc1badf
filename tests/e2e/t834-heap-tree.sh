#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln heap names every trace the process tree wrote (issue 22: `kiln heap
# -- g++` summarised the driver and never mentioned the compiler's trace).
# heapfork's child traces into PREFIX.trace.zst.PID: the closing lines
# name that file, which holds child_work's allocations; a file of that
# shape left by an earlier run is not named; without children, no such
# lines.
. "$(dirname "$0")/lib.sh"
need_agent

# An earlier run's child trace (old modification time): not this run's.
echo stale > "$T/h.trace.zst.4"
touch -d '2001-01-01' "$T/h.trace.zst.4"
expect_status 0 "$KILN" heap -o "$T/h" -- "$WL/heapfork"
has "$T/err" "1 other process of the tree traced its heap"
grep -o "'$T/h\.trace\.zst\.[0-9]*'" "$T/err" | tr -d "'" > "$T/named"
[ "$(wc -l < "$T/named")" -eq 1 ] || { cat "$T/err"; fail "want one trace named"; }
child=$(cat "$T/named")
[ "$child" != "$T/h.trace.zst.4" ] || fail "the earlier run's file was named"
[ -s "$child" ] || fail "'$child' named but not there"
"$KILN" top -n 0 --sample-type allocated "$child" > "$T/top.txt" ||
    fail "kiln top cannot read '$child'"
has "$T/top.txt" "child_work"
hasnt "$T/top.txt" "parent_work"
# One process: nothing more is said.
expect_status 0 "$KILN" heap -o "$T/b" -- "$WL/heapbasic"
hasnt "$T/err" "other process"
echo ok
