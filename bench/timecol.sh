#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/timecol.sh: sample times as a column (issue 27 item 4), before and
# after.  Reads bench's perf script text (bench/gen-perfscript.c, SAMPLES
# samples, STACKS candidate stacks, seed SEED) with BASE (the kiln before
# the column) and KILN (after), each `kiln convert TEXT -o PB.GZ`: wall and
# CPU time, peak RSS (/usr/bin/time), the pprof's size and its model
# samples; then `go tool pprof -top` on each written file (time, RSS).
# KILN's --no-times file too.  Prints a Markdown table; one run each.
# Where KILN's file is byte for byte BASE's (times written as labels, as
# before), go tool pprof is not run again: the row says so.  VARIANTS
# picks rows (default: before after after-no-times).
#
# usage: BASE=/path/to/old/kiln bench/timecol.sh [TEXT]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
BASE=${BASE:?the kiln binary before the time column}
SAMPLES=${SAMPLES:-1000000}
STACKS=${STACKS:-100000}
SEED=${SEED:-1}
OUT=${BENCH_OUT:-$here/out}
mkdir -p "$OUT" || exit 1
text=${1:-$OUT/timecol-$SAMPLES-$STACKS-$SEED.perf}
if [ ! -s "$text" ]; then
    cc -O2 -std=gnu17 -o "$OUT/gen-perfscript" "$here/gen-perfscript.c" -lm || exit 1
    "$OUT/gen-perfscript" -n "$SAMPLES" -k "$STACKS" -s "$SEED" -o "$text" || exit 1
fi
mb=$(( $(stat -c %s "$text") / 1000000 ))

# run NAME CMD...: "wall cpu rss_mb" of one run
run() {
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/err.txt" ||
        { cat "$OUT/err.txt" >&2; echo "failed: $*" >&2; exit 1; }
    awk '{printf "%.1f s | %.1f s | %d MB", $1, $2 + $3, $4 / 1024}' "$OUT/time.txt"
}
samples() {    # pprof samples in a file, by go tool pprof -raw
    go tool pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /: /' | wc -l
}

echo "Input: $text, $mb MB of perf script text."
echo
echo "| kiln | convert: wall | CPU | peak RSS | pprof size | pprof samples | go tool pprof -top: wall | CPU | peak RSS |"
echo "|---|---|---|---|---|---|---|---|---|"
for v in ${VARIANTS:-before after after-no-times}; do
    case $v in
    before) k=$BASE; extra=() ;;
    after) k=$KILN; extra=() ;;
    *) k=$KILN; extra=(--no-times) ;;
    esac
    pb=$OUT/timecol-$v.pb.gz
    c=$(run taskset -c 0 "$k" convert -q "${extra[@]}" "$text" -o "$pb")
    size=$(( $(stat -c %s "$pb") / 1000 ))
    if [ "$v" != before ] && cmp -s "$pb" "$OUT/timecol-before.pb.gz"; then
        echo "| $v | $c | $size kB | (the same bytes as before) | | | |"
        continue
    fi
    n=$(samples "$pb")
    g=$(run go tool pprof -top "$pb")
    echo "| $v | $c | $size kB | $n | $g |"
done
