#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln callgraph on a profile with a known call structure: recursion (fib
# calls itself), a function reached from two callers (helper), the nodes'
# total and self and the edges' percentages as known within 1 point,
# every node reachable from a root, the DOT accepted by graphviz's dot,
# SVG/PNG/PDF drawn in process, residual (dashed) edges where --nodes
# removes a frame, --node-fraction, --focus/--ignore, --lines,
# --sample-type and --diff.
. "$(dirname "$0")/lib.sh"
need python3
CG="python3 $KILN_SRC/tests/e2e/callgraph-dot.py"

# total 1000: percentages are the values / 10.
cat > "$T/known.collapsed" <<'IN'
main;parse;lex 100
main;parse 50
main;compute;fib;fib;fib 300
main;compute;fib 100
main;compute;helper 200
main;render;helper 150
main;render 100
IN
expect_status 0 "$KILN" callgraph "$T/known.collapsed" -o "$T/k.dot"
has "$T/err" "wrote '.*k.dot' \(7 nodes, 8 edges\)"
$CG list "$T/k.dot" > "$T/list" || fail "cannot read the DOT"
# Checks "node NAME TOTAL% SELF%" or "edge A B PCT% [residual|direct]"
# against the listing $1 (values of 1000), within 1 point.
node_is() {
    awk -v n="$2" -v t="$3" -v s="$4" '$1=="node" && $2==n {
        f=1; d1=$3/10-t; d2=$4/10-s; if (d1<0) d1=-d1; if (d2<0) d2=-d2
        if (d1>1 || d2>1) { print "node " n ": total " $3/10 "% self " $4/10 "%, want " t "% " s "%"; exit 1 } }
        END { if (!f) { print "no node " n; exit 1 } }' "$1" || { cat "$1"; fail "node $2"; }
}
edge_is() {
    awk -v a="$2" -v b="$3" -v w="$4" -v k="${5:-direct}" '$1=="edge" && $2==a && $3==b {
        f=1; d=$4/10-w; if (d<0) d=-d
        if (d>1 || $5!=k) { print "edge " a " -> " b ": " $4/10 "% " $5 ", want " w "% " k; exit 1 } }
        END { if (!f) { print "no edge " a " -> " b; exit 1 } }' "$1" || { cat "$1"; fail "edge $2 -> $3"; }
}
node_is "$T/list" main 100 0
node_is "$T/list" compute 60 0
node_is "$T/list" fib 40 40
node_is "$T/list" helper 35 35
node_is "$T/list" render 25 10
node_is "$T/list" parse 15 5
node_is "$T/list" lex 10 10
edge_is "$T/list" main compute 60
edge_is "$T/list" compute fib 40
edge_is "$T/list" fib fib 30          # recursion: once per stack, not 3 times
edge_is "$T/list" compute helper 20
edge_is "$T/list" render helper 15
edge_is "$T/list" main render 25
edge_is "$T/list" main parse 15
edge_is "$T/list" parse lex 10
[ "$(grep -c '^edge' "$T/list")" -eq 8 ] || { cat "$T/list"; fail "want 8 edges"; }
$CG reach "$T/k.dot" || fail "a node is not reachable from a root"
has "$T/k.dot" 'label="helper\\ntotal 35.00% \(350\)\\nself 35.00% \(350\)"'
has "$T/k.dot" 'N[0-9]+ -> N[0-9]+ \[label=" 60.00%"'
has "$T/k.dot" 'Showing 7 nodes accounting for 1000, 100.00% of 1000'
# gprof2dot's scale: main (100%) saturated red, lex (10%) blue.
has "$T/k.dot" 'N[0-9]+ \[label="main\\n.*fillcolor="#ff0000"'
has "$T/k.dot" 'N[0-9]+ \[label="lex\\n.*fillcolor="#0d3b80"'
if command -v dot >/dev/null; then
    dot -Tcanon "$T/k.dot" > "$T/canon.dot" || fail "graphviz's dot rejects the DOT"
fi

# Drawn in process: SVG, PNG, PDF.
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" -o "$T/k.svg"
has "$T/k.svg" '<svg'
for n in main compute fib helper render parse lex; do
    has "$T/k.svg" ">$n</text>"
