#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/prefork.sh: the cost of recording a process-per-connection load
# (issue 22: pgbench -C lost 23-47% of its throughput under kiln record,
# 13% under perf; a shell loop ran 3.4x slower).  The forkserve workload
# (tests/workloads/forkserve.c, built into build/workloads/) forks a child
# per request, which burns MS (default 5) ms of CPU and exits.  For each of
# bare, `perf record -F 999 -g -p`, `perf record --call-graph dwarf -p`
# and `kiln record -F 999 -p`, attached to
# the running server for SECONDS_REC seconds, the requests served in that
# window (throughput), the recorder's own CPU time and peak RSS
# (/usr/bin/time of the recorder; -p keeps the load's CPU out of it) and
# how long it takes to exit once sent SIGINT (Ctrl-C) at the window's end;
# perf also with --call-graph dwarf, the memory goal's reference.  Goals
# (issue 22): kiln's throughput loss within 5 points of perf -g's, kiln's
# CPU <= 2x perf -g's, kiln's memory <= 2x perf dwarf's, Ctrl-C ends the
# recording within 1 s.
# RUNS rounds (bare, perf, kiln in turn), medians.  Prints a markdown
# section and writes it to bench/RESULTS-prefork.md.  Root (or
# perf_event_paranoid <= 0).
#
# Environment: KILN (build/kiln), PERF (perf), RUNS (3), SECONDS_REC (5),
# MS (5), BENCH_OUT (bench/out/prefork), RESULTS (bench/RESULTS-prefork.md).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
RUNS=${RUNS:-3}
SECONDS_REC=${SECONDS_REC:-5}
MS=${MS:-5}
OUT=${BENCH_OUT:-$root/bench/out/prefork}
RESULTS=${RESULTS:-$here/RESULTS-prefork.md}
WL=${WL:-$(dirname "$KILN")/workloads}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

say() { echo "prefork: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
[ -x "$WL/forkserve" ] || die "no $WL/forkserve (build kiln first)"
command -v "$PERF" >/dev/null 2>&1 || die "no perf ($PERF) in PATH"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD -- src 2>/dev/null || echo ' (with uncommitted changes)')"

served() { local n; n=$(grep -c '^child ' "$OUT/serve.out" 2>/dev/null); echo "${n:-0}"; }

# run_one TOOL ROUND: appends "TOOL ROUND requests_per_s cpu_s rss_mb stop_s"
# to runs.  Each recorder runs until it is sent SIGINT after SECONDS_REC
# (Ctrl-C, as a user stops it): stop_s is how long it then takes to exit.
run_one() {
    local tool=$1 round=$2 pid n0 n1 t0 t1 t2 tp rp cpu=0 rss=0 stop=0
    "$WL/forkserve" 0 "$MS" > "$OUT/serve.out" & pid=$!
    while [ "$(served)" -lt 10 ]; do sleep 0.1; done
    n0=$(served); t0=$(date +%s.%N)
    case $tool in
        bare) sleep "$SECONDS_REC" ;;
        perf) /usr/bin/time -f '%U %S %M' -o "$OUT/t" "$PERF" record -q -F 999 -g \
                  -p "$pid" -o "$OUT/perf.data" >/dev/null 2>&1 & tp=$! ;;
        perfdw) /usr/bin/time -f '%U %S %M' -o "$OUT/t" "$PERF" record -q -F 999 \
                  --call-graph dwarf -p "$pid" -o "$OUT/perf.data" >/dev/null 2>&1 & tp=$! ;;
        kiln) /usr/bin/time -f '%U %S %M' -o "$OUT/t" "$KILN" record -q -F 999 \
                  -p "$pid" -o "$OUT/k.pb.gz" >/dev/null 2>&1 & tp=$! ;;
    esac
    if [ "$tool" != bare ]; then
        sleep "$SECONDS_REC"
        # (time(1) ignores SIGINT while its child runs: the recorder gets it.)
        rp=$(pgrep -P "$tp" | head -1)
        n1=$(served); t1=$(date +%s.%N)
        kill -INT "${rp:-$tp}"
        wait "$tp" 2>/dev/null
        t2=$(date +%s.%N)
        # (time(1) writes "Command exited with non-zero status N" first
        # for a recorder that exits 130 on SIGINT: the figures are last.)
        cpu=$(tail -1 "$OUT/t" | awk '{ print $1 + $2 }')
        rss=$(tail -1 "$OUT/t" | awk '{ printf "%.0f", $3 / 1024 }')
        stop=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
    else
        n1=$(served); t1=$(date +%s.%N)
    fi
    kill "$pid"; wait "$pid" 2>/dev/null
    awk -v t="$tool" -v r="$round" -v n=$((n1 - n0)) -v a="$t0" -v b="$t1" -v c="$cpu" \
        -v m="$rss" -v s="$stop" \
        'BEGIN { printf "%s %d %.2f %.2f %s %s\n", t, r, n / (b - a), c, m, s }' >> "$OUT/runs"
}

