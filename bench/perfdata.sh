#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/perfdata.sh: reading perf.data.  `kiln top perf.data` against
# `perf report --stdio`, `perf script` alone (text out, to /dev/null) and
# `perf script | kiln top -`, on the same files: the shares workload
# recorded with `perf record -g` (fp build) and `--call-graph dwarf`
# (default 8 KiB stack copies, nofp build), each with at least $MIN
# samples.  Every command runs RUNS times, interleaved; medians of wall
# and CPU (user+sys) time are reported, ratios in CPU time.  Prints a markdown section on
# stdout and writes it to bench/RESULTS-perfdata.md (bench/run.sh calls
# this script).  Goal (issue 11): kiln top >= 10x faster than perf script.
#
# kiln top runs with its debug file cache warm (kiln-top) and off
# (kiln-top-nocache); the run that fills it is timed once (kiln-top-cold).
#
# Environment: KILN (default build/kiln), RUNS (3), MIN (100000), FREQ
# (20000 Hz), SECONDS_CPU (10), BENCH_OUT (bench/out), RESULTS
# (bench/RESULTS-perfdata.md).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
RUNS=${RUNS:-3}
MIN=${MIN:-100000}
FREQ=${FREQ:-20000}
SECONDS_CPU=${SECONDS_CPU:-10}
OUT=${BENCH_OUT:-$here/out}/perfdata
RESULTS=${RESULTS:-$here/RESULTS-perfdata.md}
WL=$(dirname "$KILN")/workloads
say() { echo "bench/perfdata: $*" >&2; }

command -v perf >/dev/null || { say "perf is not installed"; exit 1; }
[ -x "$WL/shares" ] && [ -x "$WL/shares-nofp" ] || { say "workloads not built"; exit 1; }
mkdir -p "$OUT/home" || exit 1
# perf's build-id cache goes here, not into the caller's home.
export HOME=$OUT/home
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# What is measured: the source as it is when the runs start.
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD -- src 2>/dev/null || echo ' (with uncommitted changes)')"

record() {	# name, perf options..., -- program
    local name=$1 n; shift
    perf record -q -F "$FREQ" -o "$OUT/$name.data" "$@" >/dev/null 2>"$OUT/$name.rec.err" ||
        { say "perf record $name failed: $(tail -1 "$OUT/$name.rec.err")"; return 1; }
    n=$(perf report -i "$OUT/$name.data" --stdio --no-children -n --sort pid -g none 2>/dev/null |
        awk '$1 ~ /%$/ { s += $2 } END { print s + 0 }')
    echo "$n" > "$OUT/$name.samples"
    [ "$n" -ge "$MIN" ] || { say "$name: $n samples, fewer than $MIN (raise SECONDS_CPU or FREQ)"; return 1; }
}

# time_cmd NAME CMD...: appends "NAME wall cpu" to $OUT/times.  CPU time
# is perf stat's task-clock of the command and its children (milliseconds
# with decimals: /usr/bin/time's 10 ms steps are a tenth of kiln's time).
time_cmd() {
    local name=$1; shift
    /usr/bin/time -f '%e' -o "$OUT/t" perf stat -x, -e task-clock -o "$OUT/tc" \
        bash -c "$*" >/dev/null 2>"$OUT/err" ||
        { say "$name failed: $(tail -2 "$OUT/err")"; return 1; }
    awk -F, -v n="$name" -v w="$(cat "$OUT/t")" '$3 == "task-clock" {
        printf "%s %s %.3f\n", n, w, $1 / 1000 }' "$OUT/tc" >> "$OUT/times"
}

say "recording (at least $MIN samples each)"
record fp -g -- "$WL/shares" "$SECONDS_CPU" || exit 1
record dwarf --call-graph dwarf -- "$WL/shares-nofp" "$SECONDS_CPU" || exit 1

# kiln's cache of decompressed debug files (docs/symbols.md), emptied
# here: the first kiln run fills it (timed alone, "cold"), the runs after
# read it; kiln-top-nocache runs with the cache off, as kiln did before it.
cache=$OUT/debug-cache
rm -rf "$cache"
: > "$OUT/times"
for f in fp dwarf; do
    time_cmd "$f kiln-top-cold" "KILN_CACHE_DIR='$cache' '$KILN' top -q '$OUT/$f.data'" || exit 1
done
for i in $(seq "$RUNS"); do
    for f in fp dwarf; do
        d=$OUT/$f.data
        say "run $i: $f"
        time_cmd "$f kiln-top" "KILN_CACHE_DIR='$cache' '$KILN' top -q '$d'" || exit 1
        time_cmd "$f kiln-top-nocache" "KILN_CACHE_DIR= '$KILN' top -q '$d'" || exit 1
        time_cmd "$f perf-report" "perf report -i '$d' --stdio" || exit 1
        time_cmd "$f perf-script" "perf script -i '$d'" || exit 1
        time_cmd "$f perf-script|kiln-top" "perf script -i '$d' | '$KILN' top -q -" || exit 1
    done
done

med() {	# name column -> median
    awk -v n="$1" -v c="$(($2 + 1))" '{ k = $1 " " $2; if (k == n) print $c }' "$OUT/times" |
        sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

{
    echo "## Reading perf.data (bench/perfdata.sh)"
    echo
    echo "The shares workload recorded by perf $(perf --version | awk '{print $3}') at $FREQ Hz;"
    echo "kiln at commit $commit;"
    echo "median of $RUNS runs, interleaved; load average $load_start at the start,"
    echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end ($(nproc) CPUs).  Ratios are of"
    echo "CPU time (user + sys): on a shared machine wall time is mostly waiting."
    echo
    echo "| file | samples | size | command | wall s | CPU s | CPU vs kiln top |"
    echo "|---|---:|---:|---|---:|---:|---:|"
    for f in fp dwarf; do
        ku=$(med "$f kiln-top" 3)
        for c in kiln-top kiln-top-nocache perf-report perf-script "perf-script|kiln-top"; do
            w=$(med "$f $c" 2); u=$(med "$f $c" 3)
            r=$(awk -v a="$u" -v b="$ku" 'BEGIN { printf "%.1fx", (b > 0 ? a / b : 0) }')
            echo "| $f | $(cat "$OUT/$f.samples") | $(du -m "$OUT/$f.data" | cut -f1) MB | \`${c//|/ \\| }\` | $w | $u | $r |"
        done
    done
    echo
    echo "kiln-top reads the debug file cache filled by one earlier run (kiln-top-cold,"
    echo "run once: fp $(med "fp kiln-top-cold" 3) s, dwarf $(med "dwarf kiln-top-cold" 3) s CPU);"
    echo "kiln-top-nocache runs with KILN_CACHE_DIR= (no cache: libdw inflates libc's DWARF)."
    echo
    for f in fp dwarf; do
        ku=$(med "$f kiln-top" 3); su=$(med "$f perf-script" 3)
        awk -v f="$f" -v a="$su" -v b="$ku" 'BEGIN { r = (b > 0 ? a / b : 0);
            printf "- %s: kiln top takes %.1fx less CPU time than perf script alone (goal >= 10x: %s)\n",
                f, r, (r >= 10 ? "met" : "missed") }'
    done
} | tee "$RESULTS"
