#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln heap passes the command's exit status through (128+N when killed
# by signal N), forwards SIGTERM to it, analyses the trace a SIGKILLed
# program left (cut at its last complete frame, the leak counted as live),
# and refuses bad options with status 2.
. "$(dirname "$0")/lib.sh"
need_agent

expect_status 7 "$KILN" heap -q -o "$T/s" -- sh -c 'exit 7'
has "$T/err" '^calls to allocation functions: '
expect_status 137 "$KILN" heap -o "$T/k" -- sh -c 'kill -9 $$'
has "$T/err" 'was killed by signal 9'
expect_status 127 "$KILN" heap -o "$T/n" -- /nonexistent/program
has "$T/err" "cannot run '/nonexistent/program'"
expect_status 2 "$KILN" heap --sample=-1 -- true
has "$T/err" "bad --sample '-1'"
expect_status 2 "$KILN" heap
has "$T/err" 'nothing to run'

# heapkill holds 1000 x 1000 bytes, then churns until killed
"$KILN" heap -o "$T/h" -- "$WL/heapkill" > "$T/kill.out" 2> "$T/kill.err" &
kp=$!
wait_for "heapkill to start" grep -q ready "$T/kill.out"
pkill_target=$(child_running "$kp" "$WL/heapkill") || fail "no heapkill process under kiln"
trap 'kill -9 $pkill_target 2>/dev/null; rm -rf "$T"' EXIT
# hold()'s 1000000 bytes are live in the collapsed leaked profile $1.
hold_live() { awk '{ n = split($1, a, ";"); if (a[n] == "hold") s += $2 } END { exit !(s == 1000000) }' "$1"; }
# The kill comes once the trace on disk holds hold()'s blocks (a copy of
# it: cut anywhere, it reads to its last whole frame).
trace_holds() {
    cp "$T/h.trace.zst" "$T/now.trace.zst" 2>/dev/null &&
        "$KILN" convert "$T/now.trace.zst" --sample-type leaked -o "$T/now.collapsed" 2>/dev/null &&
        hold_live "$T/now.collapsed"
}
wait_for "the trace to hold hold()'s blocks" trace_holds
# SIGKILL the program (not kiln): its trace stops mid-stream
kill -9 "$pkill_target"
rc=0; wait "$kp" || rc=$?
[ "$rc" -eq 137 ] || { cat "$T/kill.err"; fail "kiln heap exited $rc, want 137"; }
has "$T/kill.err" 'no normal exit'
"$KILN" convert "$T/h.trace.zst" --sample-type leaked -o "$T/leak.collapsed" || fail "convert"
hold_live "$T/leak.collapsed" || { cat "$T/leak.collapsed"; fail "hold's 1000000 bytes are not live at the end"; }

# SIGTERM to kiln reaches the program
"$KILN" heap -o "$T/t" -- "$WL/heapkill" > "$T/term.out" 2> "$T/term.err" &
kp=$!
wait_for "heapkill to start" grep -q ready "$T/term.out"
kill -TERM "$kp"
rc=0; wait "$kp" || rc=$?
[ "$rc" -eq 143 ] || { cat "$T/term.err"; fail "kiln heap exited $rc after SIGTERM, want 143"; }
has "$T/term.err" 'killed by signal 15'
exit 0
