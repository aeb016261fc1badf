#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/startup.sh: what a command costs before it works (issue 27 item 7:
# "kiln top of a small pprof: total run time within 1 ms of a static cat
# of the same file").  perf stat -r N times `kiln top FILE` and `cat FILE`
# (each to /dev/null) in alternating blocks, ROUNDS blocks each; the
# medians of the blocks' mean wall-clock and task-clock times, and the
# difference.  Writes bench/RESULTS-startup.md.
#
# Environment: KILN (default build/kiln), N (50 runs a block), ROUNDS (5),
# FILE (tests/fixtures/pprof/go-cpu.pb.gz), RESULTS.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
N=${N:-50}
ROUNDS=${ROUNDS:-5}
FILE=${FILE:-$root/tests/fixtures/pprof/go-cpu.pb.gz}
RESULTS=${RESULTS:-$here/RESULTS-startup.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

. "$here/lib.sh"
say() { echo "startup-bench: $*" >&2; }
[ -x "$KILN" ] || { say "no kiln binary at $KILN"; exit 1; }
command -v perf >/dev/null || { say "perf (Debian linux-perf) is needed"; exit 1; }
runs=$(mktemp) || exit 1
trap 'rm -f "$runs"' EXIT

# block NAME CMD...: one perf stat -r N; appends "NAME WALL_MS CPU_MS".
block() {
    local name=$1 out
    shift
    out=$(perf stat -x, -r "$N" -e task-clock "$@" 2>&1 >/dev/null) || return 1
    # -x, gives "VALUE,msec,task-clock,..." and no elapsed line: take the
    # wall time from a plain run's "seconds time elapsed".
    local cpu wall
    cpu=$(echo "$out" | awk -F, '$3 == "task-clock" { print $1 }')
    wall=$(perf stat -r "$N" "$@" 2>&1 >/dev/null |
        awk '/seconds time elapsed/ { print $1 * 1000 }')
    echo "$name $wall $cpu" >> "$runs"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < ROUNDS; r++)); do
    block kiln "$KILN" top "$FILE" || { say "kiln top failed"; exit 1; }
    block cat cat "$FILE" || exit 1
done
kw=$(bench_med "$runs" kiln 2); kc=$(bench_med "$runs" kiln 3)
cw=$(bench_med "$runs" cat 2); cc=$(bench_med "$runs" cat 3)
diff=$(awk -v a="$kw" -v b="$cw" 'BEGIN { printf "%.2f", a - b }')
goal=$(awk -v d="$diff" 'BEGIN { print (d <= 1.0 ? "met" : "**missed**") }')
{
    echo "# Start-up: kiln top of a small pprof against cat"
    echo
    echo "Written by \`bench/startup.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
    echo "$(nproc) cores, load $load0 at the start; kiln $(git -C "$root" rev-parse --short HEAD 2>/dev/null)."
    echo "Medians of $ROUNDS alternating blocks of \`perf stat -r $N\` each;"
    echo "input $(basename "$FILE") ($(stat -c %s "$FILE") bytes)."
    echo
    echo "| command | wall ms | CPU (task-clock) ms |"
    echo "|---|---|---|"
    echo "| \`kiln top FILE\` | $kw | $kc |"
    echo "| \`cat FILE\` | $cw | $cc |"
    echo
    echo "kiln top costs $diff ms more than cat: goal <= 1 ms $goal."
} | tee "$RESULTS"
