#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/stat.sh: the cost of `kiln stat` against `perf stat`.
#   1. Overhead on a CPU-bound program (bench/cpuloop.c, fixed work, about
#      3 s): wall time of the bare program, under `kiln stat` and under
#      `perf stat`, default events for both; RUNS runs, interleaved (bare,
#      kiln, perf, bare, ...) so that load elsewhere spreads over all three;
#      medians reported.
#   2. Start to exit: `kiln stat -- true` against `perf stat -- true` (and
#      bare `true`), TRUE_RUNS runs interleaved, medians.
# Prints a markdown section on stdout and writes it to bench/RESULTS-stat.md
# (bench/run.sh calls this script).
# Environment: KILN (default build/kiln), PERF (perf), RUNS (5), TRUE_RUNS
# (30), ROUNDS (cpuloop rounds, 1700), BENCH_OUT (bench/out/stat), RESULTS.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
RUNS=${RUNS:-5}
TRUE_RUNS=${TRUE_RUNS:-30}
ROUNDS=${ROUNDS:-1700}
OUT=${BENCH_OUT:-$here/out/stat}
RESULTS=${RESULTS:-$here/RESULTS-stat.md}

die() { echo "bench/stat.sh: $*" >&2; exit 1; }
mkdir -p "$OUT" || die "cannot create $OUT"
[ -x "$KILN" ] || die "no kiln at $KILN (make first)"
command -v "$PERF" >/dev/null || die "no perf"
"$KILN" stat -e task-clock -- true 2>/dev/null || die "kiln stat cannot count here"
"$PERF" stat -e task-clock -- true 2>/dev/null || die "perf stat cannot count here"

bin=$OUT/cpuloop
if [ ! -x "$bin" ] || [ "$here/cpuloop.c" -nt "$bin" ]; then
    gcc -O2 -g -o "$bin" "$here/cpuloop.c" || die "cannot build cpuloop"
fi

now_ns() { date +%s%N; }
# wall NAME CMD...: appends the wall time in ms of one run to $OUT/NAME
wall() {
    local name=$1 t0 t1; shift
    t0=$(now_ns)
    "$@" >/dev/null 2>&1 || die "failed: $*"
    t1=$(now_ns)
    echo $(( (t1 - t0) / 1000 )) >> "$OUT/$name"    # microseconds
}
median() { sort -n "$OUT/$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rm -f "$OUT"/bare "$OUT"/kiln "$OUT"/perf "$OUT"/t-bare "$OUT"/t-kiln "$OUT"/t-perf
for _ in $(seq "$RUNS"); do
    wall bare "$bin" "$ROUNDS"
    wall kiln "$KILN" stat -- "$bin" "$ROUNDS"
    wall perf "$PERF" stat -- "$bin" "$ROUNDS"
done
for _ in $(seq "$TRUE_RUNS"); do
    wall t-bare true
    wall t-kiln "$KILN" stat -- true
    wall t-perf "$PERF" stat -- true
done

b=$(median bare); k=$(median kiln); p=$(median perf)
tb=$(median t-bare); tk=$(median t-kiln); tp=$(median t-perf)
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f%%", (a - b) * 100 / b }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1000 }'; }
verdict=$(awk -v k="$k" -v p="$p" -v b="$b" 'BEGIN {
    if (k - b <= (p - b) + 0.01 * b) print "met"; else print "missed" }')
tverdict=$(awk -v k="$tk" -v p="$tp" 'BEGIN { if (k <= p) print "met"; else print "missed" }')

{
echo "## kiln stat against perf stat (bench/stat.sh)"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load at start $(cut -d' ' -f1-3 /proc/loadavg), $("$PERF" --version)."
echo "Medians of $RUNS interleaved runs (CPU-bound) and $TRUE_RUNS (\`true\`); default events for both tools."
echo
echo "| run | bare | kiln stat | perf stat |"
echo "|---|---|---|---|"
echo "| cpuloop $ROUNDS rounds, wall ms | $(ms "$b") | $(ms "$k") ($(pct "$k" "$b")) | $(ms "$p") ($(pct "$p" "$b")) |"
echo "| \`-- true\`, start to exit, ms | $(ms "$tb") | $(ms "$tk") | $(ms "$tp") |"
echo
echo "- Goal: kiln stat's overhead no higher than perf stat's on the same program (within 1% of the bare run for noise): **$verdict**."
echo "- \`kiln stat -- true\` no slower than \`perf stat -- true\`: **$tverdict**."
echo "- Counting costs the target nothing measurable by itself (no sampling, no"
echo "  ring buffers): the difference is the tools' own start and exit."
} | tee "$RESULTS"
