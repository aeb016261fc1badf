#!/usr/bin/env bash
# bench/record-all.sh: the CPU time `kiln record -a -g` spends recording
# every CPU, against `perf record -a -g` at the same rate (issue 11's goal:
# kiln's own CPU time <= 1/2 of perf record's).  Prints a markdown section
# on stdout and writes it to bench/RESULTS-record-all.md (bench/run.sh
# calls this script).
#
# Work: one CPU-bound process per CPU (bench/cpuloop.c, fp build, started
# together, each with a fixed number of rounds) while the tool records the
# whole system for SECONDS seconds (`-- sleep SECONDS`: the tools' own
# workload is nothing).  Configurations, each RUNS times, interleaved
# (kiln, perf, perf lean, kiln, ...), medians reported:
#   kiln       kiln record -a -g -F HZ -o F.pb.gz -- sleep S   (symbolized
#              pprof written before it exits)
#   perf       perf record -a -g -F HZ -o F.data -- sleep S    (default:
#              build IDs collected at the end)
#   perf lean  the same with --no-bpf-event -B (no build-id pass)
# The tool's CPU time is user+sys of its process tree (/usr/bin/time; the
# `sleep` in it costs nothing measurable).  Samples: kiln's closing line,
# perf's "(N samples)" (with -B perf does not say: "-").  perf's time does not include `perf script` or
# `perf report` (which a user needs to see anything): the comparison is
# the recording alone, as the goal states.
#
# Environment: KILN (build/kiln), PERF (perf), RUNS (5), HZ (999),
# SECONDS_REC (4), ROUNDS (cpuloop rounds: enough to outlast the
# recording, 4000), BENCH_OUT (bench/out/record-all), RESULTS
# (bench/RESULTS-record-all.md).  Needs root or perf_event_paranoid <= 0.
# Exit status 1 if a configuration failed; a missed goal is reported only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
RUNS=${RUNS:-5}
HZ=${HZ:-999}
SECONDS_REC=${SECONDS_REC:-4}
ROUNDS=${ROUNDS:-4000}
OUT=${BENCH_OUT:-$root/bench/out/record-all}
RESULTS=${RESULTS:-$here/RESULTS-record-all.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

say() { echo "record-all-bench: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
command -v "$PERF" >/dev/null 2>&1 || die "no perf ($PERF) in PATH"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
ncpu=$(nproc)
bin=$OUT/cpuloop-fp
if [ ! -x "$bin" ] || [ "$here/cpuloop.c" -nt "$bin" ]; then
    gcc -O2 -g -fno-omit-frame-pointer -o "$bin" "$here/cpuloop.c" ||
        die "cannot build cpuloop"
fi

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
configs=(kiln perf perf-lean)
failed=0

# run CONFIG N: one recording while ncpu cpuloops run; appends
# "CONFIG cpu_s samples" to $OUT/rows.
run() {
    local c=$1 n=$2 pids=() i log=$OUT/$1.$2.log t=$OUT/$1.$2.time samples cpu
    for ((i = 0; i < ncpu; i++)); do
        "$bin" "$ROUNDS" > /dev/null & pids+=($!)
    done
    case $c in
        kiln) /usr/bin/time -f '%U %S' -o "$t" "$KILN" record -a -g -F "$HZ" \
                  -o "$OUT/k.pb.gz" -- sleep "$SECONDS_REC" > "$log" 2>&1 ;;
        perf) /usr/bin/time -f '%U %S' -o "$t" "$PERF" record -a -g -F "$HZ" \
                  -o "$OUT/p.data" -- sleep "$SECONDS_REC" > "$log" 2>&1 ;;
        perf-lean) /usr/bin/time -f '%U %S' -o "$t" "$PERF" record --no-bpf-event -B \
                  -a -g -F "$HZ" -o "$OUT/p.data" -- sleep "$SECONDS_REC" > "$log" 2>&1 ;;
    esac
    local rc=$?
    kill "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
    if [ "$rc" != 0 ]; then
        # perf 6.1 here aborts now and then in its build-id pass at the
        # end ("assertion failed at util/build-id.c"): counted, not timed.
        say "$c run $n failed (status $rc):"; tail -3 "$log" >&2
        echo "$c $n" >> "$OUT/crashed"
        [ "$c" = kiln ] && failed=1
        return
    fi
    cpu=$(tail -1 "$t" | awk '{ printf "%.3f", $1 + $2 }')
    case $c in
        kiln) samples=$(sed -n 's/.*: \([0-9]*\) samples.*/\1/p' "$log" | tail -1) ;;
        *) samples=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$log" | tail -1) ;;
    esac
    echo "$c $cpu ${samples:--}" >> "$OUT/rows"
}

rm -f "$OUT/rows" "$OUT/crashed"
for ((n = 1; n <= RUNS; n++)); do
    for c in "${configs[@]}"; do
        say "run $n: $c"
        run "$c" "$n"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

med() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
col() { awk -v c="$1" -v k="$2" '$1 == c { print $k }' "$OUT/rows"; }

kcpu=$(col kiln 2 | med)
{
    echo "## \`kiln record -a -g\` against \`perf record -a -g\` (bench/record-all.sh)"
    echo
    echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC'): $ncpu CPUs, kernel $(uname -r),"
    echo "$($PERF --version 2>/dev/null); kiln at $(git -C "$root" rev-parse --short HEAD 2>/dev/null)."
    echo "$ncpu \`bench/cpuloop\` processes (one per CPU) running while each tool records"
    echo "every CPU for $SECONDS_REC s at $HZ Hz with call graphs; $RUNS runs of each, interleaved;"
    echo "load average $load_start at the start, $load_end at the end."
    echo "CPU = user + sys of the tool's process tree (/usr/bin/time), median."
    echo
    echo "| tool | CPU s (median) | runs | samples (median) | CPU vs kiln |"
    echo "|---|---:|---|---:|---:|"
    for c in "${configs[@]}"; do
        m=$(col "$c" 2 | med)
        runs=$(col "$c" 2 | tr '\n' ' ')
        s=$(col "$c" 3 | med)
        r=$(awk -v a="$m" -v b="$kcpu" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
        case $c in
            kiln) label="kiln record -a -g" ;;
            perf) label="perf record -a -g" ;;
            perf-lean) label="perf record --no-bpf-event -B -a -g" ;;
        esac
        cr=$(awk -v c="$c" '$1 == c' "$OUT/crashed" 2>/dev/null | wc -l)
        [ "$cr" = 0 ] || runs="$runs($cr of $RUNS crashed, not timed)"
        echo "| \`$label\` | $m | $runs | $s | $r |"
    done
    echo
    pcpu=$(col perf 2 | med)
    awk -v k="$kcpu" -v p="$pcpu" 'BEGIN {
        if (p <= 0) { print "- no perf time: no verdict"; exit }
        printf "- kiln takes %.2f of perf record'"'"'s CPU time (goal <= 0.50: %s)\n",
            k / p, k / p <= 0.5 ? "met" : "MISSED" }'
} | tee "$RESULTS"
exit "$failed"
