#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/heapread.sh: speed of the heap trace analysis (issue 27, item 2):
# `kiln top` on kiln's trace of bench/mallocloop.c (2 threads x 10 M
# malloc/free) against `heaptrack_print` on heaptrack's trace of the same
# program, and against another kiln (KILN_BASE, e.g. the build before a
# change).  Goal: kiln top >= 10x faster than heaptrack_print.
#
# Configurations, run RUNS times each, interleaved (round r starts at
# another one), medians of wall and CPU (user+sys), and per-round ratios:
#   base         $KILN_BASE top -q TRACE          (if KILN_BASE is set)
#   kiln-1       KILN_THREADS=1 $KILN top -q TRACE (one thread)
#   kiln-2       KILN_THREADS=2 $KILN top -q TRACE (the analysis on a second
#                                                  thread beside the decoding)
#   kiln         $KILN top -q TRACE               (the default: a second thread
#                                                  while it pays)
#   heaptrack    heaptrack_print HEAPTRACK.zst
# The traces are made once into $BENCH_OUT (kiln's with libkiln.so as
# bench/heap.sh does, heaptrack's with `heaptrack -o`), or given as
# TRACE= and HT= (e.g. those bench/heap.sh left in bench/out/heap).
# Output: a markdown section on stdout and in $RESULTS.
#
# Environment: KILN (build/kiln), KILN_BASE (none), RUNS (5), THREADS (2),
# NICE (-10 as root: the runs in a session of their own at that autogroup nice),
# OPS (10000000), TRACE, HT, BENCH_OUT (bench/out/heapread), RESULTS
# (bench/RESULTS-heapread.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
KILN_BASE=${KILN_BASE:-}
RUNS=${RUNS:-5}
THREADS=${THREADS:-2}
OPS=${OPS:-10000000}
OUT=${BENCH_OUT:-$root/bench/out/heapread}
RESULTS=${RESULTS:-$here/RESULTS-heapread.md}
LIBKILN=$(dirname "$KILN")/libkiln.so
LIBKILN_MALLOC=$(dirname "$KILN")/libkiln-malloc.so
say() { echo "heapread-bench: $*" >&2; }
die() { say "$*"; exit 1; }
# Own session at autogroup nice NICE (root: -10), as bench/heap.sh does:
# with scheduler autogroups nice weighs only processes of one session.
if [ "$(id -u)" = 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
if [ "$NICE" != 0 ] && [ -z "${HEAPREAD_INNER:-}" ] &&
   [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] &&
   command -v setsid >/dev/null 2>&1; then
    HEAPREAD_INNER=1 setsid bash "$0" "$@" &
    inner=$!
    trap 'kill -TERM -- -"$inner" 2>/dev/null' INT TERM
    wait "$inner"
    exit $?
fi
agnote=
if [ -n "${HEAPREAD_INNER:-}" ] && echo "$NICE" >/proc/self/autogroup 2>/dev/null; then
    agnote=", own session at autogroup nice $NICE"
fi
mkdir -p "$OUT"
command -v heaptrack_print >/dev/null || die "heaptrack_print is missing (apt-get install heaptrack)"

TRACE=${TRACE:-$OUT/kiln.trace.zst}
HT=${HT:-$OUT/heaptrack.zst}
bin=$OUT/mallocloop
if [ ! -s "$TRACE" ] || [ ! -s "$HT" ]; then
    gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$bin" "$here/mallocloop.c" ||
        die "cannot build mallocloop"
fi
if [ ! -s "$TRACE" ]; then
    say "recording kiln's trace"
    env LD_PRELOAD="$LIBKILN_MALLOC $LIBKILN" KILN_HEAP_TRACE="$TRACE" \
        "$bin" "$THREADS" "$OPS" >/dev/null || die "kiln trace failed"
fi
if [ ! -s "$HT" ]; then
    say "recording heaptrack's trace"
    heaptrack -o "${HT%.zst}" "$bin" "$THREADS" "$OPS" >/dev/null 2>&1 ||
        die "heaptrack failed"
fi

configs=()
[ -n "$KILN_BASE" ] && configs+=(base)
configs+=(kiln-1 kiln-2 kiln heaptrack)
res=$OUT/runs.tsv
: >"$res"
run_one() {
    local id=$1 r=$2 t0 t1 u s
    case $id in
    base) cmd=("$KILN_BASE" top -q "$TRACE") ;;
    kiln-1) cmd=(env KILN_THREADS=1 "$KILN" top -q "$TRACE") ;;
    kiln-2) cmd=(env KILN_THREADS=2 "$KILN" top -q "$TRACE") ;;
    kiln) cmd=("$KILN" top -q "$TRACE") ;;
    heaptrack) cmd=(heaptrack_print "$HT") ;;
    esac
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$OUT/time.txt" "${cmd[@]}" >"$OUT/$id.out" 2>"$OUT/$id.err" ||
        die "$id failed: $(head -c 300 "$OUT/$id.err")"
    t1=$(date +%s%N)
    read -r u s <"$OUT/time.txt"
    printf '%s\t%s\t%s\t%s\n' "$id" "$r" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')" \
        "$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')" >>"$res"
    say "$id round $r: $(tail -1 "$res" | cut -f3,4)"
}
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
n=${#configs[@]}
for ((r = 1; r <= RUNS; r++)); do
    for ((k = 0; k < n; k++)); do run_one "${configs[$(((k + r - 1) % n))]}" "$r"; done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
# The outputs agree: the same totals from every kiln, and heaptrack's calls.
if [ -n "$KILN_BASE" ]; then cmp -s "$OUT/base.out" "$OUT/kiln.out" || die "kiln and KILN_BASE differ"; fi
cmp -s "$OUT/kiln-1.out" "$OUT/kiln.out" && cmp -s "$OUT/kiln-1.out" "$OUT/kiln-2.out" ||
    die "one thread and two differ"

med() { awk -F'\t' -v id="$1" -v c="$2" '$1 == id {print $c}' "$res" | sort -g |
    awk '{a[NR] = $1} END {if (!NR) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
all() { awk -F'\t' -v id="$1" -v c="$2" '$1 == id {printf "%s%s", (n++ ? " " : ""), $c}' "$res"; }
# paired A B COL: median over rounds of B / A (how many times A is faster)
paired() {
    awk -F'\t' -v a="$1" -v b="$2" -v c="$3" '$1 == a {x[$2] = $c} $1 == b {y[$2] = $c}
        END {for (r in x) if ((r in y) && x[r] > 0) print y[r] / x[r]}' "$res" | sort -g |
        awk '{a[NR] = $1} END {if (!NR) print "-"; else if (NR % 2) printf "%.2f\n", a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }
label() {
    case $1 in
    base) echo "\`kiln top\`, KILN_BASE" ;;
    kiln-1) echo "\`kiln top\`, KILN_THREADS=1" ;;
    kiln-2) echo "\`kiln top\`, KILN_THREADS=2 (analysis on a second thread)" ;;
    kiln) echo "\`kiln top\` (default: a second thread while it pays)" ;;
    heaptrack) echo "\`heaptrack_print\` on heaptrack's .zst" ;;
    esac
}
{
    echo "## Heap trace analysis: kiln top vs heaptrack_print (issue 27, item 2)"
    echo
    echo "Generated by \`bench/heapread.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs,"
    echo "\`$KILN\` (tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null))${KILN_BASE:+, base \`$KILN_BASE\`};"
    echo "$(dpkg-query -W -f '${Package} ${Version}' heaptrack 2>/dev/null).  Traces of \`bench/mallocloop.c\` ($THREADS threads x $OPS ops):"
    echo "kiln's $(stat -c %s "$TRACE") bytes, heaptrack's $(stat -c %s "$HT") bytes.  $RUNS rounds, interleaved;"
    echo "medians; per-round ratios are heaptrack_print's time over kiln's in the same round."
    echo "Load average at start: $load_start; at end: $load_end$agnote (2 CPUs shared with other"
    echo "jobs: wall times are inflated by the load, CPU times much less; the second thread"
    echo "can only show on wall time, and only when a second core is free)."
    echo
    echo "| configuration | wall (s) | runs (s) | CPU user+sys (s) | runs (s) | vs heaptrack_print: wall | per-round | CPU | per-round |"
    echo "|---|---:|---|---:|---|---:|---:|---:|---:|"
    for id in "${configs[@]}"; do
        if [ "$id" = heaptrack ]; then
            echo "| $(label "$id") | $(med "$id" 3) | $(all "$id" 3) | $(med "$id" 4) | $(all "$id" 4) | - | - | - | - |"
        else
            echo "| $(label "$id") | $(med "$id" 3) | $(all "$id" 3) | $(med "$id" 4) | $(all "$id" 4) | $(ratio "$(med heaptrack 3)" "$(med "$id" 3)")× | $(paired "$id" heaptrack 3)× | $(ratio "$(med heaptrack 4)" "$(med "$id" 4)")× | $(paired "$id" heaptrack 4)× |"
        fi
    done
    echo
} | tee "$RESULTS"
