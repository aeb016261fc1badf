#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/serve-heap.sh: kiln serve on a big heap trace (issue 22, "Speed":
# a 100 M-event trace: time to URL < 1 s, to the first page < 5 s, per
# range < 2 s; a request answered while a range is analysed).  Prints a
# markdown section on stdout and writes it to bench/RESULTS-serve-heap.md.
#
# The trace comes from tests/tools/gen-heaptrace (built with kiln, in the
# build tree: EVENTS events over 10 s of one thread, a leak in a hundred,
# 64 stacks; kept in BENCH_OUT and reused while EVENTS is the same).
# Measured from the start of `kiln serve` (wall clock, this machine as it
# is: the load average is printed beside):
#   url        the URL printed (the server answers from then on)
#   status     /api/status answered right after the URL (while reading)
#   first page /api/profiles, /api/flame and /api/timeline answered: what
#              the page needs to draw (they wait for the reading)
# then, once loaded, each range's /api/top (the range analysis, with the
# trace's time index), RUNS times, median; and /api/profiles asked while a
# whole-run range is being analysed (the other request's latency).
#
# Environment: KILN (build/kiln), GEN (build/tools/gen-heaptrace), EVENTS
# (100000000), RUNS (3), BENCH_OUT (bench/out), RESULTS
# (bench/RESULTS-serve-heap.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
KILN=${KILN:-$here/../build/kiln}
GEN=${GEN:-$here/../build/tools/gen-heaptrace}
EVENTS=${EVENTS:-100000000}
RUNS=${RUNS:-3}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-serve-heap.md}
mkdir -p "$OUT"
[ -x "$KILN" ] && [ -x "$GEN" ] || { echo "serve-heap: build kiln and gen-heaptrace first" >&2; exit 1; }
trace=$OUT/serve-heap-$EVENTS.trace.zst
if [ ! -s "$trace" ]; then
    "$GEN" -n "$EVENTS" -t 10000 -o "$trace.tmp" 2> "$OUT/serve-heap-gen.log" || exit 1
    mv "$trace.tmp" "$trace"
fi
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The server's CPU seconds so far (user + system, /proc/PID/stat): on a
# loaded machine wall clock says little, CPU time says what kiln spent.
hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$pid/stat"; }
since_cpu() { awk -v a="$1" -v b="$(cpu)" 'BEGIN { printf "%.2f", b - a }'; }

fifo=$OUT/serve-heap.fifo
rm -f "$fifo"; mkfifo "$fifo"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(now)
"$KILN" serve --http 127.0.0.1:0 "$trace" > "$fifo" 2> "$OUT/serve-heap.err" &
pid=$!
exec 9< "$fifo"
read -r -u 9 _ _ url || { cat "$OUT/serve-heap.err" >&2; exit 1; }
t_url=$(since "$t0")
st=$(curl -s "${url}api/status")
t_status=$(since "$t0")
curl -s -o /dev/null "${url}api/profiles"
curl -s -o /dev/null "${url}api/flame?width=1200"
curl -s -o "$OUT/serve-heap-timeline.json" "${url}api/timeline"
t_page=$(since "$t0")
c_page=$(cpu)
end=$(jq .end "$OUT/serve-heap-timeline.json")
rows=
range() {       # range NAME T0 T1: the median of RUNS /api/top times
    local r ts= cs= c
    for r in $(seq "$RUNS"); do
        # A distinct range each run (+r ns): no answer from the cache.
        c=$(cpu)
        ts="$ts $(curl -s -o "$OUT/serve-heap-top.json" -w '%{time_total}' \
            "${url}api/top?type=allocated&t0=$(($2 + r))&t1=$3")"
        cs="$cs $(since_cpu "$c")"
        jq -e '.total > 0' "$OUT/serve-heap-top.json" > /dev/null ||
            { echo "serve-heap: bad range answer: $(head -c 300 "$OUT/serve-heap-top.json")" >&2; exit 1; }
    done
    rows="$rows| $1 | $(echo $ts | tr ' ' '\n' | median) | $(echo $cs | tr ' ' '\n' | median) | $ts |"$'\n'
}
range "1% (5.0-5.1 s)" $((end / 2)) $((end / 2 + end / 100))
range "10% (1-2 s)" $((end / 10)) $((end / 5))
range "10% (8-9 s)" $((end * 8 / 10)) $((end * 9 / 10))
range "50% (2.5-7.5 s)" $((end / 4)) $((end * 3 / 4))
range "whole run less 1 ns" 1 "$end"
# Another request while a whole-run range is analysed.
curl -s -o /dev/null "${url}api/top?type=allocated&t0=2&t1=$end" &
busy=$!
for _ in $(seq 1000); do
    curl -s "${url}api/status" | grep -q '"jobs":\[{' && break
    sleep 0.01
done
t_other=$(curl -s -o /dev/null -w '%{time_total}' "${url}api/profiles")
wait "$busy"
kill -INT "$pid"; wait "$pid"; exec 9<&-; rm -f "$fifo"
size=$(stat -c %s "$trace")
ok() { awk -v v="$1" -v g="$2" 'BEGIN { print (v < g) ? "met" : "MISSED" }'; }
{
    echo "## kiln serve on a heap trace of $EVENTS events (bench/serve-heap.sh)"
    echo
    echo "Trace: tests/tools/gen-heaptrace, $size bytes ($(cat "$OUT/serve-heap-gen.log" 2>/dev/null))."
    echo "kiln $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs, load average at the start $load0."
    echo
    echo "| from kiln serve's start | seconds | goal |"
    echo "|---|---|---|"
    echo "| URL printed | $t_url | < 1 s: $(ok "$t_url" 1) |"
    echo "| /api/status answered (while reading) | $t_status | |"
    echo "| first page (/api/profiles, /api/flame, /api/timeline) | $t_page | < 5 s: $(ok "$t_page" 5) |"
    echo
    echo "kiln serve's CPU time (user + system) up to the first page: $c_page s."
    echo
    echo "Status right after the URL: \`$st\`"
    echo
    echo "| range (of the 10 s run), /api/top | median s | median CPU s | runs (s) |"
    echo "|---|---|---|---|"
    printf '%s' "$rows"
    echo
    echo "Goal: per range < 2 s.  /api/profiles while a whole-run range was analysed: $t_other s."
    echo
    echo "kiln serve's own lines:"
    echo
    sed 's/^/    /' "$OUT/serve-heap.err"
} | tee "$RESULTS"
