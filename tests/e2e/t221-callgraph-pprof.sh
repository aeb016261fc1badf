#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln callgraph against `go tool pprof -dot` on the same pprof files at
# the same thresholds (--node-fraction/-nodefraction, --edge-fraction/
# -edgefraction, --nodes/-nodecount): the same kept nodes with the same
# total and self values, the same edges with the same weights, residual
# or not, and the same counts of dropped nodes and "top N out of M".
# tests/e2e/callgraph-dot.py compare explains the allowed differences:
# kiln draws direct recursion as a self loop, pprof leaves it out.  Not
# covered here: pprof counts label "nodelets" (pid, thread ...) against
# -nodecount in its DOT output, so on labelled profiles with more nodes
# than --nodes pprof keeps fewer; the profiles below have no labels.
# Nor C++ names already demangled in the profile (perf script input):
# pprof simplifies those (drops the parameter lists and template
# arguments, merging overloads into one node) where kiln, like kiln top,
# keeps the full names; and unsymbolized frames, which kiln names
# "module+0xoffset" as kiln top does and pprof "[module]".
. "$(dirname "$0")/lib.sh"
need python3
need go
go tool pprof -h >/dev/null 2>&1 || skip "go tool pprof does not run"
CG="python3 $KILN_SRC/tests/e2e/callgraph-dot.py"

# Synthetic profiles: a few thousand stacks over 300-400 functions with
# recursion, cycles and shared callees; every pruning step has work.
compare() {  # FILE NODEFRACTION EDGEFRACTION NODES [SAMPLE-INDEX]
    local f=$1 nf=$2 ef=$3 n=$4 si=${5:-}
    "$KILN" callgraph -q "$f" --node-fraction "$nf" --edge-fraction "$ef" \
        --nodes "$n" ${si:+--sample-type "$si"} -o "$T/k.dot" ||
        fail "kiln callgraph $f $nf $ef $n"
    HOME=$T go tool pprof -dot -nodefraction="$nf" -edgefraction="$ef" \
        -nodecount="$n" ${si:+-sample_index="$si"} "$f" > "$T/p.dot" 2>"$T/p.err" ||
        { cat "$T/p.err"; fail "go tool pprof -dot $f"; }
    $CG compare "$T/k.dot" "$T/p.dot" > "$T/cmp" ||
        { cat "$T/cmp"; fail "kiln and pprof differ on $f at $nf $ef $n"; }
    echo "$(basename "$f") $nf $ef $n: $(head -1 "$T/cmp")"
}
for seed in 1 2; do
    python3 "$KILN_SRC/tests/e2e/callgraph-gen.py" $seed 4000 $((200 * seed + 100)) > "$T/s$seed.collapsed"
    expect_status 0 "$KILN" convert -q "$T/s$seed.collapsed" -o "$T/s$seed.pb.gz"
    compare "$T/s$seed.pb.gz" 0.005 0.001 80      # the defaults of both
    compare "$T/s$seed.pb.gz" 0.02 0.01 20
    compare "$T/s$seed.pb.gz" 0.05 0.02 10
    compare "$T/s$seed.pb.gz" 0.001 0.0005 0     # no node limit
done
# The defaults are the same without options.
"$KILN" callgraph -q "$T/s1.pb.gz" -o "$T/k.dot" || fail "kiln callgraph"
HOME=$T go tool pprof -dot "$T/s1.pb.gz" > "$T/p.dot" 2>/dev/null || fail "pprof"
$CG compare "$T/k.dot" "$T/p.dot" > "$T/cmp" || { cat "$T/cmp"; fail "defaults differ"; }
has "$T/k.dot" 'Showing top 80 nodes out of'
# Go's own profiles: mappings, files, lines, two sample types.
for f in go-cpu go-labels; do
    compare "$KILN_SRC/tests/fixtures/pprof/$f.pb.gz" 0.005 0.001 80 samples
done
echo ok
