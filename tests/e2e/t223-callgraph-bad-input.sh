#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln callgraph on bad input: exit status 2 and the same message kiln top
# gives (missing file, text that is no profile, a truncated pprof, a bad
# --diff base, an unknown sample type, a bad regex), and usage errors for
# bad options; no output file is left behind.
. "$(dirname "$0")/lib.sh"

printf 'this is not a profile\n' > "$T/garbage.txt"
head -c 40 "$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz" > "$T/trunc.pb.gz"
printf 'main;a 1\n' > "$T/ok.collapsed"
same_as_top() {  # what ARGS... : kiln top and kiln callgraph give the same error
    local what=$1; shift
    expect_status 2 "$KILN" top "$@"
    cp "$T/err" "$T/top.err"
    [ -s "$T/top.err" ] || fail "$what: kiln top says nothing"
    expect_status 2 "$KILN" callgraph "$@" -o "$T/out.svg"
    cmp -s "$T/top.err" "$T/err" || { diff "$T/top.err" "$T/err" >&2; fail "$what: messages differ"; }
    [ ! -e "$T/out.svg" ] || fail "$what: an output file was written"
    echo "$what: $(head -1 "$T/err")"
}
same_as_top missing "$T/nonexistent.pb.gz"
same_as_top garbage "$T/garbage.txt"
same_as_top truncated "$T/trunc.pb.gz"
same_as_top sample-type --sample-type nosuch "$T/ok.collapsed"
same_as_top focus-regex --focus '(' "$T/ok.collapsed"
has "$T/err" "^kiln: "

# A bad --diff base is read as any input.
expect_status 2 "$KILN" top "$T/garbage.txt"
cp "$T/err" "$T/top.err"
expect_status 2 "$KILN" callgraph "$T/ok.collapsed" --diff "$T/garbage.txt" -o "$T/out.svg"
cmp -s "$T/top.err" "$T/err" || fail "--diff: messages differ"

# Bad options.
for opt in "--nodes x" "--nodes -1" "--node-fraction 2" "--edge-fraction abc" \
           "--format gif" "-o out.jpg" "--no-such-option"; do
    # shellcheck disable=SC2086
    expect_status 2 "$KILN" callgraph "$T/ok.collapsed" $opt
    has "$T/err" "kiln callgraph: "
done
expect_status 2 "$KILN" callgraph
has "$T/err" "no input file"
expect_status 2 "$KILN" callgraph "$T/ok.collapsed" "$T/ok.collapsed"
# Never over an input.
expect_status 2 "$KILN" callgraph "$T/ok.collapsed" --format dot -o "$T/ok.collapsed"
has "$T/err" "refusing to write over the input"
# Help.
expect_status 0 "$KILN" help callgraph
has "$T/out" "usage: kiln callgraph"
has "$T/out" "--node-fraction"
echo ok
