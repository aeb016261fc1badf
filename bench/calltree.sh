#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/calltree.sh: kiln serve's call tree (top-down and inverted, grouped
# by a label) and the first stack chart of a selection, on the 1M-sample
# bench profile with 100k and 300k distinct stacks drawn (issue 26, Speed:
# first paint < 300 ms after the request).
#
# The inputs are bench/gen-perfscript.c's perf script text, SAMPLES samples
# over STACKS stacks (each of STACKS_LIST), SEED; reused from BENCH_OUT when
# their stamp matches.  Each round starts a fresh kiln serve per binary
# (KILN, and KILN_BASE when set: the binary before a change, run in the same
# round, adjacent), waits for the input, then asks, each for the first time
# in that server (a new selection, nothing cached but the warm view's
# top-down tree, made at load):
#   inverted      /api/calltree?open=20&reverse=1
#   group=thread  /api/calltree?open=20&group=thread  (a filtered copy
#                 grouped by thread, then its tree)
#   group=thread inverted, group=pid, group=pid inverted
#   stack chart   /api/stackchart?width=1270 (the selection's samples put in
#                 time order once)
#   labels filter /api/calltree?open=20&labels=pid=4242 (a copy, no group)
#   top-down      /api/calltree?open=20 (the warm view: its tree is made
#                 at load, so this is the answer alone)
# and takes the server's CPU time around each request from /proc/PID/stat
# (utime + stime; the machine is shared, so CPU time, not wall time, is
# compared) and curl's wall time.  Medians over ROUNDS rounds.
# Writes a markdown section to RESULTS (bench/RESULTS-calltree.md) and
# stdout.  Environment: KILN (build/kiln), KILN_BASE (none), SAMPLES
# (1000000), STACKS_LIST ("100000 300000"), SEED (1), ROUNDS (5), BENCH_OUT
# (bench/out), RESULTS, LABEL_NEW ("after"), LABEL_BASE ("before").
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
KILN=${KILN:-$root/build/kiln}
KILN_BASE=${KILN_BASE:-}
SAMPLES=${SAMPLES:-1000000}
STACKS_LIST=${STACKS_LIST:-100000 300000}
SEED=${SEED:-1}
ROUNDS=${ROUNDS:-5}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-calltree.md}
LABEL_NEW=${LABEL_NEW:-after}
LABEL_BASE=${LABEL_BASE:-before}
say() { echo "calltree: $*" >&2; }
die() { say "$*"; exit 1; }
[ -x "$KILN" ] || die "no kiln binary at $KILN"
[ -z "$KILN_BASE" ] || [ -x "$KILN_BASE" ] || die "no kiln binary at $KILN_BASE"
command -v curl >/dev/null || die "curl not found"
mkdir -p "$OUT" || exit 1

gen_src=$here/gen-perfscript.c
gen=$OUT/gen-perfscript
if [ ! -x "$gen" ] || [ "$gen_src" -nt "$gen" ]; then
    cc -O2 -std=gnu17 -o "$gen" "$gen_src" -lm || die "cannot build $gen_src"
fi
input() {	# input STACKS: the text's path, generated when missing
    local text=$OUT/calltree-$1.perf
    local stamp="$(cksum <"$gen_src" | cut -d' ' -f1) -n $SAMPLES -k $1 -s $SEED"
    if ! { [ -f "$text" ] && [ "$(cat "$text.stamp" 2>/dev/null)" = "$stamp" ]; }; then
        say "generating $text ($SAMPLES samples, $1 stacks)"
        rm -f "$text.stamp"
        "$gen" -n "$SAMPLES" -k "$1" -s "$SEED" -o "$text" 2>"$text.info" ||
            die "gen-perfscript failed"
        echo "$stamp" >"$text.stamp"
    fi
    echo "$text"
}

# name and query of each request, in the order asked
reqs=(
    "inverted|api/calltree?open=20&reverse=1"
    "group=thread|api/calltree?open=20&group=thread"
    "group=thread, then inverted|api/calltree?open=20&group=thread&reverse=1"
    "group=pid|api/calltree?open=20&group=pid"
    "group=pid, then inverted|api/calltree?open=20&group=pid&reverse=1"
    "labels=pid=4242|api/calltree?open=20&labels=pid%3D4242"
    "stack chart (first)|api/stackchart?width=1270"
    "stack chart (again)|api/stackchart?width=1270"
    "top-down (warm view)|api/calltree?open=20"
)
runs=$OUT/calltree-runs.txt
: >"$runs"
hz=$(getconf CLK_TCK)
pid=
trap '[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null' EXIT

