#!/usr/bin/env bash
# ctest-labels: noasan
# A program killed by SIGKILL leaves a readable trace holding what it did
# up to about 100 ms before (here: hold()'s 1000 blocks, 500 ms earlier).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

LD_PRELOAD=$KILN_LIB KILN_HEAP_TRACE=$T/h.trace "$WL/heapkill" > "$T/out" 2> "$T/err" &
pid=$!
for _ in $(seq 100); do grep -q ready "$T/out" && break; sleep 0.1; done
grep -q ready "$T/out" || { kill -9 $pid; fail "heapkill never got ready"; }
sleep 0.3
kill -9 $pid
wait $pid 2>/dev/null
heapcheck "$T/h.trace" "$WL/heapkill"
expect_total end 0
expect_site hold allocs 1000
expect_site hold live_bytes 1000000
# churn() ran for 300 ms: most of it is in the trace.
n=$(site churn allocs)
[ "${n:-0}" -gt 1000 ] || { cat "$T/check.txt"; fail "only ${n:-0} churn allocations in the trace"; }
echo ok
