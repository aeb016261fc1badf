#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent names JIT code from its process's jitdump file: node
# --perf-prof writes jit-PID.dump in its working directory and maps it
# (no /tmp/perf-PID.map); a KILN_CPU profile of node run so names the hot
# JS function ("JS:*kilnHotLoop FILE:L:C"), as kiln top of a perf.data
# does (t973), where it was an unnamed address before.
# ctest-labels: noasan
. "$(dirname "$0")/lib.sh"
need_agent
need_node_perfprof
LD_PRELOAD="$KILN_LIB" KILN_CPU="$T/node.pb.gz" \
    node --perf-prof "$KILN_SRC/tests/workloads/js/hotjit.js" 300 "$T/pid" > /dev/null ||
    fail "node under the agent failed"
[ -s "$T/jit-$(cat "$T/pid").dump" ] || fail "node wrote no jit-PID.dump"
expect_status 0 "$KILN" top -n 0 "$T/node.pb.gz"
has "$T/out" 'JS:.kilnHotLoop '
echo ok
