#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln heap of node --perf-prof: the JIT-compiled JS function's frames
# named from the jitdump file node writes and maps (jit-PID.dump in its
# working directory, found through the trace's maps), as t840 names them
# from /tmp/perf-PID.map.  Before: the trace of such a run had no JS name.
# ctest-labels: noasan
. "$(dirname "$0")/lib.sh"
need_agent
need_node_perfprof
expect_status 0 "$KILN" heap -o "$T/h" -- node --perf-prof \
    "$KILN_SRC/tests/workloads/js/allocjit.js" 300 "$T/pid"
[ -s "$T/jit-$(cat "$T/pid").dump" ] || fail "node wrote no jit-PID.dump"
expect_status 0 "$KILN" convert --to perf-script "$T/h.trace.zst" -o "$T/h.txt"
grep 'NodeArrayBufferAllocator::Allocate' -A40 "$T/h.txt" | grep -q 'JS:.kilnMakeBuffers ' ||
    { head -c 3000 "$T/h.txt" >&2; fail "no allocation's stack names JS kilnMakeBuffers"; }
echo ok
