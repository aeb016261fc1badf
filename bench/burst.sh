#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/burst.sh: counting events lose nothing (issue 27).  A burst of
# 2,500 getrandom calls (tests/workloads/getrandom.c -n: 2,000 from
# rand_many, 500 from rand_few) recorded with -e syscalls:sys_enter_getrandom
# beside two CPU hogs (busy loops, one per core), RUNS times each:
# kiln record with its defaults and with --call-graph dwarf (32 KiB
# copies), perf record --call-graph dwarf (perf's 8 KiB) and perf record
# -g.  What is compared is the records lost: 2,500 less kiln's "N
# samples" and less the samples in perf.data (perf script, one line
# each).  Prints a markdown section on stdout and writes it to
# bench/RESULTS-burst.md.  Root is needed (tracepoint samples).
#
# Environment: KILN (default build/kiln), PERF (perf), RUNS (5),
# BENCH_OUT (bench/out/burst), RESULTS (bench/RESULTS-burst.md).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
RUNS=${RUNS:-5}
OUT=${BENCH_OUT:-$root/bench/out/burst}
RESULTS=${RESULTS:-$here/RESULTS-burst.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac
WLD=$(dirname "$KILN")/workloads

say() { echo "burst: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
[ -x "$WLD/getrandom" ] || die "no $WLD/getrandom (build kiln's workloads)"
command -v "$PERF" >/dev/null 2>&1 || die "no perf ($PERF) in PATH"
[ "$(id -u)" -eq 0 ] || die "root is needed for tracepoint samples"

hogs=()
stop_hogs() { local h; for h in "${hogs[@]}"; do kill "$h" 2>/dev/null; done; hogs=(); }
trap stop_hogs EXIT
for _ in 1 2; do ( while :; do :; done ) & hogs+=($!); done
sleep 1

# kept TOOL: the records kept of the 2,500 in the last run's output.
kept() {
    case $1 in
    kiln*) sed -n 's/.*: \([0-9]*\) samples, [0-9]* lost.*/\1/p' "$OUT/err" ;;
    perf*) "$PERF" script -i "$OUT/perf.data" -F tid 2>/dev/null | grep -c . ;;
    esac
}
declare -A lost
tools=("kiln" "kiln --call-graph dwarf" "perf --call-graph dwarf" "perf -g")
for i in $(seq "$RUNS"); do
    for t in "${tools[@]}"; do
        set -- $t
        tool=$1; shift
        if [ "$tool" = kiln ]; then
            "$KILN" record "$@" -e syscalls:sys_enter_getrandom -o "$OUT/k.pb.gz" \
                -- "$WLD/getrandom" -n 2> "$OUT/err" >/dev/null || die "kiln failed: $(cat "$OUT/err")"
        else
            "$PERF" record -q "$@" -e syscalls:sys_enter_getrandom -o "$OUT/perf.data" \
                -- "$WLD/getrandom" -n 2> "$OUT/err" >/dev/null || die "perf failed: $(cat "$OUT/err")"
        fi
        k=$(kept "$tool")
        [ -n "$k" ] || die "no record count from '$t'"
        lost[$t]="${lost[$t]:-} $((2500 - k))"
    done
done
stop_hogs

median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
{
    echo "## Tracepoint burst beside two CPU hogs (bench/burst.sh)"
    echo
    echo "2,500 getrandom calls (getrandom -n) recorded with \`-e syscalls:sys_enter_getrandom\`"
    echo "while two busy loops run, one per core; $RUNS runs of each, $(date -u '+%Y-%m-%d %H:%M') UTC,"
    echo "$(nproc) CPUs, load average at the end $(cut -d' ' -f1-3 /proc/loadavg) (other jobs share the machine)."
    echo
    echo "| recorder | records lost of 2,500, each run | median |"
    echo "|---|---|---|"
    for t in "${tools[@]}"; do
        echo "| \`${t/kiln/kiln record}\` | ${lost[$t]# } | $(echo "${lost[$t]}" | median) |" | sed 's/`perf /`perf record /'
    done
    echo
    echo "kiln's defaults for a counting event: 8 KiB stack copies into 32 MiB rings per CPU"
    echo "(docs/kiln-record.md, \"Counting events lose nothing\"); perf's are 8 KiB copies"
    echo "(--call-graph dwarf) into its default rings."
} | tee "$RESULTS"