done
has "$T/k.svg" 'stroke-dasharray|class="edge"'
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" -o "$T/k.png"
[ "$(head -c 8 "$T/k.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "k.png is not a PNG"
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" -o "$T/k.pdf"
[ "$(head -c 5 "$T/k.pdf")" = "%PDF-" ] || fail "k.pdf is not a PDF"
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --format dot -o -
has "$T/out" '^digraph'
# A name without an extension (a device, a FIFO) gets SVG.
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" -o /dev/stdout
has "$T/out" '</svg>'
# The default output name.
(cd "$T" && "$KILN" callgraph -q known.collapsed) || fail "default output"
[ -s "$T/known.callgraph.svg" ] || fail "no known.callgraph.svg"

# --nodes 6: parse has the lowest entropy score (a pass-through), so it
# goes and main reaches lex through a residual (dashed) edge.
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --nodes 6 -o "$T/n6.dot"
$CG list "$T/n6.dot" > "$T/n6"
grep -q '^node parse ' "$T/n6" && fail "parse kept with --nodes 6"
edge_is "$T/n6" main lex 10 residual
node_is "$T/n6" lex 10 10
has "$T/n6.dot" 'style=dashed tooltip="main -> lex \(100, through removed frames\)"'
has "$T/n6.dot" 'Showing top 6 nodes out of 7'
$CG reach "$T/n6.dot" || fail "a node is not reachable with --nodes 6"

# --node-fraction 0.12 drops lex (10%); --edge-fraction 0.16 drops the
# edges below 16% (and says how many).
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --node-fraction 0.12 -o "$T/nf.dot"
has "$T/nf.dot" 'Dropped 1 node \(total < 120\)'
hasnt "$T/nf.dot" 'label="lex'
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --edge-fraction 0.16 -o "$T/ef.dot"
$CG list "$T/ef.dot" > "$T/ef"
[ "$(grep -c "^edge" "$T/ef")" -eq 5 ] || { cat "$T/ef"; fail "want the 5 edges of 16% and more (fib -> fib too)"; }
has "$T/ef.dot" 'Dropped 3 edges \(weight < 160\)'

# --focus and --ignore as kiln top.
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --focus '^parse$' -o "$T/f.dot"
$CG list "$T/f.dot" > "$T/f"
[ "$(grep -c '^node' "$T/f")" -eq 3 ] || { cat "$T/f"; fail "focus: want main, parse, lex"; }
has "$T/f.dot" 'label="lex\\ntotal 66.67% \(100\)\\nself 66.67% \(100\)'
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --ignore helper -o "$T/i.dot"
hasnt "$T/i.dot" 'label="helper'

# --diff: helper grew (35% -> from 15%), lex shrank (10% from 30%).
cat > "$T/base.collapsed" <<'IN'
main;parse;lex 300
main;parse 50
main;compute;fib 400
main;compute;helper 100
main;render;helper 50
main;render 100
IN
expect_status 0 "$KILN" callgraph -q "$T/known.collapsed" --diff "$T/base.collapsed" -o "$T/d.dot"
has "$T/d.dot" 'label="helper\\n.*\+20.00 points" .*fillcolor="#f5[0-9a-f]{2}([0-9a-f]{2})"'
grep -E 'label="helper' "$T/d.dot" | grep -Eq 'fillcolor="#f53232"' || fail "helper (the biggest growth) is not full red"
grep -E 'label="lex' "$T/d.dot" | grep -Eq 'fillcolor="#[0-9a-e][0-9a-f][0-9a-f]{2}f5"' || fail "lex (shrank) is not blue"
has "$T/d.dot" 'red grew, blue shrank'
# A heap that shrank (2000 B -> 1000 B) is compared by value, as go tool
# pprof -base subtracts: site_a lost 100 B (blue), though its share grew.
MKPPROF_TYPE=inuse_space/bytes python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/hb.pb.gz" \
    site_a=a.c:1=1000 site_b=b.c:2=1000
MKPPROF_TYPE=inuse_space/bytes python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/hn.pb.gz" \
    site_a=a.c:1=900 site_b=b.c:2=100
expect_status 0 "$KILN" callgraph -q "$T/hn.pb.gz" --diff "$T/hb.pb.gz" -o "$T/h.dot"
has "$T/h.dot" 'label="site_a\\n.*-100B since the base" .*fillcolor="#[0-9a-e][0-9a-f][0-9a-f]{2}f5"'
has "$T/h.dot" 'change of total value against the base'

# --lines and --sample-type on a Go pprof profile with two types.
G=$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz
expect_status 0 "$KILN" callgraph -q "$G" --lines -o "$T/l.dot"
has "$T/l.dot" 'label="main.spin\\nmain.go:[0-9]+\\n'
expect_status 0 "$KILN" callgraph -q "$G" --sample-type samples -o "$T/s.dot"
has "$T/s.dot" 'Type: samples'
expect_status 0 "$KILN" callgraph -q "$G" -o "$T/c.dot"
has "$T/c.dot" 'Type: cpu\\lTotal: 1s'
echo ok
