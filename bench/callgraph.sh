#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/callgraph.sh: `kiln callgraph -o x.svg` against `go tool pprof -svg`
# on the same pprof file, the bench's 1,000,000-sample profile (issue 13,
# "Speed": at least 10x faster, at most 1/5 of pprof's peak RSS).  Prints a
# markdown section on stdout and writes it to bench/RESULTS-callgraph.md
# (bench/run.sh appends it to RESULTS.md).
#
# The input is bench/run.sh's: perf script text from bench/gen-perfscript.c
# (SAMPLES samples over STACKS candidate stacks, SEED), converted to pprof
# by kiln convert: $BENCH_OUT/x.pb.gz when run.sh made it, else made here
# the same way.  Both tools draw the whole pipeline: read the profile,
# build and prune the graph at the same defaults (node fraction 0.005, edge
# fraction 0.001, 80 nodes), lay it out with graphviz's dot layout and
# write the SVG.  kiln does the layout in process through libgvc; pprof
# runs the `dot` program, whose time and memory GNU time counts as part of
# pprof's (children are included in the wall time; peak RSS is the largest
# of the process tree's members, which for pprof is pprof itself).  The
# runs alternate (kiln, pprof, kiln, pprof, ...) RUNS times each; medians
# are reported, with user+system CPU seconds, which are steadier than wall
# time on a loaded machine.
#
# Environment: KILN (default build/kiln), RUNS (3), SAMPLES (1000000),
# STACKS (100000), SEED (1), BENCH_OUT (bench/out), RESULTS
# (bench/RESULTS-callgraph.md).  Exit status 1 if a run failed; goals
# missed are reported only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
RUNS=${RUNS:-3}
SAMPLES=${SAMPLES:-1000000}
STACKS=${STACKS:-100000}
SEED=${SEED:-1}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-callgraph.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

. "$here/lib.sh"
say() { echo "callgraph-bench: $*" >&2; }
die() { say "$*"; exit 1; }

[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time, Debian time) is needed for peak RSS"
gopprof=$(bench_gopprof)
[ -n "$gopprof" ] || die "go tool pprof not found (Debian golang-go)"
command -v dot >/dev/null 2>&1 || die "graphviz's dot not found: go tool pprof -svg needs it"
mkdir -p "$OUT" || exit 1

pb=$OUT/x.pb.gz
if [ ! -s "$pb" ]; then
    gen=$OUT/gen-perfscript
    if [ ! -x "$gen" ] || [ "$here/gen-perfscript.c" -nt "$gen" ]; then
        cc -O2 -std=gnu17 -o "$gen" "$here/gen-perfscript.c" -lm || die "cannot build the generator"
    fi
    say "generating $SAMPLES samples and converting them to $pb"
    "$gen" -n "$SAMPLES" -k "$STACKS" -s "$SEED" -o "$OUT/cg-text.perf" 2>"$OUT/cg-text.info" ||
        die "gen-perfscript failed"
    "$KILN" convert -q "$OUT/cg-text.perf" -o "$pb" || die "kiln convert failed"
    rm -f "$OUT/cg-text.perf"
fi
pb_bytes=$(stat -c %s "$pb")
nsamples=$(HOME=$OUT "$KILN" top -q -n 1 --sample-type samples "$pb" 2>/dev/null |
           awk '/of .* total/ { for (i = 1; i <= NF; i++) if ($i == "of") print $(i + 1); exit }')
cat "$pb" >/dev/null

GOTMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-cg-go.XXXXXX") || exit 1
trap 'rm -rf "$GOTMP"' EXIT
mkdir -p "$GOTMP/home" "$GOTMP/pprof"
export PPROF_TMPDIR=$GOTMP/pprof

