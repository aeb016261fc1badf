#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run.sh: speed benchmarks of kiln's offline tools against the tools
# they replace (`make bench` runs it; see bench/README.md).
#
# Generates realistic `perf script` text (bench/gen-perfscript.c, >= 1e6
# samples, into bench/out/, reused while the generator and its parameters do
# not change), then times, each RUNS times (median reported):
#   - kiln flame TEXT -o SVG               pinned to one core: MB/s of text
#   - kiln convert TEXT -o PB.GZ           pinned to one core: MB/s of text
#   - FlameGraph stackcollapse-perf.pl | flamegraph.pl on TEXT, when found
#   - kiln top PB.GZ    vs go tool pprof -top PB.GZ   (same file)
#   - kiln flame PB.GZ  vs go tool pprof -svg PB.GZ   (same file)
#   - kiln flame on inputs with 1/4 the samples and 4x the distinct stacks:
#     peak RSS should follow distinct stacks, not input size
# and writes bench/RESULTS.md.  Peak RSS is /usr/bin/time -v's "Maximum
# resident set size".  A step that fails is reported as failed and makes
# the script exit 1; goals missed are reported but do not fail it.
#
# Environment: KILN (default build/kiln), RUNS (3), SAMPLES (1000000),
# SEED (1), STACKS (100000), BENCH_OUT (bench/out), RESULTS
# (bench/RESULTS.md), FLAMEGRAPH_DIR (a FlameGraph checkout, optional),
# QUICK=1 (skip the memory-scaling inputs).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
RUNS=${RUNS:-3}
SAMPLES=${SAMPLES:-1000000}
SEED=${SEED:-1}
STACKS=${STACKS:-100000}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS.md}
QUICK=${QUICK:-0}

export SEED BENCH_LOAD_START
BENCH_LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT" || exit 1
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

# go tool pprof wants a writable HOME and cache; keep them out of the way.
GOTMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-go.XXXXXX") || exit 1
trap 'rm -rf "$GOTMP"' EXIT
export GOCACHE=$GOTMP/gocache PPROF_TMPDIR=$GOTMP/pprof
mkdir -p "$PPROF_TMPDIR"
gohome=$GOTMP/home
mkdir -p "$gohome"

failed=0
# name, status, median wall s, median RSS KiB, input bytes, runs (or why),
# median CPU s
res=$OUT/results.tsv
: >"$res"
log=$OUT/bench.log
: >"$log"

say() { echo "bench: $*" >&2; }

now_ns() { date +%s%N; }

