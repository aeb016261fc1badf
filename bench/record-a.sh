#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/record-a.sh: the cost of system-wide recording.  `kiln record -a -g`
# against `perf record -a -g` at the same rate (999 Hz by default) while
# every CPU is busy: a copy of bench/cpuloop.c (fp build) pinned to each,
# for the whole recording.  What is compared is the recorder's own CPU
# time (perf stat's task-clock of its process tree, every thread and
# child): kiln records, unwinds, symbolizes and writes its pprof; perf
# record writes perf.data, which `perf script` or `perf report` would then
# read at a cost of its own, not counted here.  Goal (issue 11): kiln <=
# 1/2 of perf record's.
#
# The two tools run in adjacent pairs (kiln, then perf; the next pair perf
# first), RUNS pairs; medians of each and the median of the per-pair
# ratios are reported.  Prints a markdown section on stdout and writes it
# to bench/RESULTS-record-a.md.  Root (or kernel.perf_event_paranoid <= 0)
# is needed.
#
# Environment: KILN (default build/kiln), PERF (perf), RUNS (5), FREQ
# (999), SECONDS_REC (5: each recording's length), BENCH_OUT
# (bench/out/record-a), RESULTS (bench/RESULTS-record-a.md).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
RUNS=${RUNS:-5}
FREQ=${FREQ:-999}
SECONDS_REC=${SECONDS_REC:-5}
OUT=${BENCH_OUT:-$root/bench/out/record-a}
RESULTS=${RESULTS:-$here/RESULTS-record-a.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

say() { echo "record-a: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
command -v "$PERF" >/dev/null 2>&1 || die "no perf ($PERF) in PATH"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
ncpu=$(nproc)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD -- src 2>/dev/null || echo ' (with uncommitted changes)')"

# The load: cpuloop (fp build), one per CPU, for longer than a recording.
bin=$OUT/cpuloop-fp
if [ ! -x "$bin" ] || [ "$here/cpuloop.c" -nt "$bin" ]; then
    gcc -O2 -g -fno-omit-frame-pointer -o "$bin" "$here/cpuloop.c" ||
        die "cannot build cpuloop"
fi
# cpuloop's rounds for about SECONDS_REC + 2 s of work (it does about 570
# rounds a second here; more rounds only make the tail longer).
rounds=$(( (SECONDS_REC + 2) * 600 ))
loads=()
start_load() {
    local c
    loads=()
    for ((c = 0; c < ncpu; c++)); do
        taskset -c "$c" "$bin" "$rounds" >/dev/null 2>&1 &
        loads+=($!)
    done
    sleep 0.3	# running before the recorder starts
}
stop_load() {
    local p
    for p in "${loads[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${loads[@]}"; do wait "$p" 2>/dev/null; done
}
trap stop_load EXIT

# run_one TOOL PAIR: one recording under load; appends "TOOL PAIR cpu wall
# samples" to $OUT/runs.
run_one() {
    local tool=$1 pair=$2 cpu n
    start_load
    if [ "$tool" = kiln ]; then
        /usr/bin/time -f '%e' -o "$OUT/t" "$PERF" stat -x, -e task-clock \
            -o "$OUT/tc" "$KILN" record -q -a -g \
            -F "$FREQ" --duration "$SECONDS_REC" -o "$OUT/kiln.pb.gz" \
            >"$OUT/kiln.out" 2>"$OUT/kiln.err" ||
            { stop_load; die "kiln record failed: $(tail -2 "$OUT/kiln.err")"; }
    else
        # perf 6.1 sometimes dies in its build-ID pass at the end
        # ("assertion failed at util/build-id.c:1010", then "stack
        # smashing detected"): tried again, at most twice.
        for try in 1 2 3; do
            /usr/bin/time -f '%e' -o "$OUT/t" "$PERF" stat -x, -e task-clock \
                -o "$OUT/tc" "$PERF" record -q -a -g \
                -F "$FREQ" -o "$OUT/perf.data" -- sleep "$SECONDS_REC" \
                >"$OUT/perf.out" 2>"$OUT/perf.err" && break
            say "perf record failed (try $try): $(tail -1 "$OUT/perf.err")"
            perf_failures=$((perf_failures + 1))
            [ "$try" = 3 ] && { stop_load; die "perf record failed 3 times"; }
            stop_load
            start_load
        done
    fi
    stop_load
    if [ "$tool" = kiln ]; then
        n=$("$KILN" top -q -n 0 --sample-type samples "$OUT/kiln.pb.gz" 2>/dev/null |
            sed -n 's/.* of \([0-9.]*\) total.*/\1/p')
    else
        n=$("$PERF" report -i "$OUT/perf.data" --stdio --no-children -n \
            --sort pid -g none 2>/dev/null |
            awk '$1 ~ /%$/ { s += $2 } END { print s + 0 }')
    fi
    awk -F, -v t="$tool" -v p="$pair" -v n="${n:-?}" -v w="$(cat "$OUT/t")" \
        '$3 == "task-clock" { printf "%s %s %.3f %s %s\n", t, p, $1 / 1000, w, n }' \
        "$OUT/tc" >>"$OUT/runs"
    say "pair $pair: $tool $(tail -1 "$OUT/runs" | cut -d' ' -f3) s CPU"
}

: >"$OUT/runs"
perf_failures=0
for ((i = 1; i <= RUNS; i++)); do
    if ((i % 2)); then
        run_one kiln "$i"; run_one perf "$i"
    else
        run_one perf "$i"; run_one kiln "$i"
    fi
done

med() {	# column of tool's runs -> median
    awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$OUT/runs" | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
ratios=$(awk '{ cpu[$1 " " $2] = $3 } END {
    for (k in cpu) { split(k, a, " "); if (a[1] == "kiln") print cpu[k] / cpu["perf " a[2]] } }' \
    "$OUT/runs" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }')

{
    echo "## kiln record -a against perf record -a (bench/record-a.sh)"
    echo
    echo "\`kiln record -a -g -F $FREQ --duration $SECONDS_REC\` against"
    echo "\`perf record -a -g -F $FREQ -- sleep $SECONDS_REC\` (perf $("$PERF" --version | awk '{print $3}')),"
    echo "while $ncpu copies of bench/cpuloop.c (fp build) keep all $ncpu CPUs busy;"
    echo "kiln at commit $commit; $RUNS adjacent pairs, the order alternating;"
    echo "load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo "CPU = task-clock of the recorder's process tree (perf stat): kiln's"
    echo "includes unwinding, symbolizing and writing its pprof; perf's is perf"
    echo "record alone (reading its perf.data costs more, not counted)."
    echo "perf record runs that died and were run again: $perf_failures."
    echo
    echo "| pair | kiln CPU s | perf CPU s | kiln / perf | kiln samples | perf samples |"
    echo "|---:|---:|---:|---:|---:|---:|"
    for ((i = 1; i <= RUNS; i++)); do
        awk -v p="$i" '$2 == p { c[$1] = $3; n[$1] = $5 } END {
            printf "| %d | %.3f | %.3f | %.2f | %s | %s |\n", p, c["kiln"], c["perf"],
                (c["perf"] > 0 ? c["kiln"] / c["perf"] : 0), n["kiln"], n["perf"] }' "$OUT/runs"
    done
    ku=$(med kiln 3); pu=$(med perf 3)
    echo "| median | $ku | $pu | $ratios | | |"
    echo
    awk -v r="$ratios" 'BEGIN { printf "- kiln record -a takes %.2f of perf record -a'"'"'s CPU time (median of the pairs; goal <= 0.50: %s)\n",
        r, (r <= 0.5 ? "met" : sprintf("missed by %.0f%%", (r / 0.5 - 1) * 100)) }'
} | tee "$RESULTS"
