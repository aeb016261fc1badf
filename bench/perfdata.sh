#!/usr/bin/env bash
# bench/perfdata.sh: reading perf.data.  `kiln top perf.data` against
# `perf report --stdio`, `perf script` alone (text out, to /dev/null) and
# `perf script | kiln top -`, on the same files: the shares workload
# recorded with `perf record -g` (fp build) and `--call-graph dwarf`
# (default 8 KiB stack copies, nofp build), each with at least $MIN
# samples.  Every command runs RUNS times, interleaved; medians of wall
# and CPU (user+sys) time are reported.  Prints a markdown section on
# stdout and writes it to bench/RESULTS-perfdata.md (bench/run.sh calls
# this script).  Goal (issue 11): kiln top >= 10x faster than perf script.
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

record() {	# name, perf options..., -- program
    local name=$1 n; shift
    perf record -q -F "$FREQ" -o "$OUT/$name.data" "$@" >/dev/null 2>"$OUT/$name.rec.err" ||
        { say "perf record $name failed: $(tail -1 "$OUT/$name.rec.err")"; return 1; }
    n=$(perf report -i "$OUT/$name.data" --stdio --no-children -n --sort pid -g none 2>/dev/null |
        awk '$1 ~ /%$/ { s += $2 } END { print s + 0 }')
    echo "$n" > "$OUT/$name.samples"
    [ "$n" -ge "$MIN" ] || { say "$name: $n samples, fewer than $MIN (raise SECONDS_CPU or FREQ)"; return 1; }
}

# time_cmd NAME CMD...: appends "NAME wall cpu" to $OUT/times.
time_cmd() {
    local name=$1; shift
    /usr/bin/time -f '%e %U %S' -o "$OUT/t" bash -c "$*" >/dev/null 2>"$OUT/err" ||
        { say "$name failed: $(tail -2 "$OUT/err")"; return 1; }
    awk -v n="$name" '{ print n, $1, $2 + $3 }' "$OUT/t" >> "$OUT/times"
}

say "recording (at least $MIN samples each)"
record fp -g -- "$WL/shares" "$SECONDS_CPU" || exit 1
record dwarf --call-graph dwarf -- "$WL/shares-nofp" "$SECONDS_CPU" || exit 1

: > "$OUT/times"
for i in $(seq "$RUNS"); do
    for f in fp dwarf; do
        d=$OUT/$f.data
        say "run $i: $f"
        time_cmd "$f kiln-top" "'$KILN' top -q '$d'" || exit 1
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
    echo "median of $RUNS runs, interleaved; load average $load_start at the start,"
    echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end ($(nproc) CPUs)."
    echo
    echo "| file | samples | size | command | wall s | CPU s | wall vs kiln top |"
    echo "|---|---:|---:|---|---:|---:|---:|"
    for f in fp dwarf; do
        kw=$(med "$f kiln-top" 2)
        for c in kiln-top perf-report perf-script "perf-script|kiln-top"; do
            w=$(med "$f $c" 2); u=$(med "$f $c" 3)
            r=$(awk -v a="$w" -v b="$kw" 'BEGIN { printf "%.1fx", (b > 0 ? a / b : 0) }')
            echo "| $f | $(cat "$OUT/$f.samples") | $(du -m "$OUT/$f.data" | cut -f1) MB | \`${c//|/ \| }\` | $w | $u | $r |"
        done
    done
    echo
    for f in fp dwarf; do
        kw=$(med "$f kiln-top" 2); sw=$(med "$f perf-script" 2)
        awk -v f="$f" -v a="$sw" -v b="$kw" 'BEGIN { r = (b > 0 ? a / b : 0);
            printf "- %s: kiln top is %.1fx faster than perf script alone (goal >= 10x: %s)\n",
                f, r, (r >= 10 ? "met" : "missed") }'
    done
} | tee "$RESULTS"
