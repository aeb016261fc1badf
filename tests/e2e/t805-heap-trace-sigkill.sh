#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program killed by SIGKILL leaves a readable trace holding what it did
# before: the trace is written while the program runs (about every
# 100 ms), and the kill comes once a copy of the trace on disk holds
# hold()'s 1000 blocks and churn() at work, however long that takes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

LD_PRELOAD=$KILN_HEAP_PRELOAD KILN_HEAP_TRACE=$T/h.trace "$WL/heapkill" > "$T/out" 2> "$T/err" &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
# A copy of the trace so far (cut anywhere: the reader stops at its last
# whole frame) holds hold()'s 1000 blocks and over 1000 churn() calls.
trace_holds() {
    cp "$T/h.trace" "$T/now.trace" 2>/dev/null &&
        python3 "$KILN_SRC/tests/e2e/heapcheck.py" "$T/now.trace" "$WL/heapkill" > "$T/check.txt" 2>/dev/null &&
        [ "$(site hold allocs)" = 1000 ] && [ "$(site churn allocs)" -gt 1000 ] 2>/dev/null
}
wait_for "heapkill to get ready" grep -q ready "$T/out"
wait_for "the trace to hold hold() and churn()" trace_holds
kill -9 $pid
wait $pid 2>/dev/null
heapcheck "$T/h.trace" "$WL/heapkill"
expect_total end 0
expect_site hold allocs 1000
expect_site hold live_bytes 1000000
# churn() ran until the kill: what the trace held before it still is.
n=$(site churn allocs)
[ "${n:-0}" -gt 1000 ] || { cat "$T/check.txt"; fail "only ${n:-0} churn allocations in the trace"; }
echo ok
