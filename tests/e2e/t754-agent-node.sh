#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent's CPU profile (KILN_CPU) of node, whose JIT code lies in
# anonymous memory with frame pointers and no CFI, named in
# /tmp/perf-PID.map (--perf-basic-prof), and whose builtins run from a
# second mapping of /usr/bin/node that node unmaps before it exits.
# Recorded under kiln record -g of the same run (which t528 holds equal
# to perf's): the same leaves within 3 points, no more unnamed ones, and
# as many stacks reaching node::Start (tests/e2e/stackcmp.py).  Before:
# 86% of the agent's leaves were unnamed (no perf map read, the builtins'
# mapping gone at the exit) and 1.3% of its stacks reached node::Start
# (the walk ended at the first JIT caller).
# ctest-labels: noasan
. "$(dirname "$0")/lib.sh"
need_agent
need_record
need_node_perfmap
need python3
JS=$KILN_SRC/tests/workloads/js/hotjit.js
trap 'rm -rf "$T"; [ ! -s "$T/pid" ] || rm -f "/tmp/perf-$(cat "$T/pid").map"' EXIT

expect_status 0 "$KILN" record -q -g -F 999 -o "$T/rec.pb.gz" -- \
    env LD_PRELOAD="$KILN_LIB" KILN_CPU="$T/agent.pb.gz" KILN_CPU_HZ=999 \
    node --perf-basic-prof "$JS" 1200 "$T/pid"
pid=$(cat "$T/pid")
[ -s "$T/agent.pb.gz" ] || { cat "$T/err"; fail "the agent wrote no profile"; }
expect_status 0 "$KILN" convert --to perf-script "$T/rec.pb.gz" -o "$T/rec.txt"
expect_status 0 "$KILN" convert --to perf-script "$T/agent.pb.gz" -o "$T/agent.txt"
python3 "$KILN_SRC/tests/e2e/stackcmp.py" "$pid" "$T/rec.txt" "$T/agent.txt" node::Start \
    3 "kiln record" agent > "$T/cmp" || { cat "$T/cmp" >&2; fail "the agent's stacks of node are not kiln record's"; }
cat "$T/cmp"
# The JIT code by its perf map name, the builtins by theirs.
"$KILN" top -n 0 "$T/agent.pb.gz" > "$T/top" || fail "the agent's profile does not read"
has "$T/top" 'JS:\*kilnHotLoop '
has "$T/top" ' Builtins_FindOrderedHashMapEntry$'
echo ok
