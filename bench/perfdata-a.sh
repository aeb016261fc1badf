#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/perfdata-a.sh: reading a whole-machine perf.data.  `kiln top` of a
# `perf record -a -g` file against `perf report --stdio` on the same file,
# in adjacent pairs (kiln, then perf report, RUNS times), CPU time (user +
# sys, perf stat's task-clock) and wall time, medians.  While perf records
# for DURATION seconds, the machine runs what it runs plus a mix of our
# own: two `shares` processes, node (tests/workloads/js/hotjit.js, with
# --perf-basic-prof: JIT maps to read) and a shell starting short-lived
# processes (many processes of the same few files: what the DSO objects
# share; docs/design.md).  KILN_BASE, if set, is another kiln binary (e.g.
# main's) timed in the same pairs.  Goal (issue 22): kiln top <= 1/2 of
# perf report's CPU time.  Prints a markdown section and writes it to
# bench/RESULTS-perfdata-a.md.  Root (perf record -a).
#
# Environment: KILN (default build/kiln), KILN_BASE (none), RUNS (3),
# DURATION (20), FREQ (999), BENCH_OUT (bench/out), RESULTS.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
KILN_BASE=${KILN_BASE:-}
RUNS=${RUNS:-3}
DURATION=${DURATION:-20}
FREQ=${FREQ:-999}
OUT=${BENCH_OUT:-$here/out}/perfdata-a
RESULTS=${RESULTS:-$here/RESULTS-perfdata-a.md}
WL=$(dirname "$KILN")/workloads
say() { echo "bench/perfdata-a: $*" >&2; }

command -v perf >/dev/null || { say "perf is not installed"; exit 1; }
[ -x "$WL/shares" ] || { say "workloads not built"; exit 1; }
mkdir -p "$OUT/home" || exit 1
export HOME=$OUT/home
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD -- src 2>/dev/null || echo ' (with uncommitted changes)')"

say "recording the whole machine for $DURATION s"
pids=()
"$WL/shares" "$DURATION" >/dev/null 2>&1 & pids+=($!)
"$WL/shares" "$DURATION" >/dev/null 2>&1 & pids+=($!)
if command -v node >/dev/null; then
    node --perf-basic-prof "$root/tests/workloads/js/hotjit.js" 100000 >/dev/null 2>&1 & pids+=($!)
fi
( end=$((SECONDS + DURATION)); while [ $SECONDS -lt $end ]; do
      ls / >/dev/null; cat /proc/loadavg >/dev/null; date >/dev/null; done ) & pids+=($!)
perf record -q -a -g -F "$FREQ" -o "$OUT/all.data" -- sleep "$DURATION" \
    >/dev/null 2>"$OUT/rec.err" || { say "perf record -a failed: $(tail -1 "$OUT/rec.err")"; kill "${pids[@]}" 2>/dev/null; exit 1; }
kill "${pids[@]}" 2>/dev/null
wait 2>/dev/null
nproc_rec=$(perf report -i "$OUT/all.data" --stdio --no-children --sort pid -g none 2>/dev/null |
    awk '$1 ~ /%$/' | wc -l)
nsamp=$(perf report -i "$OUT/all.data" --stdio --no-children -n --sort pid -g none 2>/dev/null |
    awk '$1 ~ /%$/ { s += $2 } END { print s + 0 }')

time_cmd() {	# NAME CMD...: appends "NAME wall cpu" to $OUT/times
    local name=$1; shift
    /usr/bin/time -f '%e' -o "$OUT/t" perf stat -x, -e task-clock -o "$OUT/tc" \
        bash -c "$*" >/dev/null 2>"$OUT/err" ||
        { say "$name failed: $(tail -2 "$OUT/err")"; return 1; }
    awk -F, -v n="$name" -v w="$(cat "$OUT/t")" '$3 == "task-clock" {
        printf "%s %s %.3f\n", n, w, $1 / 1000 }' "$OUT/tc" >> "$OUT/times"
}

: > "$OUT/times"
# One run each first: kiln's debug file cache and the page cache warm.
"$KILN" top -q "$OUT/all.data" >/dev/null 2>&1
perf report -i "$OUT/all.data" --stdio >/dev/null 2>&1
for i in $(seq "$RUNS"); do
    say "pair $i"
    time_cmd kiln-top "'$KILN' top -q '$OUT/all.data'" || exit 1
    time_cmd perf-report "perf report -i '$OUT/all.data' --stdio" || exit 1
    [ -z "$KILN_BASE" ] || time_cmd kiln-base "'$KILN_BASE' top -q '$OUT/all.data'" || exit 1
done

med() {	# name column -> median
    awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$OUT/times" |
        sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
{
    echo "## Reading a whole-machine perf.data (bench/perfdata-a.sh)"
    echo
    echo "\`perf record -a -g -F $FREQ\` for $DURATION s (perf $(perf --version | awk '{print $3}')):"
    echo "$nsamp samples of $nproc_rec processes, $(du -m "$OUT/all.data" | cut -f1) MB;"
    echo "kiln at commit $commit; median of $RUNS adjacent pairs; load average"
    echo "$load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end ($(nproc) CPUs)."
    echo
    echo "| command | wall s | CPU s | CPU vs perf report |"
    echo "|---|---:|---:|---:|"
    pu=$(med perf-report 3)
    for c in kiln-top perf-report ${KILN_BASE:+kiln-base}; do
        w=$(med "$c" 2); u=$(med "$c" 3)
        r=$(awk -v a="$u" -v b="$pu" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')
        echo "| \`$c\` | $w | $u | $r |"
    done
    echo
    [ -z "$KILN_BASE" ] || echo "kiln-base: $KILN_BASE"
    echo
    ku=$(med kiln-top 3)
    awk -v a="$ku" -v b="$pu" 'BEGIN { r = (b > 0 ? a / b : 0);
        printf "- kiln top takes %.2fx perf report'"'"'s CPU time (goal <= 0.5x: %s)\n", r,
            r <= 0.5 ? "met" : "MISSED" }'
} | tee "$RESULTS"
