#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HEAP_SIGNAL: each signal dumps PREFIX.NNNN.heap (0001, 0002), and
# the exit dump takes the next number; each dump is the state at its
# time (the cache held all along, the leak growing).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"

env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/sp" KILN_HEAP_SIGNAL=12 KILN_HEAP_SAMPLE=0 \
    KILN_HEAP_INTERVAL=0 KILN_LOG=info "$WL/heapserve" > "$T/s.out" 2> "$T/s.err" &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
# leaks: the number of grow_leak calls heapserve has printed so far.
leaks() { awk '$1=="leaked" { n = $2 } END { print n + 0 }' "$T/s.out"; }
leaked() { [ "$(leaks)" -ge "$1" ]; }
# wrote N: the agent has written dump N (KILN_LOG=info says so after).
wrote() { grep -q "wrote the heap profile '$T/sp.$1.heap'" "$T/s.err"; }
wait_for "heapserve to get ready" grep -q '^ready$' "$T/s.out"
# Each signal once the agent handles it (else SIGUSR2 kills the program).
wait_for "the agent's SIGUSR2 handler" handles_signal $pid 12
kill -USR2 $pid
wait_for "dump 1" wrote 0001
# The leak grows between the dumps: two more grow_leak calls printed after
# dump 1 was written (the first of them may have leaked before it).
wait_for "the leak to grow after dump 1" leaked $(( $(leaks) + 2 ))
kill -USR2 $pid
wait_for "dump 2" wrote 0002
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ "$rc" = 0 ] || { cat "$T/s.err"; fail "heapserve exited $rc"; }
has "$T/s.out" '^done$'
[ -s "$T/sp.0003.heap" ] || { cat "$T/s.err"; fail "no exit dump sp.0003.heap"; }
[ ! -e "$T/sp.0004.heap" ] || fail "a dump too many"
has "$T/s.err" 'heap profile dump 1 \(signal\)'
has "$T/s.err" 'heap profile dump 3 \(exit\)'
for n in 0001 0002 0003; do
    hexpect "$T/sp.$n.heap" inuse_space hold_cache 4194304
    hexpect "$T/sp.$n.heap" inuse_objects hold_cache 64
    hexpect "$T/sp.$n.heap" inuse_space churn 0
done
l1=$(hval "$T/sp.0001.heap" inuse_objects grow_leak)
l3=$(hval "$T/sp.0003.heap" inuse_objects grow_leak)
c1=$(hval "$T/sp.0001.heap" alloc_objects churn)
c3=$(hval "$T/sp.0003.heap" alloc_objects churn)
[ "$l3" -gt "$l1" ] || fail "the leak did not grow between dumps ($l1, $l3)"
[ "$c3" -gt "$c1" ] || fail "the allocations did not grow between dumps ($c1, $c3)"
# the 16 KiB churn blocks: alloc_space is 16384 per allocation
[ "$(hval "$T/sp.0003.heap" alloc_space churn)" = $((c3 * 16384)) ] || fail "churn bytes"
echo ok
