#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Golden outputs: kiln top and the collapsed stacks of the fixtures in
# tests/fixtures (a checked-in ELF with DWARF, a perf script text, a
# pprof, a gperftools profile, a heap trace) compared with `diff -u` to the
# expected files beside them.  Nothing is compiled here, so the results do
# not depend on the installed compiler; tests/fixtures/README.md says how
# each file was made and how to update the expected outputs
# (KILN_GOLDEN_UPDATE=1 rewrites them).
. "$(dirname "$0")/lib.sh"
F=$KILN_SRC/tests/fixtures

# golden FILE.expected CMD...: runs kiln, compares its stdout.
golden() {
    local want=$1; shift
    "$KILN" "$@" > "$T/got" 2> "$T/err" || { cat "$T/err" >&2; fail "kiln $* failed"; }
    if [ "${KILN_GOLDEN_UPDATE:-}" = 1 ]; then cp "$T/got" "$want"; return; fi
    diff -u "$want" "$T/got" || fail "kiln $* differs from $(basename "$want")"
}

# The ELF fixture, sampled: a gperftools profile naming it where it is in
# this checkout (64-bit words: header, records, trailer, maps).  Its
# functions (nm): leaf 0x1129, outer 0x1155 (mix inlined at 0x1160),
# work 0x119b, main 0x11b8; it is mapped at 0x555555554000.
w() { printf "$(printf '%016x' "$1" | sed -E 's/(..)(..)(..)(..)(..)(..)(..)(..)/\\x\8\\x\7\\x\6\\x\5\\x\4\\x\3\\x\2\\x\1/')"; }
B=$((0x555555554000))
{
    w 0; w 3; w 0; w 10000; w 0
    w 6; w 4; w $((B + 0x113d)); w $((B + 0x1187)); w $((B + 0x11a4)); w $((B + 0x11c6))
    w 3; w 3; w $((B + 0x116a)); w $((B + 0x11a4)); w $((B + 0x11c6))
    w 1; w 2; w $((B + 0x11ab)); w $((B + 0x11c6))
    w 0; w 1; w 0
    echo "555555554000-555555559000 r-xp 00000000 08:01 1 $F/golden/golden"
} > "$T/golden.prof"
golden "$F/golden/golden-lines.top.expected" top -n 0 --lines "$T/golden.prof"
golden "$F/golden/golden.collapsed.expected" convert "$T/golden.prof" -o - --to collapsed

# The readers, each on its fixture.  Frames of files that are not in
# the repository (the C library, a deleted binary) would be symbolized
# from this machine's files: --no-local-symbols keeps them unnamed
# ("[libc.so.6]"), and kiln top --addresses gives them a row per address.
golden "$F/pprof/go-cpu.top.expected" top -n 0 "$F/pprof/go-cpu.pb.gz"
golden "$F/pprof/go-labels.collapsed.expected" convert "$F/pprof/go-labels.pb.gz" -o - --to collapsed
golden "$F/perfscript/shares-g.top.expected" top -n 0 "$F/perfscript/shares-g.perf"
golden "$F/perfscript/shares-g.collapsed.expected" convert "$F/perfscript/shares-g.perf" -o - --to collapsed
golden "$F/gperf/shares-250hz.top.expected" top -n 0 --addresses --no-local-symbols "$F/gperf/shares-250hz.prof"
golden "$F/heaptrace/heapbasic.top.expected" top -n 0 --addresses --no-local-symbols "$F/heaptrace/heapbasic.trace.zst"
golden "$F/heaptrace/heapbasic-leaked.collapsed.expected" convert --no-local-symbols \
    --sample-type leaked "$F/heaptrace/heapbasic.trace.zst" -o - --to collapsed
echo ok