# run NAME SVG CMD...: one timed run; appends "NAME wall_s rss_kib cpu_s".
run() {
    local name=$1 svg=$2 t0 t1 rc
    shift 2
    rm -f "$svg"
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$OUT/cg-time.txt" "$@" >"$OUT/cg-stdout.txt" 2>"$OUT/cg-stderr.txt"
    rc=$?
    t1=$(date +%s%N)
    if [ "$rc" -ne 0 ] || ! grep -q '</svg>' "$svg" 2>/dev/null; then
        say "$name failed (exit $rc): $(head -c 300 "$OUT/cg-stderr.txt")"
        return 1
    fi
    printf '%s %s %s %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" \
        "$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/cg-time.txt")" \
        "$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$OUT/cg-time.txt")" \
        >>"$OUT/cg-runs.txt"
    say "$(tail -1 "$OUT/cg-runs.txt")"
}

: >"$OUT/cg-runs.txt"
failed=0
for ((i = 0; i < RUNS; i++)); do
    run kiln "$OUT/cg-kiln.svg" "$KILN" callgraph -q "$pb" -o "$OUT/cg-kiln.svg" || failed=1
    run pprof "$OUT/cg-pprof.svg" env HOME="$GOTMP/home" "$gopprof" -svg \
        -output "$OUT/cg-pprof.svg" "$pb" || failed=1
done
[ "$failed" = 0 ] || die "a run failed (see above)"

med() { bench_med "$OUT/cg-runs.txt" "$1" "$2"; }
kw=$(med kiln 2) kr=$(med kiln 3) kc=$(med kiln 4)
pw=$(med pprof 2) pr=$(med pprof 3) pc=$(med pprof 4)
speed=$(bench_ratio "$pw" "$kw") cpu=$(bench_ratio "$pc" "$kc") mem=$(bench_ratio "$pr" "$kr")
# Boxes drawn: kiln's function nodes (N1...) and legend; pprof's function
# nodes (node1...) and the label "nodelets" (N1_0...) it counts against
# -nodecount.
knodes=$(grep -o '<g id="node[0-9]*" class="node"' "$OUT/cg-kiln.svg" | sort -u | wc -l)
pnodes=$(grep -o '<g id="node[0-9]*" class="node"' "$OUT/cg-pprof.svg" | sort -u | wc -l)
ptags=$(grep -o '<g id="N[0-9]*_[0-9]*" class="node"' "$OUT/cg-pprof.svg" | wc -l)

{
    echo "## kiln callgraph against go tool pprof -svg"
    echo
    echo "Input: \`$(basename "$pb")\`, $pb_bytes bytes of pprof, ${nsamples:-?} samples"
    echo "(bench/gen-perfscript.c, seed $SEED, $STACKS candidate stacks, converted by kiln)."
    echo "Same defaults in both (node fraction 0.005, edge fraction 0.001, 80 nodes);"
    echo "Boxes drawn: kiln $knodes (80 functions and the legend); pprof $pnodes functions"
    echo "and $ptags label boxes (pprof counts the samples' labels against -nodecount)."
    echo "pprof also shortens the C++ names (no parameters or template arguments),"
    echo "merging overloads; kiln keeps them whole, as kiln top does."
    echo "$RUNS runs each, alternating; medians. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "on $(nproc) CPUs."
    echo
    echo "| tool | wall s | CPU s (user+sys) | peak RSS MiB |"
    echo "|---|---|---|---|"
    echo "| \`kiln callgraph -o x.svg\` (libgvc in process) | $kw | $kc | $(awk -v k="$kr" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo "| \`go tool pprof -svg\` (runs dot) | $pw | $pc | $(awk -v k="$pr" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo
    echo "| measure | ratio (pprof / kiln) | goal | |"
    echo "|---|---|---|---|"
    echo "| wall time | ${speed}x | >= 10x | $(bench_goal "$speed" 10) |"
    echo "| CPU time | ${cpu}x | | |"
    echo "| peak RSS | ${mem}x | >= 5x (kiln at most 1/5) | $(bench_goal "$mem" 5) |"
    echo
    echo "Runs (tool, wall s, peak RSS KiB, CPU s):"
    echo
    sed 's/^/    /' "$OUT/cg-runs.txt"
} >"$OUT/cg-results.md"
cp "$OUT/cg-results.md" "$RESULTS" || failed=1
cat "$OUT/cg-results.md"
exit "$failed"
