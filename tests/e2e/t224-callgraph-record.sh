#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln callgraph on a real program recorded with kiln record: the
# workload tests/workloads/callgraph.c has a known call structure
# (recursion in fib, helper reached from compute and from render); the
# nodes' total/self and the edges' percentages are the designed ones
# within 3 points (sampling noise: about 6000 samples), every node is
# reachable from a root, and nodes name their module.
. "$(dirname "$0")/lib.sh"
need python3
need_record
CG="python3 $KILN_SRC/tests/e2e/callgraph-dot.py"

expect_status 0 "$KILN" record -q -F 1999 -o "$T/cg.pb.gz" -- "$WL/callgraph" 3
expect_status 0 "$KILN" callgraph -q "$T/cg.pb.gz" --sample-type samples -o "$T/cg.dot"
$CG list "$T/cg.dot" > "$T/list"
total=$(awk '$1=="node" && $2=="main" { print $3 }' "$T/list")
[ -n "$total" ] && [ "$total" -gt 1000 ] || { cat "$T/list"; fail "main has ${total:-no} samples"; }
# node NAME TOTAL% SELF% / edge A B PCT%, against main's total, ±3 points.
node_is() {
    awk -v n="$1" -v t="$2" -v s="$3" -v T="$total" '$1=="node" && $2==n {
        f=1; d1=100*$3/T-t; d2=100*$4/T-s; if (d1<0) d1=-d1; if (d2<0) d2=-d2
        if (d1>3 || d2>3) { printf "node %s: total %.1f%% self %.1f%%, want %s%% %s%%\n", n, 100*$3/T, 100*$4/T, t, s; exit 1 } }
        END { if (!f) { print "no node " n; exit 1 } }' "$T/list" || { cat "$T/list"; fail "node $1"; }
}
edge_is() {
    awk -v a="$1" -v b="$2" -v w="$3" -v T="$total" '$1=="edge" && $2==a && $3==b {
        f=1; d=100*$4/T-w; if (d<0) d=-d
        if (d>3) { printf "edge %s -> %s: %.1f%%, want %s%%\n", a, b, 100*$4/T, w; exit 1 } }
        END { if (!f) { print "no edge " a " -> " b; exit 1 } }' "$T/list" || { cat "$T/list"; fail "edge $1 -> $2"; }
}
node_is compute 60 0
node_is fib 40 40
node_is helper 35 35
node_is render 25 10
node_is parse 15 5
node_is lex 10 10
edge_is main compute 60
edge_is compute fib 40
edge_is fib fib 40
edge_is compute helper 20
edge_is render helper 15
edge_is main render 25
edge_is main parse 15
edge_is parse lex 10
$CG reach "$T/cg.dot" || fail "a node is not reachable from a root"
has "$T/cg.dot" 'label="fib\\ncallgraph\\ntotal '
# And drawn: the SVG names them.
expect_status 0 "$KILN" callgraph -q "$T/cg.pb.gz" -o "$T/cg.svg"
for n in main compute fib helper render parse lex; do
    has "$T/cg.svg" ">$n</text>"
done
echo ok