: > "$OUT/runs"
for ((r = 1; r <= RUNS; r++)); do
    for tool in bare perf perfdw kiln; do
        say "round $r: $tool"
        run_one "$tool" "$r"
    done
done
bare=$(bench_med "$OUT/runs" bare 3)
perf_r=$(bench_med "$OUT/runs" perf 3); perf_c=$(bench_med "$OUT/runs" perf 4)
dw_r=$(bench_med "$OUT/runs" perfdw 3); dw_c=$(bench_med "$OUT/runs" perfdw 4)
kiln_r=$(bench_med "$OUT/runs" kiln 3); kiln_c=$(bench_med "$OUT/runs" kiln 4)
perf_m=$(bench_med "$OUT/runs" perf 5); dw_m=$(bench_med "$OUT/runs" perfdw 5)
kiln_m=$(bench_med "$OUT/runs" kiln 5)
perf_s=$(bench_med "$OUT/runs" perf 6); dw_s=$(bench_med "$OUT/runs" perfdw 6)
kiln_s=$(bench_med "$OUT/runs" kiln 6)
loss() { awk -v a="$1" -v b="$bare" 'BEGIN { printf "%.1f", (b > 0 ? 100 * (1 - a / b) : 0) }'; }
perf_l=$(loss "$perf_r"); dw_l=$(loss "$dw_r"); kiln_l=$(loss "$kiln_r")
gap=$(awk -v a="$kiln_l" -v b="$perf_l" 'BEGIN { printf "%.1f", a - b }')
cpu_ratio=$(bench_ratio "$kiln_c" "$perf_c")
mem_ratio=$(bench_ratio "$kiln_m" "$dw_m")
met() { awk -v g="$1" -v l="$2" 'BEGIN { print (g <= l ? "met" : "**missed**") }'; }
{
    echo "## Process-per-connection load under the recorders (bench/prefork.sh)"
    echo
    echo "forkserve: a child forked per request, $MS ms of CPU each; each recorder"
    echo "attached with -p for ${SECONDS_REC} s at 999 Hz; medians of $RUNS rounds."
    echo "Commit $commit, $(nproc) CPUs, load average at the start $load_start."
    echo
    echo "| run | requests/s | throughput loss | recorder CPU (s) | recorder peak RSS (MB) | exit after SIGINT (s) |"
    echo "|---|---|---|---|---|---|"
    echo "| bare | $bare | | | | |"
    echo "| perf record -F 999 -g -p | $perf_r | ${perf_l}% | $perf_c | $perf_m | $perf_s |"
    echo "| perf record -F 999 --call-graph dwarf -p | $dw_r | ${dw_l}% | $dw_c | $dw_m | $dw_s |"
    echo "| kiln record -F 999 -p | $kiln_r | ${kiln_l}% | $kiln_c | $kiln_m | $kiln_s |"
    echo
    echo "kiln's loss minus perf -g's: $gap points (goal <= 5: $(met "$gap" 5));"
    echo "kiln's CPU / perf -g's: ${cpu_ratio}x (goal <= 2: $(met "$cpu_ratio" 2));"
    echo "kiln's peak RSS / perf dwarf's: ${mem_ratio}x (goal <= 2: $(met "$mem_ratio" 2));"
    echo "kiln's exit after SIGINT: ${kiln_s} s (goal <= 1: $(met "$kiln_s" 1))."
    echo
    echo "Runs (tool, round, requests/s, recorder CPU s, peak RSS MB, exit after SIGINT s):"
    echo
    sed 's/^/    /' "$OUT/runs"
} | tee "$RESULTS"
