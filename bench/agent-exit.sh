#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/agent-exit.sh: the agent's exit cost, the time from a program's
# exit() to its being gone with CPUPROFILE set (stopping, symbolizing and
# writing the profile), against gperftools' libprofiler.so and against
# another libkiln.so (LIBKILN_BEFORE, e.g. a build of the previous tree),
# in the same run (issue 15: "light at exit", no more than libprofiler).
#
# bench/exitcost.c runs the workload (bench/mtloop.c, THREADS x ROUNDS,
# about a second), reads the CLOCK_REALTIME mtloop prints at the end of its
# work and takes the clock as soon as wait4() reaps the process: no shell
# or `date` between.  Rounds run every configuration once, each round
# starting at another one (adjacent runs of each pair); medians of RUNS
# rounds, and min-max.  Exit beyond bare = median minus the bare run's.
#
# Environment: KILN (build/kiln), LIBKILN (libkiln.so beside it),
# LIBKILN_BEFORE (unset: not compared), LIBPROFILER
# (/usr/lib/x86_64-linux-gnu/libprofiler.so), RUNS (21), THREADS (4),
# ROUNDS (600), BENCH_OUT (bench/out/agent-exit), RESULTS
# (bench/RESULTS-agent-exit.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
LIBKILN=${LIBKILN:-$(dirname "$KILN")/libkiln.so}
LIBKILN_BEFORE=${LIBKILN_BEFORE:-}
LIBPROFILER=${LIBPROFILER:-/usr/lib/x86_64-linux-gnu/libprofiler.so}
RUNS=${RUNS:-21}
THREADS=${THREADS:-4}
ROUNDS=${ROUNDS:-600}
OUT=${BENCH_OUT:-$root/bench/out/agent-exit}
RESULTS=${RESULTS:-$here/RESULTS-agent-exit.md}
say() { echo "agent-exit: $*" >&2; }
mkdir -p "$OUT" || exit 1
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$OUT/mtloop" "$here/mtloop.c" || exit 1
gcc -O2 -o "$OUT/exitcost" "$here/exitcost.c" || exit 1

configs=(bare)
[ -n "$LIBKILN_BEFORE" ] && configs+=(kiln-before)
configs+=(kiln)
[ -f "$LIBPROFILER" ] && configs+=(gperf)
res=$OUT/runs.tsv
: > "$res"
run_one() {
    local envv=()
    case $1 in
    kiln-before) envv=("LD_PRELOAD=$LIBKILN_BEFORE" "CPUPROFILE=$OUT/kb.prof") ;;
    kiln) envv=("LD_PRELOAD=$LIBKILN" "CPUPROFILE=$OUT/k.prof") ;;
    gperf) envv=("LD_PRELOAD=$LIBPROFILER" "CPUPROFILE=$OUT/g.prof") ;;
    esac
    "$OUT/exitcost" env "${envv[@]}" "$OUT/mtloop" "$THREADS" "$ROUNDS" 2>/dev/null |
        awk -v c="$1" -v r="$2" '{ print c "\t" r "\t" $1 / 1000 }' >> "$res"
}
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
n=${#configs[@]}
for ((r = 1; r <= RUNS; r++)); do
    for ((k = 0; k < n; k++)); do
        run_one "${configs[$(((k + r - 1) % n))]}" "$r"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
med() { awk -v c="$1" '$1 == c { print $3 }' "$res" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%.2f %.2f %.2f\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR] }'; }
read -r bare _ <<< "$(med bare)"
{
    echo "## The agent's exit cost (bench/agent-exit.sh)"
    echo
    echo "Generated on $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs, kernel $(uname -r);"
    echo "\`bench/mtloop.c\` $THREADS threads x $ROUNDS rounds; $RUNS rounds of every configuration,"
    echo "interleaved; load average at start $load_start, at end $load_end."
    echo "Exit = from the end of mtloop's work (its CLOCK_REALTIME, printed just before"
    echo "main returns) to the process being reaped (\`bench/exitcost.c\`), in ms."
    echo
    echo "| configuration | exit (ms), median | min - max | beyond bare (ms) |"
    echo "|---|---:|---:|---:|"
    for c in "${configs[@]}"; do
        read -r m lo hi <<< "$(med "$c")"
        case $c in
        bare) label=bare ;;
        kiln-before) label="libkiln.so before (\`$LIBKILN_BEFORE\`)" ;;
        kiln) label="libkiln.so (\`$LIBKILN\`)" ;;
        gperf) label="libprofiler.so ($(dpkg-query -W -f '${Version}' libgoogle-perftools4 2>/dev/null))" ;;
        esac
        echo "| $label | $m | $lo - $hi | $(awk -v a="$m" -v b="$bare" 'BEGIN { printf "%.2f", a - b }') |"
    done
    echo
} | tee "$RESULTS"
