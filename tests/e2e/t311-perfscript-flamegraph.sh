#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The 13 perf script inputs of FlameGraph's own test suite (perf 3.13 to
# 4.13: with and without time, cpu, pid/tid and period; frames indented
# with tabs, spaces or not at all; two events; Java, Node and Rust names
# with spaces, parentheses and brackets; JIT maps and [unknown] frames) are
# all read, and the stacks weigh what stackcollapse-perf.pl made of them
# (its expected outputs, tests/fixtures/perfscript/flamegraph/results/):
# at least 99% of the weight in identical stacks, the same totals but for
# the last sample of an input without a final blank line, which
# stackcollapse-perf.pl drops.  tests/e2e/fgcompare.py says what is
# normalized (the command-name root frame, _[k] marks, FlameGraph's
# shortening of names for display).
. "$(dirname "$0")/lib.sh"
need python3
F=$KILN_SRC/tests/fixtures/perfscript/flamegraph

n=0
for in in "$F"/perf-*.txt; do
    b=$(basename "$in" .txt)
    expect_status 0 "$KILN" convert "$in" -o "$T/$b.collapsed"
    python3 "$KILN_SRC/tests/e2e/fgcompare.py" "$F/results/$b-collapsed-kernel.txt" \
        "$T/$b.collapsed" "$in" || fail "$b: kiln's stacks differ from stackcollapse-perf.pl's"
    n=$((n + 1))
done
[ "$n" = 13 ] || fail "expected 13 FlameGraph inputs, found $n"

# Frames perf could not name are named by their module, one frame per
# module as in FlameGraph: a JIT map, a library, [unknown] without one.
has "$T/perf-numa-stacks-01.collapsed" ";\[perf-10939\.map\](;|_\[j\]|$| )"
hasnt "$T/perf-numa-stacks-01.collapsed" 'perf-10939\.map\+0x|\[unknown\]\+0x'
has "$T/perf-java-stacks-01.collapsed" ";\[libpthread-2\.19\.so\];"
has "$T/perf-dd-stacks-01.collapsed" '^\[unknown\];'
# The address stays in the location: kiln top --addresses tells the JIT
# map's frames apart, kiln top does not.
expect_status 0 "$KILN" top -n 0 "$F/perf-numa-stacks-01.txt"
[ "$(grep -c ' \[perf-10939\.map\]$' "$T/out")" = 1 ] || fail "one row for [perf-10939.map] expected"
expect_status 0 "$KILN" top -n 0 --addresses "$F/perf-numa-stacks-01.txt"
[ "$(grep -Ec '[0-9a-f]{16} \[perf-10939\.map\]$' "$T/out")" -gt 1 ] ||
    fail "kiln top --addresses merged the JIT map's addresses"
echo ok
