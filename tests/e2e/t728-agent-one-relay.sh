#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# One relay (issue 15 item 1): with a toggle signal for the CPU profile
# and a dump signal for the heap profile, one thread of kiln's does the
# work both signals ask for ("kiln-relay"; there were two, "kiln-control"
# and "kiln-heapdump"), and both signals still do it: the heap dump, the
# CPU profile's window PATH.0, the exit dump.
. "$(dirname "$0")/lib.sh"
need_agent

env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/sp" KILN_HEAP_SIGNAL=12 \
    KILN_HEAP_SAMPLE=0 KILN_HEAP_INTERVAL=0 KILN_CPU="$T/cpu.prof" KILN_CPU_SIGNAL=10 \
    KILN_LOG=info "$WL/heapserve" > "$T/s.out" 2> "$T/s.err" &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
wait_for "heapserve to get ready" grep -q '^ready$' "$T/s.out"
wait_for "the agent's SIGUSR1 handler" handles_signal $pid 10
wait_for "the agent's SIGUSR2 handler" handles_signal $pid 12
names() { cat /proc/$pid/task/*/comm 2>/dev/null; }
names > "$T/threads"
n=$(grep -c '^kiln-relay$' "$T/threads" || true)
[ "$n" = 1 ] || { cat "$T/threads"; fail "$n kiln-relay threads, want 1"; }
! grep -q '^kiln-control$\|^kiln-heapdump$' "$T/threads" ||
    { cat "$T/threads"; fail "a relay of its own beside kiln-relay"; }
kill -USR2 $pid
wrote_heap() { grep -q "wrote the heap profile '$T/sp.0001.heap'" "$T/s.err"; }
wait_for "heap dump 1" wrote_heap
kill -USR1 $pid
wait_for "CPU profiling to start" grep -q 'CPU profiling started' "$T/s.err"
kill -USR1 $pid
wait_for "cpu.prof.0" test -s "$T/cpu.prof.0"
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ "$rc" = 0 ] || { cat "$T/s.err"; fail "heapserve exited $rc"; }
has "$T/s.out" '^done$'
[ -s "$T/sp.0002.heap" ] || { cat "$T/s.err"; fail "no exit dump sp.0002.heap"; }
"$KILN" top "$T/cpu.prof.0" > /dev/null || fail "cpu.prof.0 does not read"
echo ok
