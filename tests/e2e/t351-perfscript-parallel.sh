#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf script text read by several threads (docs/design.md, "Reading
# text in parallel"): a 31 MB input from bench's generator, cut into 2 or
# 3 chunks, gives every output byte for byte as read on one thread
# (KILN_THREADS=1): pprof, perf script, Firefox, collapsed, the flame
# graph SVG and the top table.  A bad line deep in the last chunk is
# named by its line in the whole input (the skip warning), and so is the
# first bad line of a mostly bad input (the refusal, exit 2), and a NUL
# byte there (binary input, exit 2).  Frames
# whose srclines differ from one occurrence to the next (the location is
# the first occurrence's) give the serial model too.
. "$(dirname "$0")/lib.sh"
GEN=$KILN_BUILD/tools/gen-perfscript
[ -x "$GEN" ] || fail "no $GEN (built with kiln)"

"$GEN" -n 30000 -k 20000 -s 3 -o "$T/in.perf" 2>/dev/null || fail "gen-perfscript"
size=$(stat -c %s "$T/in.perf")
[ "$size" -gt $((24 << 20)) ] || fail "input of $size bytes: too small for 3 chunks"

# outputs DIR INPUT: every output of INPUT into DIR, KILN_THREADS as set.
outputs() {
    mkdir -p "$1"
    "$KILN" convert -q "$2" -o "$1/p.pb.gz" || fail "convert to pprof"
    "$KILN" convert -q "$2" -o "$1/p.perf" || fail "convert to perf script"
    "$KILN" convert -q "$2" -o "$1/p.fxprof.json" || fail "convert to firefox"
    "$KILN" convert -q "$2" -o "$1/p.collapsed" || fail "convert to collapsed"
    "$KILN" flame -q "$2" -o "$1/p.svg" || fail "flame"
    "$KILN" top -n 40 "$2" >"$1/top.txt" || fail "top"
}
same() {
    local f
    for f in p.pb.gz p.perf p.fxprof.json p.collapsed p.svg top.txt; do
        cmp "$1/$f" "$2/$f" || fail "$f differs between $1 and $2"
    done
}
KILN_THREADS=1 outputs "$T/one" "$T/in.perf"
KILN_THREADS=2 outputs "$T/two" "$T/in.perf"
KILN_THREADS=3 outputs "$T/three" "$T/in.perf"
same "$T/one" "$T/two"
same "$T/one" "$T/three"
grep -q "kv::" "$T/one/top.txt" || fail "top: no kv:: function"

# A frame line at 95% of the input (the last chunk) made unreadable.
lines=$(wc -l <"$T/in.perf")
bad=$(awk -v from=$((lines * 95 / 100)) 'NR >= from && /^\t/ { print NR; exit }' "$T/in.perf")
awk -v bad="$bad" 'NR == bad { print "\tthis is not a frame"; next } { print }' \
    "$T/in.perf" >"$T/bad.perf"
want="skipped 1 malformed line, first at line $bad: not a stack frame"
for n in 1 3; do
    KILN_THREADS=$n expect_status 0 "$KILN" top "$T/bad.perf"
    grep -q "$want" "$T/err" || { cat "$T/err"; fail "KILN_THREADS=$n: no '$want'"; }
    mv "$T/err" "$T/err.$n"
done
cmp "$T/err.1" "$T/err.3" || fail "the warnings differ"

# A NUL byte in the last chunk: the input refused as binary, its line
# named (the chunks look for NUL bytes themselves).
{ head -n $((bad - 1)) "$T/in.perf"; printf 'x\0y\n'; tail -n +"$bad" "$T/in.perf"; } >"$T/nul.perf"
for n in 1 3; do
    KILN_THREADS=$n expect_status 2 "$KILN" top "$T/nul.perf"
    grep -q "line $bad: a NUL byte" "$T/err" || { cat "$T/err"; fail "KILN_THREADS=$n: NUL not at line $bad"; }
done

# Mostly bad: 11 MB of samples then 1.6 M lines of something else, the
# first of them in a later chunk.
awk '{ n += length($0) + 1; print } /^$/ && n > 11000000 { exit }' "$T/in.perf" >"$T/mostly.perf"
first=$(($(wc -l <"$T/mostly.perf") + 1))
awk 'BEGIN { for (i = 0; i < 800000; i++) printf "no sample %d\n\n", i }' >>"$T/mostly.perf"
for n in 1 3; do
    KILN_THREADS=$n expect_status 2 "$KILN" top "$T/mostly.perf"
    grep -q "line $first: not a sample header" "$T/err" ||
        { cat "$T/err"; fail "KILN_THREADS=$n: not refused at line $first"; }
    mv "$T/err" "$T/err.$n"
done
cmp "$T/err.1" "$T/err.3" || fail "the refusals differ"

# perf script -F +srcline: each frame followed by a "file:line" that
# differs at every occurrence (as no real perf prints, but a location
# must not depend on which chunk saw a frame first).
awk '{ print } /^\t/ { printf "  src/f%d.c:%d\n", NR % 7, NR }' "$T/in.perf" |
    head -c 20000000 >"$T/src.perf"
KILN_THREADS=1 outputs "$T/src1" "$T/src.perf"
KILN_THREADS=3 outputs "$T/src3" "$T/src.perf"
same "$T/src1" "$T/src3"

echo "ok"