# one_server LABEL BINARY STACKS TEXT: one fresh server, every request once
one_server() {
    local url a b w i name q
    bench_serve "$2" "$4" "$OUT/calltree-serve.out" || die "kiln serve did not load $4"
    pid=$bench_pid
    url=$bench_url
    for i in "${!reqs[@]}"; do
        name=${reqs[$i]%%|*}
        q=${reqs[$i]#*|}
        a=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
        w=$(curl -s -o "$OUT/calltree-answer.json" -w '%{http_code} %{time_total}' "$url$q")
        b=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
        [ "${w%% *}" = 200 ] || die "$q: HTTP ${w%% *}"
        # one line: KEY cpu_ms wall_ms answer-checksum
        echo "$1/$3/$i $(awk -v a="$a" -v b="$b" -v h="$hz" 'BEGIN { printf "%.0f", (b - a) * 1000 / h }') $(awk -v t="${w#* }" 'BEGIN { printf "%.0f", t * 1000 }') $(cksum <"$OUT/calltree-answer.json" | cut -d' ' -f1)" >>"$runs"
    done
    kill -INT "$pid"
    wait "$pid" 2>/dev/null
    pid=
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for k in $STACKS_LIST; do
    text=$(input "$k") || exit 1
    for r in $(seq 1 "$ROUNDS"); do
        say "$k stacks, round $r/$ROUNDS"
        [ -z "$KILN_BASE" ] || one_server base "$KILN_BASE" "$k" "$text"
        one_server new "$KILN" "$k" "$text"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Answers must not change: every run of a request gives the same bytes.
same=yes
for key in $(awk '{ print $1 }' "$runs" | sed 's|^[a-z]*/||' | sort -u); do
    n=$(awk -v k="$key" '{ s = $1; sub(/^[a-z]*\//, "", s) } s == k { print $4 }' "$runs" | sort -u | wc -l)
    [ "$n" = 1 ] || { same=no; say "answers differ for $key"; }
done

med() { bench_med "$runs" "$1" "$2"; }
{
    echo "## kiln serve: call tree and first stack chart of a selection (issue 26, Speed)"
    echo
    echo "Generated by \`bench/calltree.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kiln $(git -C "$root" rev-parse --short HEAD 2>/dev/null)."
    for k in $STACKS_LIST; do
        echo "Input $k: $(sed 's/^gen-perfscript: //' "$OUT/calltree-$k.perf.info" 2>/dev/null) (perf script text)."
    done
    echo "Load average at the start: $load_start; at the end: $load_end (a shared machine: CPU time is compared, wall time is noisy)."
    echo "Server CPU time (ms, /proc/PID/stat, 10 ms ticks) of each request, the first of its selection in a fresh"
    echo "server, median of $ROUNDS rounds; wall (ms, curl) in brackets.  Answers identical across binaries and rounds: $same."
    echo
    if [ -n "$KILN_BASE" ]; then
        echo "| request | stacks | $LABEL_BASE CPU (wall) | $LABEL_NEW CPU (wall) | goal < 300 ms ($LABEL_NEW, CPU) |"
        echo "|---|---:|---:|---:|---|"
    else
        echo "| request | stacks | CPU (wall) | goal < 300 ms (CPU) |"
        echo "|---|---:|---:|---|"
    fi
    for k in $STACKS_LIST; do
        for i in "${!reqs[@]}"; do
            name=${reqs[$i]%%|*}
            nc=$(med "new/$k/$i" 2)
            nw=$(med "new/$k/$i" 3)
            goal=$(awk -v v="$nc" 'BEGIN { print (v < 300 ? "met" : "**missed**") }')
            if [ -n "$KILN_BASE" ]; then
                echo "| $name | $k | $(med "base/$k/$i" 2) ($(med "base/$k/$i" 3)) | $nc ($nw) | $goal |"
            else
                echo "| $name | $k | $nc ($nw) | $goal |"
            fi
        done
    done
} | tee "$RESULTS"