# measure NAME INPUT_BYTES CHECK -- CMD...: runs CMD RUNS times under
# /usr/bin/time -v; CHECK is a shell snippet run after each run that must
# succeed (validates the output).  Appends a line to $res.
measure() {
    local name=$1 bytes=$2 check=$3
    shift 4
    local i t0 t1 rc times=() rss=() cpus=() msg=
    say "$name: $*"
    for ((i = 0; i < RUNS; i++)); do
        t0=$(now_ns)
        /usr/bin/time -v -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt"
        rc=$?
        t1=$(now_ns)
        {
            echo "== $name run $i: $* (exit $rc)"
            head -c 2000 "$OUT/stderr.txt"
        } >>"$log"
        if [ "$rc" -ne 0 ]; then
            msg=$(grep -v '^Command exited' "$OUT/stderr.txt" | head -1 | tr '\t|' '  ' | cut -c1-160)
            msg="exit $rc: ${msg:-no message}"
            break
        fi
        if ! (eval "$check") >>"$log" 2>&1; then
            msg="output check failed: $check"
            break
        fi
        times+=("$(( (t1 - t0) / 1000 ))")
        rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time.txt")")
        # user + system CPU seconds: robust against other jobs on the machine
        cpus+=("$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$OUT/time.txt")")
    done
    if [ -n "$msg" ]; then
        say "$name: FAILED ($msg)"
        printf '%s\tfailed\t\t\t%s\t%s\n' "$name" "$bytes" "$msg" >>"$res"
        failed=1
        return 1
    fi
    local med_us med_rss med_cpu all
    med_us=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    med_rss=$(printf '%s\n' "${rss[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    med_cpu=$(printf '%s\n' "${cpus[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    all=$(printf '%s\n' "${times[@]}" | awk '{printf "%s%.3f", (NR>1?" ":""), $1/1e6}')
    say "$name: median $(awk -v u="$med_us" 'BEGIN{printf "%.3f", u/1e6}') s, CPU $med_cpu s, RSS ${med_rss} KiB (runs: $all)"
    printf '%s\tok\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(awk -v u="$med_us" 'BEGIN{printf "%.6f", u/1e6}')" \
        "$med_rss" "$bytes" "$all" "$med_cpu" >>"$res"
    return 0
}

# peak_anon NAME CMD...: one more run of CMD, polling /proc/PID/status every
# 20 ms for RssAnon, the process's own memory without the pages of the input
# file it maps (which count in "Maximum resident set size").  Appends a line
# NAME-anon with the peak (KiB) to $res.
peak_anon() {
    local name=$1 pid peak=0 k v _
    shift
    "$@" >/dev/null 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        while read -r k v _; do
            if [ "$k" = RssAnon: ]; then
                [ "$v" -gt "$peak" ] && peak=$v
                break
            fi
        done <"/proc/$pid/status" 2>/dev/null
        sleep 0.02
    done
    if wait "$pid" && [ "$peak" -gt 0 ]; then
        say "$name: peak anonymous RSS $peak KiB"
        printf '%s-anon\tok\t\t%s\t\t\n' "$name" "$peak" >>"$res"
    else
        printf '%s-anon\tfailed\t\t\t\t%s\n' "$name" "no reading" >>"$res"
    fi
}

# skipped NAME WHY: a comparison that could not run here.
skipped() {
    say "$1: skipped ($2)"
    printf '%s\tskipped\t\t\t\t%s\n' "$1" "$2" >>"$res"
}

# ---- inputs

gen_src=$here/gen-perfscript.c
gen=$OUT/gen-perfscript
if [ ! -x "$gen" ] || [ "$gen_src" -nt "$gen" ]; then
    say "building the generator"
    cc -O2 -std=gnu17 -o "$gen" "$gen_src" -lm || { say "cannot build $gen_src"; exit 1; }
fi

# gen_input FILE ARGS...: (re)generates FILE unless a stamp says it is current.
gen_input() {
    local file=$1 stamp
    shift
    stamp="$(cksum <"$gen_src" | cut -d' ' -f1) $*"
    if [ -f "$file" ] && [ -f "$file.stamp" ] && [ "$(cat "$file.stamp")" = "$stamp" ]; then
        return 0
    fi
    say "generating $file ($*)"
    rm -f "$file.stamp"
    "$gen" "$@" -o "$file" 2>"$file.info" || { cat "$file.info" >&2; return 1; }
    echo "$stamp" >"$file.stamp"
}

text=$OUT/text.perf
gen_input "$text" -n "$SAMPLES" -k "$STACKS" -s "$SEED" || exit 1
text_bytes=$(stat -c %s "$text")
if [ "$QUICK" != 1 ]; then
    text_q=$OUT/text-quarter.perf
    text_4k=$OUT/text-4xstacks.perf
    gen_input "$text_q" -n $((SAMPLES / 4)) -k "$STACKS" -s "$SEED" || exit 1
    gen_input "$text_4k" -n "$SAMPLES" -k $((STACKS * 4)) -s "$SEED" || exit 1
fi
# warm the page cache so the first timed run reads memory, not disk
cat "$OUT"/*.perf >/dev/null

# ---- tools

if [ ! -x "$KILN" ]; then
    say "no kiln binary at $KILN (build it first, or set KILN)"
    printf 'kiln\tfailed\t\t\t\tno kiln binary at %s\n' "$KILN" >>"$res"
    failed=1
fi
# The pprof binary itself (what `go tool pprof` execs), so that the go
# command's own start-up is not counted against go.
have_go=0 gopprof=
if command -v go >/dev/null 2>&1 && gopprof=$(go tool -n pprof 2>/dev/null) &&
   [ -x "$gopprof" ]; then
    have_go=1
fi
have_dot=0
command -v dot >/dev/null 2>&1 && have_dot=1
fg_collapse= fg_flame=
for d in "${FLAMEGRAPH_DIR:-}" /usr/share/flamegraph /usr/lib/flamegraph; do
    [ -n "$d" ] || continue
    if [ -x "$d/stackcollapse-perf.pl" ] && [ -x "$d/flamegraph.pl" ]; then
        fg_collapse=$d/stackcollapse-perf.pl fg_flame=$d/flamegraph.pl
        break
    fi
done
if [ -z "$fg_collapse" ] && command -v stackcollapse-perf.pl >/dev/null 2>&1 &&
   command -v flamegraph.pl >/dev/null 2>&1; then
    fg_collapse=$(command -v stackcollapse-perf.pl)
    fg_flame=$(command -v flamegraph.pl)
fi

pin="taskset -c 0"
pb=$OUT/x.pb.gz
svg_check='[ -s "$OUT/k.svg" ] && head -c 300 "$OUT/k.svg" | grep -q "<svg" && grep -q "</svg>" "$OUT/k.svg"'

# ---- kiln on the text (one core)

if [ -x "$KILN" ]; then
    measure kiln-flame-text "$text_bytes" "$svg_check" -- \
        $pin "$KILN" flame -q "$text" -o "$OUT/k.svg"
    rm -f "$pb"
    measure kiln-convert-text "$text_bytes" '[ -s "$pb" ]' -- \
        $pin "$KILN" convert -q "$text" -o "$pb"
fi

if [ -n "$fg_collapse" ]; then
    measure flamegraph-pl-text "$text_bytes" '[ -s "$OUT/fg.svg" ]' -- \
        bash -c '"$1" "$2" | "$3" >"$4"' fg "$fg_collapse" "$text" "$fg_flame" "$OUT/fg.svg"
else
    skipped flamegraph-pl-text "FlameGraph's perl scripts are not packaged in Debian 12 (apt-cache search flamegraph finds nothing); set FLAMEGRAPH_DIR to a checkout to include them"
fi

# ---- the same pprof file into kiln and go tool pprof

pb_bytes=
if [ -s "$pb" ]; then
    pb_bytes=$(stat -c %s "$pb")
    measure kiln-top-pprof "$pb_bytes" 'grep -q "flat%" "$OUT/stdout.txt"' -- \
        $pin "$KILN" top -q "$pb"
    cp "$OUT/stdout.txt" "$OUT/kiln-top.txt" 2>/dev/null
    if [ "$have_go" = 1 ]; then
        measure pprof-top-pprof "$pb_bytes" 'grep -q "flat%" "$OUT/stdout.txt"' -- \
            env HOME="$gohome" "$gopprof" -top "$pb"
        cp "$OUT/stdout.txt" "$OUT/pprof-top.txt" 2>/dev/null
    else
        skipped pprof-top-pprof "go tool pprof not found (Debian golang-go)"
    fi
    measure kiln-flame-pprof "$pb_bytes" "$svg_check" -- \
        $pin "$KILN" flame -q "$pb" -o "$OUT/k.svg"
    if [ "$have_go" = 1 ] && [ "$have_dot" = 1 ]; then
        measure pprof-svg-pprof "$pb_bytes" 'grep -q "</svg>" "$OUT/p.svg"' -- \
            env HOME="$gohome" "$gopprof" -svg -output "$OUT/p.svg" "$pb"
    else
        skipped pprof-svg-pprof "go tool pprof or graphviz dot not found"
    fi
else
    for n in kiln-top-pprof pprof-top-pprof kiln-flame-pprof pprof-svg-pprof; do
        skipped "$n" "no pprof file: kiln convert failed"
    done
    failed=1
fi

# ---- memory against distinct stacks

q_bytes= k4_bytes=
if [ "$QUICK" != 1 ] && [ -x "$KILN" ]; then
    q_bytes=$(stat -c %s "$text_q")
    k4_bytes=$(stat -c %s "$text_4k")
    measure kiln-flame-quarter "$q_bytes" "$svg_check" -- \
        $pin "$KILN" flame -q "$text_q" -o "$OUT/k.svg"
    measure kiln-flame-4xstacks "$k4_bytes" "$svg_check" -- \
        $pin "$KILN" flame -q "$text_4k" -o "$OUT/k.svg"
    for f in quarter:"$text_q" text:"$text" 4xstacks:"$text_4k"; do
        [ "$(awk -F'\t' -v n="kiln-flame-${f%%:*}" '$1==n {print $2}' "$res")" = ok ] || continue
        peak_anon "kiln-flame-${f%%:*}" $pin "$KILN" flame -q "${f#*:}" -o "$OUT/k.svg"
    done
fi

# ---- the report

"$here/report.sh" "$res" "$OUT" "$RESULTS" "$KILN" "$text" || failed=1

# ---- kiln record against perf record, the agent against libprofiler,
# kiln callgraph against pprof -svg (on x.pb.gz above), kiln serve against
# go tool pprof -http and speedscope in headless chromium (text.perf, x.pb.gz):
# their own scripts, their sections appended to RESULTS.md.
if [ "$QUICK" != 1 ]; then
    for part in record record-a burst agent malloc-split heap callgraph legacy stat perfdata perfdata-a serve; do
        [ -x "$here/$part.sh" ] || continue
        say "running bench/$part.sh"
        if KILN=$KILN "$here/$part.sh" > "$OUT/$part.md" 2>> "$log"; then
            { echo; cat "$OUT/$part.md"; } >> "$RESULTS"
        else
            { echo; echo "## bench/$part.sh FAILED (see $log)"; } >> "$RESULTS"
            failed=1
        fi
    done
fi
say "wrote $RESULTS"
if [ "$failed" != 0 ]; then
    say "some steps FAILED (see $RESULTS and $log)"
    exit 1
fi
exit 0
