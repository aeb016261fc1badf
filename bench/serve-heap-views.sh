#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/serve-heap-views.sh: kiln serve's heap views on a big heap trace
# (issue 26 item 6: "a range or filter answers in well under a second on
# a 100 M-event trace").  Prints a markdown section on stdout and writes
# it to bench/RESULTS-serve-heap-views.md.
#
# The trace comes from tests/tools/gen-heaptrace (EVENTS events over 10 s
# of one thread, a leak in a hundred; kept in BENCH_OUT and reused).  Once
# kiln serve has read it, each request is timed twice: wall clock (curl's
# time_total) and the CPU seconds the server spent on it (its utime +
# stime from /proc/PID/stat before and after): on a crowded machine the
# CPU time is the figure that says what the request costs.
#
# Environment: KILN (build/kiln), GEN (build/tools/gen-heaptrace), EVENTS
# (100000000), BENCH_OUT (bench/out), RESULTS
# (bench/RESULTS-serve-heap-views.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
KILN=${KILN:-$here/../build/kiln}
GEN=${GEN:-$here/../build/tools/gen-heaptrace}
EVENTS=${EVENTS:-100000000}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-serve-heap-views.md}
mkdir -p "$OUT"
[ -x "$KILN" ] && [ -x "$GEN" ] || { echo "serve-heap-views: build kiln and gen-heaptrace first" >&2; exit 1; }
command -v jq > /dev/null || { echo "serve-heap-views: needs jq" >&2; exit 1; }
trace=$OUT/serve-heap-$EVENTS.trace.zst
if [ ! -s "$trace" ]; then
    "$GEN" -n "$EVENTS" -t 10000 -o "$trace.tmp" 2> "$OUT/serve-heap-gen.log" || exit 1
    mv "$trace.tmp" "$trace"
fi
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }

fifo=$OUT/serve-heap-views.fifo
rm -f "$fifo"; mkfifo "$fifo"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$KILN" serve --http 127.0.0.1:0 "$trace" > "$fifo" 2> "$OUT/serve-heap-views.err" &
pid=$!
exec 9< "$fifo"
read -r -u 9 _ _ url || { cat "$OUT/serve-heap-views.err" >&2; exit 1; }
curl -s -o "$OUT/shv-line.json" "${url}api/timeline"
load_cpu=$(cpu "$pid")
end=$(jq .heap.span "$OUT/shv-line.json")
S=1000000000
rows=
ask() {         # ask WHAT PATH: one row
    local c0 c1 wall
    c0=$(cpu "$pid")
    wall=$(curl -s -o "$OUT/shv-body.json" -w '%{time_total}' "${url}api/$2")
    c1=$(cpu "$pid")
    jq -e . "$OUT/shv-body.json" > /dev/null ||
        { echo "serve-heap-views: bad answer to $2: $(head -c 300 "$OUT/shv-body.json")" >&2; exit 1; }
    local what
    what=$(jq -r 'if .count != null then "\(.count) blocks, read \(.bytes_read) bytes" else "\(.buckets) buckets, \(.sites | length) sites" end' "$OUT/shv-body.json")
    rows="$rows| $1 | \`$2\` | $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') | $wall | $what |"$'\n'
}
ask "per-site chart, whole run" "heap/sites?n=8"
ask "per-site chart, 10% range" "heap/sites?n=8&t0=$((end / 10))&t1=$((end / 5))"
ask "live at the end, lifetime >= 1 s" "heap/allocs?alive=end&life_min=$S"
ask "live at the end, size 1-64 B" "heap/allocs?alive=end&size_min=1&size_max=64"
ask "live at 50%" "heap/allocs?alive=$((end / 2))"
ask "live at 50%, lifetime <= 0.1 s" "heap/allocs?alive=$((end / 2))&life_max=$((S / 10))"
ask "allocated in a 1% range" "heap/allocs?t0=$((end / 2))&t1=$((end / 2 + end / 100))"
ask "allocated in a 1% range, lifetime >= 1 s" "heap/allocs?t0=$((end / 2))&t1=$((end / 2 + end / 100))&life_min=$S"
ask "allocated in a 10% range" "heap/allocs?t0=$((end / 10))&t1=$((end / 5))"
ask "whole run, size >= 1 KiB (a full pass)" "heap/allocs?size_min=1024"
kill -INT "$pid"; wait "$pid"; exec 9<&-; rm -f "$fifo"
size=$(stat -c %s "$trace")
{
    echo "## kiln serve's heap views on a heap trace of $EVENTS events (bench/serve-heap-views.sh)"
    echo
    echo "Trace: tests/tools/gen-heaptrace, $size bytes ($(cat "$OUT/serve-heap-gen.log" 2>/dev/null))."
    echo "kiln $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs, load average at the start $load0."
    echo "Loading (one analysis: profile, memory over time, time index, heap views): $load_cpu CPU s."
    echo
    echo "| request | path | CPU s | wall s | answer |"
    echo "|---|---|---|---|---|"
    printf '%s' "$rows"
    echo
    echo "kiln serve's own lines:"
    echo
    sed 's/^/    /' "$OUT/serve-heap-views.err"
} | tee "$RESULTS"
