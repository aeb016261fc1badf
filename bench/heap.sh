#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/heap.sh: speed of kiln's heap profiler (libkiln.so with
# KILN_HEAP_TRACE, `kiln heap`) against heaptrack, gperftools' HEAPPROFILE
# and valgrind massif on the same multi-threaded malloc-heavy program
# (issue 5, "Speed": full tracing at most half of heaptrack's slowdown,
# sampling at 512 KiB under 5% overhead, a trace no larger than heaptrack's,
# analysis at least 2x faster than heaptrack_print).  Prints a markdown
# section on stdout and writes it to bench/RESULTS-heap.md (bench/run.sh
# appends it to RESULTS.md).
#
# Workload: bench/mallocloop.c (built here with gcc -O2 -g
# -fno-omit-frame-pointer -pthread): THREADS threads x OPS malloc/free
# pairs of varied sizes through five sites five calls deep; fixed work,
# about 1 s of wall time (1.6 s of CPU) on 2 cores with glibc's malloc.
#
# Configurations on the full workload (OPS), each run RUNS times,
# interleaved (round r runs every configuration once, starting at a
# different one each round) so that bursts of load elsewhere spread over
# all of them; medians are reported, and per-round ratios (each run against
# the bare run of the same round):
#   bare
#   kiln trace           LD_PRELOAD="libkiln-malloc.so libkiln.so"
#                        KILN_HEAP_TRACE=F (record only: the malloc hooks are
#                        libkiln-malloc.so's, preloaded beside libkiln.so)
#   kiln heap            `kiln heap -q -o P -- CMD` (record, then analysis:
#                        summary, pprof profile, timeline SVG)
#   kiln trace, sampled  the same with KILN_HEAP_SAMPLE=SAMPLE (524288)
#   kiln heap, sampled   `kiln heap --sample SAMPLE`
#   heaptrack            `heaptrack -o F CMD` (record + heaptrack_interpret,
#                        which runs concurrently, into F.zst)
#   heaptrack -r         record only (F.raw.zst, zstd-compressed raw text)
# gperftools' HEAPPROFILE (every allocation unwound under a global lock) and
# valgrind massif (every thread serialized on one core) are 10-70x slower:
# they run on a smaller input (SMALL_OPS, default OPS/10) with its own bare
# run, next to kiln and heaptrack on that input, so that each ratio has a
# baseline from the same input and the same rounds.  gperftools' heap
# profiler lives in tcmalloc: the run also times tcmalloc preloaded without
# profiling, to show how much of the difference is the allocator (the
# ratios are against glibc's malloc, the allocator the program really uses).
#
# Analysis (RUNS times each, interleaved, on the traces of the last round):
# `kiln top TRACE` (reads kiln's raw trace: merge, peak, leaks, symbolize)
# against `heaptrack_print F.zst` (reads heaptrack's interpreted file: the
# interpretation, symbolization included, already happened during the
# heaptrack run; the heaptrack row's excess over heaptrack -r is its cost).
# Trace sizes: kiln's trace (full and sampled) against heaptrack's .zst, its
# compressed raw trace, and that raw trace decompressed (one measurement).
#
# Correctness, checked on every run: the workload's checksum; the allocation
# calls and bytes leaked each profiler reports against the counts the
# workload prints (glibc's own few allocations, thread start and the stdout
# buffer, come on top).  kiln warns in its summary when events were lost
# (buffers full); for record-only traces, lost events would show as missing
# calls or as frees never seen (more leaked): both are checked with
# `kiln top --sample-type calls|leaked`.  A run with losses is reported so.
#
# Where kiln's time goes (PERF_SHARE=1, when perf exists): one more run of
# bare, kiln trace and kiln trace sampled under `perf record -e cpu-clock
# -F PERF_HZ` (every thread, kernel and user); every self sample is put in
# a category (the program, libc's allocator, kiln's unwinding, ring
# writes, sampled-block set and other hook code, clock_gettime, the
# kernel, kiln's writer thread `kiln-heap`: zstd and the rest), and the
# heaviest functions are listed.
#
# Noise: everything runs at nice $NICE (root only); with scheduler
# autogroups nice only weighs processes of one session against each other,
# so the script re-runs itself in a session of its own (setsid) and gives
# that session's autogroup the nice value.  The load average is reported.
#
# Environment: KILN (default build/kiln), LIBKILN (libkiln.so next to
# KILN), RUNS (3), PAIRS (30: more adjacent bare / kiln-sample runs for
# the sampling goal), THREADS (2), OPS (10000000), SMALL_OPS (OPS/10),
# SAMPLE (524288), HEAPTRACK (heaptrack), HEAPTRACK_PRINT (heaptrack_print),
# TCMALLOC (/usr/lib/x86_64-linux-gnu/libtcmalloc.so), VALGRIND (valgrind),
# NICE (-10 as root, else 0), PERF (perf), PERF_SHARE (1), PERF_HZ (999),
# BENCH_OUT (bench/out/heap), RESULTS (bench/RESULTS-heap.md).  Exit status
# 1 if a configuration failed; goals missed are reported only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac
LIBKILN=${LIBKILN:-$(dirname "$KILN")/libkiln.so}
# The malloc interposer, preloaded beside libkiln.so for heap tracing
# (docs/heap.md, "two libraries").
LIBKILN_MALLOC=${LIBKILN_MALLOC:-$(dirname "$LIBKILN")/libkiln-malloc.so}
case $LIBKILN in /*) ;; *) LIBKILN=$PWD/$LIBKILN ;; esac
RUNS=${RUNS:-3}
PAIRS=${PAIRS:-30}
THREADS=${THREADS:-2}
OPS=${OPS:-10000000}
SMALL_OPS=${SMALL_OPS:-$((OPS / 10))}
SAMPLE=${SAMPLE:-524288}
HEAPTRACK=${HEAPTRACK:-heaptrack}
HEAPTRACK_PRINT=${HEAPTRACK_PRINT:-heaptrack_print}
TCMALLOC=${TCMALLOC:-/usr/lib/x86_64-linux-gnu/libtcmalloc.so}
VALGRIND=${VALGRIND:-valgrind}
PERF=${PERF:-perf}
PERF_SHARE=${PERF_SHARE:-1}
PERF_HZ=${PERF_HZ:-999}
if [ "$(id -u)" = 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
OUT=${BENCH_OUT:-$root/bench/out/heap}
RESULTS=${RESULTS:-$here/RESULTS-heap.md}

say() { echo "heap-bench: $*" >&2; }
die() { say "$*"; exit 1; }

# Own session, so that the autogroup's nice value protects the runs from
# other sessions' jobs (see the header).
if [ "$NICE" != 0 ] && [ -z "${HEAP_BENCH_INNER:-}" ] &&
   [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] &&
   command -v setsid >/dev/null 2>&1; then
    HEAP_BENCH_INNER=1 setsid bash "$0" "$@" &
    inner=$!
    trap 'kill -TERM -- -"$inner" 2>/dev/null' INT TERM
    wait "$inner"
    rc=$?
    kill -0 "$inner" 2>/dev/null && { wait "$inner"; rc=$?; }
    exit "$rc"
fi
agnote=
if [ -n "${HEAP_BENCH_INNER:-}" ]; then
    if echo "$NICE" >/proc/self/autogroup 2>/dev/null; then
        agnote=" (own session, autogroup nice $NICE)"
    else
        say "cannot set the autogroup's nice value; timings will be noisier"
    fi
fi

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
[ -f "$LIBKILN" ] || die "no libkiln.so at $LIBKILN (build it first, or set LIBKILN)"
[ -f "$LIBKILN_MALLOC" ] || die "no libkiln-malloc.so at $LIBKILN_MALLOC (build it first, or set LIBKILN_MALLOC)"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
have() { command -v "$1" >/dev/null 2>&1; }
have_ht=0 have_gperf=0 have_massif=0 have_perf=0
have "$HEAPTRACK" && have "$HEAPTRACK_PRINT" && have zstd && have_ht=1
[ -f "$TCMALLOC" ] && have_gperf=1
have "$VALGRIND" && have_massif=1
[ "$PERF_SHARE" = 1 ] && have "$PERF" && have_perf=1
prio=()
[ "$NICE" != 0 ] && prio=(nice -n "$NICE")

# ---- the workload

bin=$OUT/mallocloop
if [ ! -x "$bin" ] || [ "$here/mallocloop.c" -nt "$bin" ]; then
    gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$bin" "$here/mallocloop.c" ||
        die "cannot build $here/mallocloop.c"
fi

# ---- configurations: id set tool label (set: main = OPS, small = SMALL_OPS)

configs=(
    "bare main - bare (glibc malloc)"
    "kiln-trace main kiln kiln trace (LD_PRELOAD, record only)"
    "kiln-heap main kiln \`kiln heap\` (record + analysis)"
    "kiln-sample main kiln kiln trace, sampled $SAMPLE B (record only)"
    "kiln-heap-sample main kiln \`kiln heap --sample $SAMPLE\` (record + analysis)"
)
[ "$have_ht" = 1 ] && configs+=(
    "heaptrack main heaptrack heaptrack (record + interpret)"
    "heaptrack-raw main heaptrack heaptrack -r (record only)"
)
configs+=(
    "s-bare small - bare (glibc malloc)"
    "s-kiln-trace small kiln kiln trace (record only)"
    "s-kiln-sample small kiln kiln trace, sampled $SAMPLE B"
)
[ "$have_ht" = 1 ] && configs+=(
    "s-heaptrack small heaptrack heaptrack (record + interpret)"
    "s-heaptrack-raw small heaptrack heaptrack -r (record only)"
)
[ "$have_gperf" = 1 ] && configs+=(
    "s-tcmalloc small - tcmalloc preloaded, no profiling (allocator change only)"
    "s-gperf small gperf gperftools HEAPPROFILE (tcmalloc)"
)
[ "$have_massif" = 1 ] && configs+=("s-massif small massif valgrind --tool=massif")

now_ns() { date +%s%N; }

# ops_of ID: the workload size of a configuration.
ops_of() { case $1 in s-*) echo "$SMALL_OPS" ;; *) echo "$OPS" ;; esac; }

# out_of ID: the profile or trace a configuration writes (the file whose
# size is reported).
out_of() {
    case ${1#s-} in
    kiln-trace | kiln-sample) echo "$OUT/$1.trace.zst" ;;
    kiln-heap | kiln-heap-sample) echo "$OUT/$1.trace.zst" ;;
    heaptrack) echo "$OUT/$1.zst" ;;
    heaptrack-raw) echo "$OUT/$1.raw.zst" ;;
    gperf) echo "$OUT/$1.d" ;;
    massif) echo "$OUT/$1.massif" ;;
    *) echo - ;;
    esac
}

# cmd_of ID: sets the array cmd to the command of a configuration.
cmd=()
cmd_of() {
    local id=$1 ops
    ops=$(ops_of "$id")
    local w=("$bin" "$THREADS" "$ops")
    case ${id#s-} in
    bare) cmd=(env "${w[@]}") ;;
    kiln-trace) cmd=(env "LD_PRELOAD=$LIBKILN_MALLOC $LIBKILN" "KILN_HEAP_TRACE=$OUT/$id.trace.zst" "${w[@]}") ;;
    kiln-sample) cmd=(env "LD_PRELOAD=$LIBKILN_MALLOC $LIBKILN" "KILN_HEAP_TRACE=$OUT/$id.trace.zst"
        "KILN_HEAP_SAMPLE=$SAMPLE" "${w[@]}") ;;
    kiln-heap) cmd=("$KILN" heap -q -o "$OUT/$id" -- "${w[@]}") ;;
    kiln-heap-sample) cmd=("$KILN" heap -q --sample "$SAMPLE" -o "$OUT/$id" -- "${w[@]}") ;;
    heaptrack) cmd=("$HEAPTRACK" -o "$OUT/$id" "${w[@]}") ;;
    heaptrack-raw) cmd=("$HEAPTRACK" -r -o "$OUT/$id" "${w[@]}") ;;
    tcmalloc) cmd=(env "LD_PRELOAD=$TCMALLOC" "${w[@]}") ;;
    gperf) cmd=(env "LD_PRELOAD=$TCMALLOC" "HEAPPROFILE=$OUT/$id.d/heap" "${w[@]}") ;;
    massif) cmd=("$VALGRIND" -q --tool=massif "--massif-out-file=$OUT/$id.massif" "${w[@]}") ;;
    esac
}

# clean ID: removes what an earlier run of ID left.
clean() {
    case ${1#s-} in
    gperf) rm -rf "$OUT/$1.d"; mkdir -p "$OUT/$1.d" ;;
    *) rm -f "$OUT/$1".* 2>/dev/null ;;
    esac
}

# loop_fields FILE: "CALLS LEAKED CHECKSUM WORK_WALL USER SYS END_NS" from
# mallocloop's line.
loop_fields() {
    sed -n 's/.*mallocloop: .*calls \([0-9]*\), bytes [0-9]*, leaked \([0-9]*\), checksum \([0-9]*\), wall \([0-9.]*\), cpu \([0-9.]*\) \([0-9.]*\), end \([0-9]*\).*/\1 \2 \3 \4 \5 \6 \7/p' "$1" | head -1
}

# Exact totals of a kiln trace: top_total TRACE TYPE (calls | leaked), from
# `kiln top` ("Showing nodes accounting for X, ... of TOTAL total": calls
# are printed exactly, bytes with a unit).
top_total() {
    "$KILN" top -q -n 1 --sample-type "$2" "$1" 2>>"$log" |
        sed -n 's/.* of \([0-9.]*\)\([a-zA-Z]*\) total.*/\1 \2/p' | awk '
        {v = $1; u = $2
         if (u == "kB") v *= 1e3; else if (u == "MB") v *= 1e6
         else if (u == "GB") v *= 1e9
         printf "%.0f\n", v; exit}'
}

# One line per run: id round wall cpu work_wall work_cpu tail out_bytes
# (seconds; "-" where it does not apply).
res=$OUT/runs.tsv
: >"$res"
log=$OUT/heap-bench.log
: >"$log"
failed=0
declare -A bad=() checksum=() want_calls=() want_leaked=() calls_of=() leaked_of=() lost_of=()

# run_one ID ROUND: one timed run; appends to $res.
run_one() {
    local id=$1 r=$2 set t0 t1 rc
    set=main
    [[ $id == s-* ]] && set=small
    clean "$id"
    cmd_of "$id"
    t0=$(now_ns)
    "${prio[@]}" /usr/bin/time -f '%U %S' -o "$OUT/time.txt" "${cmd[@]}" \
        >"$OUT/stdout.txt" 2>"$OUT/stderr.txt"
    rc=$?
    t1=$(now_ns)
    {
        echo "== $id round $r (exit $rc): ${cmd[*]}"
        cat "$OUT/stdout.txt"
        head -c 3000 "$OUT/stderr.txt"
    } >>"$log"
    local f calls leaked sum wwall wu ws wend why=
    f=$(loop_fields "$OUT/stdout.txt")
    read -r calls leaked sum wwall wu ws wend <<<"$f"
    if [ "$rc" -ne 0 ] || [ -z "$f" ]; then
        why="exit $rc: $(grep -v '^Command exited' "$OUT/stderr.txt" | grep -v '^==' | head -1 | cut -c1-120)"
    elif [ -n "${checksum[$set]:-}" ] && [ "$sum" != "${checksum[$set]}" ]; then
        why="checksum $sum, not ${checksum[$set]} (the work changed)"
    fi
    local o bytes=-
    o=$(out_of "$id")
    if [ -z "$why" ] && [ "$o" != - ]; then
        if [ -d "$o" ]; then
            bytes=$(cat "$o"/* 2>/dev/null | wc -c)
            [ "$bytes" -gt 0 ] || why="no heap profile written in $o"
        elif [ -s "$o" ]; then
            bytes=$(stat -c %s "$o")
        else
            why="no output written at $o"
        fi
    fi
    # kiln heap's summary: exact calls and leaked, and the lost-events warning
    if [ -z "$why" ] && [[ $id == *kiln-heap* ]]; then
        local c l
        c=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$OUT/stderr.txt" | head -1)
        l=$(sed -n 's/^total memory leaked: \([0-9]*\).*/\1/p' "$OUT/stderr.txt" | head -1)
        if [ -z "$c" ]; then
            why="no summary from kiln heap"
        else
            calls_of[$id]=$c leaked_of[$id]=$l
            grep -q 'events were lost' "$OUT/stderr.txt" &&
                lost_of[$id]="${lost_of[$id]:-}r$r: $(grep -m1 'events were lost' "$OUT/stderr.txt" | cut -c1-80); "
        fi
    fi
    if [[ $id == *heaptrack && -z $why ]]; then
        cp "$OUT/stdout.txt" "$OUT/$id.stdout"
    fi
    if [ -n "$why" ]; then
        say "$id round $r: FAILED ($why; see $log)"
        bad[$id]=$why
        failed=1
        return 1
    fi
    [ -z "${checksum[$set]:-}" ] && checksum[$set]=$sum
    want_calls[$set]=$calls want_leaked[$set]=$leaked
    local tot wall cpu wcpu tail
    tot=$(tail -1 "$OUT/time.txt")
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
    cpu=$(awk -v t="$tot" 'BEGIN {split(t, a, " "); printf "%.4f", a[1] + a[2]}')
    wcpu=$(awk -v u="$wu" -v s="$ws" 'BEGIN {printf "%.4f", u + s}')
    tail=$(awk -v e="$wend" -v b="$t1" 'BEGIN {printf "%.4f", (b - e) / 1e9}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$r" "$wall" "$cpu" \
        "$wwall" "$wcpu" "$tail" "$bytes" >>"$res"
    say "$id round $r: wall $wall s, cpu $cpu s, work $wwall s, tail $tail s, output $bytes B"
}

rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null) && rev=" (tree at $rev)"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_ns=$(now_ns)
say "mallocloop $THREADS threads x $OPS ops (small: $SMALL_OPS), $RUNS runs, nice $NICE"
# warm-up: page cache, CPU frequency, the libraries
"${prio[@]}" "$bin" "$THREADS" "$SMALL_OPS" >/dev/null
ncfg=${#configs[@]}
for ((r = 1; r <= RUNS; r++)); do
    for ((k = 0; k < ncfg; k++)); do
        c=${configs[$(((k + r - 1) % ncfg))]}
        read -r id _ <<<"$c"
        [ -n "${bad[$id]:-}" ] && continue
        run_one "$id" "$r"
    done
done

# ---- sampling overhead: bare and kiln-sample in adjacent pairs
# The effect sought (a few percent) is smaller than the spread of single
# runs on a shared machine, so PAIRS more rounds run the two back to back
# (their order alternating): both runs of a pair see about the same load.
# The goal is judged on the median of the pairs' ratios, reported with
# its quartiles (bursts of load that hit one run of a pair and not the
# other spread the ratios by +-10% here).  The ratio of the fastest runs
# is reported too, but not judged on: the machine's undisturbed speed is
# not stable either (one bare run 5% faster than the next fastest of 30
# moved it from +2% to +7% on the same code).
pres=$OUT/pairs.tsv
: >"$pres"
if [ "$PAIRS" -gt 0 ] && [ -z "${bad[bare]:-}" ] && [ -z "${bad[kiln-sample]:-}" ]; then
    say "sampling overhead: $PAIRS pairs of bare and kiln-sample"
    main_res=$res
    res=$pres
    for ((r = 1; r <= PAIRS; r++)); do
        if ((r % 2)); then pair=(bare kiln-sample); else pair=(kiln-sample bare); fi
        for id in "${pair[@]}"; do run_one "$id" "$r" || break; done
    done
    res=$main_res
fi

# ---- analysis: kiln top on kiln's trace vs heaptrack_print on heaptrack's

ktrace=$OUT/kiln-trace.trace.zst
htfile=$OUT/heaptrack.zst
ares=$OUT/analysis.tsv
: >"$ares"
# time_one NAME CHECK CMD...: one timed run of an analysis; CHECK is a
# pattern its stdout must contain.
time_one() {
    local name=$1 check=$2 t0 t1 rc
    shift 2
    t0=$(now_ns)
    "${prio[@]}" /usr/bin/time -f '%U %S %M' -o "$OUT/time.txt" "$@" \
        >"$OUT/$name.out" 2>"$OUT/stderr.txt"
    rc=$?
    t1=$(now_ns)
    if [ "$rc" -ne 0 ] || ! grep -q "$check" "$OUT/$name.out"; then
        say "$name: FAILED (exit $rc; see $log)"
        { echo "== $name (exit $rc): $*"; head -c 2000 "$OUT/stderr.txt"; } >>"$log"
        bad[$name]="exit $rc: $(head -1 "$OUT/stderr.txt" | cut -c1-120)"
        failed=1
        return 1
    fi
    local u s m
    read -r u s m <<<"$(tail -1 "$OUT/time.txt")"
    printf '%s\t%s\t%.4f\t%.4f\t%s\n' "$name" "$r" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e9}')" \
        "$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')" "$m" >>"$ares"
    say "$name round $r: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}') s, RSS $m KiB"
}
acfg=()
[ -z "${bad[kiln-trace]:-}" ] && [ -s "$ktrace" ] && acfg+=(kiln-top)
[ "$have_ht" = 1 ] && [ -z "${bad[heaptrack]:-}" ] && [ -s "$htfile" ] && acfg+=(heaptrack-print)
for ((r = 1; r <= RUNS; r++)); do
    for ((k = 0; k < ${#acfg[@]}; k++)); do
        a=${acfg[$(((k + r - 1) % ${#acfg[@]}))]}
        [ -n "${bad[$a]:-}" ] && continue
        case $a in
        kiln-top) time_one kiln-top 'flat%' "$KILN" top -q "$ktrace" ;;
        heaptrack-print) time_one heaptrack-print 'calls to allocation functions' "$HEAPTRACK_PRINT" "$htfile" ;;
        esac
    done
done

# ---- correctness: what each profiler counted against what the workload did

for id in kiln-trace kiln-sample s-kiln-trace s-kiln-sample; do
    [ -n "${bad[$id]:-}" ] && continue
    t=$(out_of "$id")
    [ -s "$t" ] || continue
    calls_of[$id]=$(top_total "$t" calls)
    leaked_of[$id]=$(top_total "$t" leaked)
done
for id in heaptrack s-heaptrack; do
    [ -z "${bad[$id]:-}" ] && [ -s "$(out_of "$id")" ] || continue
    if [ "$id" = heaptrack ] && [ -s "$OUT/heaptrack-print.out" ]; then
        p=$OUT/heaptrack-print.out
    else
        "$HEAPTRACK_PRINT" "$(out_of "$id")" >"$OUT/$id.print" 2>>"$log" || continue
        p=$OUT/$id.print
    fi
    calls_of[$id]=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$p" | head -1)
    leaked_of[$id]=$(sed -n 's/^total memory leaked: \(.*\)/\1/p' "$p" | head -1)
done
# heaptrack's raw trace decompressed: one measurement of its size
raw_bytes=-
if [ "$have_ht" = 1 ] && [ -s "$OUT/heaptrack-raw.raw.zst" ]; then
    raw_bytes=$(zstd -dc <"$OUT/heaptrack-raw.raw.zst" 2>>"$log" | wc -c)
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- where kiln's time goes: perf record of one more run

# Categories of the self samples (every sample counted, no threshold).
cats=(program allocator startup-sort hooks-unwind hooks-ring hooks-sset hooks-other clock kernel writer-zstd writer-other other)
declare -A cat_label=(
    [program]="the program's own code"
    [allocator]="libc (glibc's malloc, memcpy, ...)"
    [startup-sort]="libc's qsort (msort_with_tmp): kiln sorting unwind tables at start"
    [hooks-unwind]="kiln: unwinding (kiln_cfi_unwind_regs, find_row, find_range, kheap_unwind)"
    [hooks-ring]="kiln: ring writes (ring_put, kheap_put)"
    [hooks-sset]="kiln: sampled-block set (kheap_sset_add/del)"
    [hooks-other]="kiln: the rest of the hooks (on_alloc, do_free, stack interning, ...)"
    [clock]="clock_gettime (vDSO), 2 per malloc/free pair"
    [kernel]="kernel, in the program's threads"
    [writer-zstd]="kiln's writer thread: zstd compression"
    [writer-other]="kiln's writer thread: draining and decoding the rings, write(2)"
    [other]="other"
)
declare -A PS_TOTAL=() PS_CAT=() PS_TABLE=()
if [ "$have_perf" = 1 ]; then
    for id in bare kiln-trace kiln-sample; do
        [ -n "${bad[$id]:-}" ] && continue
        clean "$id"
        cmd_of "$id"
        data=$OUT/perf-$id.data
        if ! "${prio[@]}" "$PERF" record -q --no-bpf-event -B -e cpu-clock -F "$PERF_HZ" \
            -o "$data" -- "${cmd[@]}" >>"$log" 2>&1; then
            say "perf record of $id failed; skipping the perf shares (see $log)"
            break
        fi
        # self samples by thread name, library, function: all of them
        "$PERF" report -i "$data" --stdio --no-children -F sample,comm,dso,sym \
            --percent-limit 0 -q 2>>"$log" | sed 's/[[:space:]]*$//' >"$OUT/perf-$id.txt"
        rm -f "$data" "$data.old"
        PS_TOTAL[$id]=$(awk '{s += $1} END {print s + 0}' "$OUT/perf-$id.txt")
        [ "${PS_TOTAL[$id]}" -gt 0 ] || continue
        PS_CAT[$id]=$(awk '
            {
                n = $1; comm = $2; dso = $3; sym = ""
                for (i = 5; i <= NF; i++) sym = sym (i > 5 ? " " : "") $i
                if (comm == "kiln-heap") c = (dso ~ /zstd/) ? "writer-zstd" : "writer-other"
                else if (dso ~ /libkiln/) {
                    if (sym ~ /cfi|find_row|find_range|unwind|walk/) c = "hooks-unwind"
                    else if (sym ~ /ring_put|kheap_put/) c = "hooks-ring"
                    else if (sym ~ /sset/) c = "hooks-sset"
                    else c = "hooks-other"
                }
                else if (dso == "[vdso]") c = "clock"
                else if (dso ~ /^libc[.-]/) c = (sym ~ /msort|qsort/) ? "startup-sort" : "allocator"
                else if (dso == "mallocloop") c = "program"
                else if (dso ~ /kernel/) c = "kernel"
                else c = "other"
                cat[c] += n; tot += n
            }
            END {for (c in cat) printf "%s=%.1f ", c, cat[c] * 100 / tot}' "$OUT/perf-$id.txt")
        PS_TABLE[$id]=$(sort -rn "$OUT/perf-$id.txt" | awk -v tot="${PS_TOTAL[$id]}" 'NR <= 12 {
            sym = ""; for (i = 5; i <= NF; i++) sym = sym (i > 5 ? " " : "") $i
            printf "| %.1f%% | %s | %s | %s |\n", $1 * 100 / tot, $2, $3, sym}')
        say "perf of $id: ${PS_TOTAL[$id]} samples: ${PS_CAT[$id]}"
    done
fi
# cat_of ID CATEGORY: a category's share (%) in ID's perf run.
cat_of() {
    local kv
    for kv in ${PS_CAT[$1]:-}; do
        [ "${kv%%=*}" = "$2" ] && { echo "${kv#*=}"; return; }
    done
    echo 0.0
}
elapsed=$(awk -v a="$start_ns" -v b="$(now_ns)" 'BEGIN {printf "%.0f", (b - a) / 1e9}')

# ---- report

# med FILE ID COLUMN: median of a column over ID's runs ("-" if none).
medf() {
    awk -F'\t' -v id="$2" -v c="$3" '$1 == id && $c != "-" {print $c}' "$1" |
        sort -g | awk '{a[NR] = $1} END {
            if (!NR) print "-"
            else if (NR % 2) print a[(NR + 1) / 2]
            else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
med() { medf "$res" "$@"; }
allf() { awk -F'\t' -v id="$2" -v c="$3" '$1 == id {printf "%s%s", (n++ ? " " : ""), $c}' "$1"; }
# paired ID BASE COLUMN: median over rounds of ID's value / BASE's.
paired() {
    awk -F'\t' -v id="$1" -v base="$2" -v c="$3" '
        $1 == base {b[$2] = $c}
        $1 == id {v[$2] = $c}
        END {for (r in v) if ((r in b) && b[r] > 0) print v[r] / b[r]}' "$res" |
        sort -g | awk '{a[NR] = $1} END {
            if (!NR) print "-"
            else if (NR % 2) printf "%.2f\n", a[(NR + 1) / 2]
            else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
calc() { awk "BEGIN {printf \"$1\", $2}"; }
isnum() { [[ ${1:-} =~ ^-?[0-9.]+$ ]]; }
ratio() {
    isnum "${1:-}" && isnum "${2:-}" && awk "BEGIN {exit !($2 > 0)}" &&
        calc "${3:-%.2f}" "$1 / $2" || echo -
}
mib() { isnum "${1:-}" && calc '%.1f' "$1 / 1048576" || echo -; }
spread() {
    local m
    m=$(med "$1" "$2")
    isnum "$m" || { echo -; return; }
    awk -F'\t' -v id="$1" -v c="$2" -v m="$m" '$1 == id {v = $c; if (!n++ || v < lo) lo = v; if (v > hi) hi = v}
        END {if (n < 2) print "-"; else printf "%.1f%%", (hi - lo) / m * 100}' "$res"
}
verdict() { if awk "BEGIN {exit !($1)}"; then echo met; else echo MISSED; fi; }

declare -A W C WW T BY
for c in "${configs[@]}"; do
    read -r id _ <<<"$c"
    W[$id]=$(med "$id" 3) C[$id]=$(med "$id" 4) WW[$id]=$(med "$id" 5)
    T[$id]=$(med "$id" 7) BY[$id]=$(med "$id" 8)
done
base_of() { case $1 in s-*) echo s-bare ;; *) echo bare ;; esac; }
slow() { ratio "${W[$1]}" "${W[$(base_of "$1")]}"; }
cslow() { ratio "${C[$1]}" "${C[$(base_of "$1")]}"; }

# counted ID: "calls / leaked" as the profiler reports them, checked
# against the workload's counts (lost events: fewer calls, more leaked).
declare -A lossy=()
counted() {
    local id=$1 set=main c l wc wl note=''
    [[ $id == s-* ]] && set=small
    c=${calls_of[$id]:-} l=${leaked_of[$id]:-}
    wc=${want_calls[$set]:-} wl=${want_leaked[$set]:-}
    [ -z "$c" ] && { echo -; return; }
    case $id in
    *sample*) note=" (estimate: $(calc '%+.2f%%' "($c - $wc) * 100 / $wc") calls)" ;;
    *heaptrack*) echo "$c calls, $l leaked"; return ;;
    *kiln*)
        if [ "$c" -lt "$wc" ] || { isnum "$l" && [ "$l" -gt $((wl + 65536)) ]; }; then
            note=" **events lost**"
            lossy[$id]=1
        else
            note=" (workload: $wc calls, $wl B leaked, + glibc's own)"
        fi ;;
    esac
    [ -n "${lost_of[$id]:-}" ] && { note+=" **kiln warned: ${lost_of[$id]}**"; lossy[$id]=1; }
    echo "$c calls, $l B leaked$note"
}

goals=()
ks=$(slow kiln-trace) khs=$(slow kiln-heap) hs=$(slow heaptrack) hrs=$(slow heaptrack-raw)
if isnum "$ks" && isnum "$hs"; then
    kp=$(paired kiln-trace bare 3) hp=$(paired heaptrack bare 3) kc=$(cslow kiln-trace) hc=$(cslow heaptrack)
    line="full tracing at most half of heaptrack's slowdown: kiln trace (record only) wall ${ks}× vs heaptrack ${hs}×: $(verdict "$ks <= $hs / 2"); per-round ${kp}× vs ${hp}×: $(verdict "$kp <= $hp / 2"); CPU ${kc}× vs ${hc}×: $(verdict "$kc <= $hc / 2")"
    line+=".  \`kiln heap\` (record + analysis) wall ${khs}× (CPU $(cslow kiln-heap)×): $(verdict "$khs <= $hs / 2")"
    isnum "$hrs" && line+=".  Record only against heaptrack -r (${hrs}×, CPU $(cslow heaptrack-raw)×): $(verdict "$ks <= $hrs / 2")"
    goals+=("$line")
fi
ss=$(slow kiln-sample)
# pairstat COLUMN: "median-of-pair-ratios min-ratio pairs" from pairs.tsv
pairstat() {
    awk -F'\t' -v c="$1" '
        $1 == "bare" {b[$2] = $c; if (!nb++ || $c < bm) bm = $c}
        $1 == "kiln-sample" {v[$2] = $c; if (!nv++ || $c < vm) vm = $c}
        END {n = 0; for (r in v) if ((r in b) && b[r] > 0) q[++n] = v[r] / b[r]
             if (!n || !bm) {print "- - 0"; exit}
             for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (q[j] < q[i]) {t = q[i]; q[i] = q[j]; q[j] = t}
             m = n % 2 ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2
             printf "%.4f %.4f %d %.4f %.4f\n", m, vm / bm, n, q[int((n + 3) / 4)], q[int((3 * n + 3) / 4)]}' "$pres"
}
read -r pw_med pw_min pn pw_q1 pw_q3 <<<"$(pairstat 3)"
read -r pc_med pc_min _ <<<"$(pairstat 4)"
if isnum "$ss"; then
    line="sampling ($SAMPLE B) under 5% overhead: main rounds ($RUNS runs, minutes apart: the load on the machine drifts between them) wall $(calc '%+.1f%%' "($ss - 1) * 100") (per-round $(calc '%+.1f%%' "($(paired kiln-sample bare 3) - 1) * 100")), CPU $(calc '%+.1f%%' "($(cslow kiln-sample) - 1) * 100") (per-round $(calc '%+.1f%%' "($(paired kiln-sample bare 4) - 1) * 100"))"
    if isnum "$pw_med"; then
        line+="; $pn adjacent pairs: median of the pairs' ratios wall $(calc '%+.1f%%' "($pw_med - 1) * 100") (quartiles $(calc '%+.1f%%' "($pw_q1 - 1) * 100") and $(calc '%+.1f%%' "($pw_q3 - 1) * 100")), CPU $(calc '%+.1f%%' "($pc_med - 1) * 100"); fastest runs wall $(calc '%+.1f%%' "($pw_min - 1) * 100"), CPU $(calc '%+.1f%%' "($pc_min - 1) * 100"): $(verdict "$pw_med < 1.05")"
    else
        line+=": $(verdict "$ss < 1.05")"
    fi
    line+="; with \`kiln heap --sample\` (analysis included) wall $(calc '%+.1f%%' "($(slow kiln-heap-sample) - 1) * 100")"
    goals+=("$line")
fi
if isnum "${BY[kiln-trace]}" && isnum "${BY[heaptrack]}"; then
    goals+=("trace no larger than heaptrack's: kiln $(mib "${BY[kiln-trace]}") MiB vs heaptrack's .zst $(mib "${BY[heaptrack]}") MiB ($(ratio "${BY[kiln-trace]}" "${BY[heaptrack]}")×): $(verdict "${BY[kiln-trace]} <= ${BY[heaptrack]}"); vs heaptrack's compressed raw trace $(mib "${BY[heaptrack-raw]}") MiB: $(verdict "${BY[kiln-trace]} <= ${BY[heaptrack-raw]:-0}")")
fi
kt=$(medf "$ares" kiln-top 3) hp=$(medf "$ares" heaptrack-print 3)
if isnum "$kt" && isnum "$hp"; then
    goals+=("analysis at least 2x faster than heaptrack_print: \`kiln top\` $kt s vs heaptrack_print $hp s ($(ratio "$hp" "$kt")× faster; CPU $(medf "$ares" kiln-top 4) s vs $(medf "$ares" heaptrack-print 4) s): $(verdict "$kt * 2 <= $hp")")
fi

report() {
    echo "## kiln heap vs heaptrack, gperftools HEAPPROFILE, valgrind massif (heap profiling, multi-threaded)"
    echo
    echo "Generated by \`bench/heap.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed} s: $(nproc) CPUs,"
    echo "kernel $(uname -r), \`$KILN\` and \`$LIBKILN\`$rev;"
    echo "$(dpkg-query -W -f '${Package} ${Version}, ' heaptrack libgoogle-perftools4 valgrind 2>/dev/null)glibc $(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')."
    echo "Workload: \`bench/mallocloop.c\` ($THREADS threads x $OPS malloc/free of 16 B to 16 KiB"
    echo "through 5 sites 5 calls deep, fixed work; gcc -O2 -g -fno-omit-frame-pointer"
    echo "-pthread), nice $NICE$agnote.  $RUNS runs per configuration,"
    echo "interleaved (each round starts at another configuration); medians, and"
    echo "per-round ratios (each run against the bare run of the same round)."
    echo "Load average at start: $load_start; at end: $load_end ($(nproc) CPUs: the machine is"
    echo "shared with other jobs, so single timings are noisy; spread of the bare runs,"
    echo "(max − min) / median: wall $(spread bare 3), CPU $(spread bare 4))."
    echo
    echo "### Overhead on the full workload ($THREADS threads x $OPS ops)"
    echo
    echo "Wall = the whole command (for \`kiln heap\` and heaptrack: analysis or"
    echo "interpretation included).  CPU = user+sys of the whole process tree."
    echo "Work = the workload's own wall time, first thread start to last join"
    echo "(the profiler's cost while the program runs); tail = from the end of the"
    echo "work to the command's exit (flushing, analysis, writing)."
    echo
    echo "| configuration | wall (s) | runs (s) | slowdown | per-round | CPU (s) | CPU slowdown | work (s) | work slowdown | tail (s) | output (MiB) | calls, leaked (as reported) |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    local c id set tool label b
    for c in "${configs[@]}"; do
        read -r id set tool label <<<"$c"
        [ "$set" = main ] || continue
        if [ -n "${bad[$id]:-}" ]; then
            echo "| $label | failed: ${bad[$id]//|/ } | | | | | | | | | | |"
            continue
        fi
        b=$(base_of "$id")
        if [ "$tool" = - ] && [ "$id" = "$b" ]; then
            echo "| $label | ${W[$id]} | $(allf "$res" "$id" 3) | - | - | ${C[$id]} | - | ${WW[$id]} | - | ${T[$id]} | - | workload: ${want_calls[main]:-?} calls, ${want_leaked[main]:-?} B leaked |"
            continue
        fi
        echo "| $label | ${W[$id]} | $(allf "$res" "$id" 3) | $(slow "$id")× | $(paired "$id" "$b" 3)× | ${C[$id]} | $(cslow "$id")× | ${WW[$id]} | $(ratio "${WW[$id]}" "${WW[$b]}")× | ${T[$id]} | $(mib "${BY[$id]}") | $(counted "$id") |"
    done
    echo
    echo "### All the profilers on the small workload ($THREADS threads x $SMALL_OPS ops)"
    echo
    echo "gperftools' HEAPPROFILE and massif are too slow for the full workload; here"
    echo "everything runs on 1/$((OPS / SMALL_OPS)) of it, against a bare run of the same size (the"
    echo "fixed costs, start-up and exit, weigh more at this size).  HEAPPROFILE needs"
    echo "tcmalloc, which alone changes the baseline (its row): the ratios are"
    echo "against glibc's malloc, the program's own allocator.  massif runs the"
    echo "threads one at a time (valgrind serializes them)."
    echo
    echo "| configuration | wall (s) | runs (s) | slowdown | per-round | CPU (s) | CPU slowdown | output (KiB) | calls, leaked (as reported) |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---|"
    for c in "${configs[@]}"; do
        read -r id set tool label <<<"$c"
        [ "$set" = small ] || continue
        if [ -n "${bad[$id]:-}" ]; then
            echo "| $label | failed: ${bad[$id]//|/ } | | | | | | | |"
            continue
        fi
        if [ "$id" = s-bare ]; then
            echo "| $label | ${W[$id]} | $(allf "$res" "$id" 3) | - | - | ${C[$id]} | - | - | workload: ${want_calls[small]:-?} calls, ${want_leaked[small]:-?} B leaked |"
            continue
        fi
        local kb=-
        isnum "${BY[$id]}" && kb=$(calc '%.0f' "${BY[$id]} / 1024")
        echo "| $label | ${W[$id]} | $(allf "$res" "$id" 3) | $(slow "$id")× | $(paired "$id" s-bare 3)× | ${C[$id]} | $(cslow "$id")× | $kb | $(counted "$id") |"
    done
    echo
    echo "### Trace size and analysis time (full workload)"
    echo
    local ev=-
    isnum "${want_calls[main]:-}" && ev=$((2 * want_calls[main]))
    echo "Events ≈ $ev (an allocation and a free per call).  heaptrack's \`.zst\` is"
    echo "its interpreted file (allocations interned, frees as indices, zstd);"
    echo "\`.raw.zst\` is what \`heaptrack -r\` leaves (its text trace, zstd)."
    echo
    echo "| file | MiB | bytes per event |"
    echo "|---|---:|---:|"
    local f n
    for f in "kiln-trace:kiln trace (full)" "kiln-sample:kiln trace (sampled $SAMPLE B)" \
             "heaptrack:heaptrack .zst (interpreted)" "heaptrack-raw:heaptrack -r .raw.zst"; do
        n=${f%%:*}
        isnum "${BY[$n]:-}" || continue
        echo "| ${f#*:} | $(mib "${BY[$n]}") | $(isnum "$ev" && calc '%.2f' "${BY[$n]} / $ev" || echo -) |"
    done
    isnum "$raw_bytes" &&
        echo "| heaptrack raw trace, decompressed | $(mib "$raw_bytes") | $(isnum "$ev" && calc '%.2f' "$raw_bytes / $ev" || echo -) |"
    echo
    echo "Peak RSS of \`kiln top\` includes the pages of the trace, which it maps."
    echo
    echo "| analysis | wall (s) | runs (s) | CPU (s) | peak RSS (MiB) |"
    echo "|---|---:|---|---:|---:|"
    for n in kiln-top heaptrack-print; do
        if [ -n "${bad[$n]:-}" ]; then echo "| $n | failed: ${bad[$n]//|/ } | | | |"; continue; fi
        isnum "$(medf "$ares" "$n" 3)" || continue
        local lbl="\`kiln top\` on kiln's trace"
        [ "$n" = heaptrack-print ] && lbl="\`heaptrack_print\` on heaptrack's .zst"
        echo "| $lbl | $(medf "$ares" "$n" 3) | $(allf "$ares" "$n" 3) | $(medf "$ares" "$n" 4) | $(calc '%.0f' "$(medf "$ares" "$n" 5) / 1024") |"
    done
    isnum "${T[kiln-heap]}" &&
        echo "| \`kiln heap\`'s analysis (its tail: summary, pprof, SVG) | ${T[kiln-heap]} | $(allf "$res" kiln-heap 7) | - | - |"
    isnum "${WW[heaptrack]}" && isnum "${WW[heaptrack-raw]}" &&
        echo "| heaptrack's interpretation, concurrent with the run (wall of heaptrack − heaptrack -r) | $(calc '%.2f' "${W[heaptrack]} - ${W[heaptrack-raw]}") | | $(calc '%.2f' "${C[heaptrack]} - ${C[heaptrack-raw]}") | - |"
    echo
    if [ "${#PS_TOTAL[@]}" -gt 0 ]; then
        echo "### Where the time goes (perf, one more run each)"
        echo
        echo "\`perf record -e cpu-clock -F $PERF_HZ\` of the whole process (every thread, kernel"
        echo "and user), self time, every sample counted.  CPU (s) = samples / $PERF_HZ.  These"
        echo "shares depend much less on the machine's load than the timings above."
        echo
        local hdr="| where | " sep="|---|"
        for id in bare kiln-trace kiln-sample; do
            isnum "${PS_TOTAL[$id]:-}" || continue
            hdr+="$id: share | CPU (s) | "
            sep+="---:|---:|"
        done
        echo "$hdr"
        echo "$sep"
        local cat row v any
        for cat in "${cats[@]}"; do
            row="| ${cat_label[$cat]} | " any=0
            for id in bare kiln-trace kiln-sample; do
                isnum "${PS_TOTAL[$id]:-}" || continue
                v=$(cat_of "$id" "$cat")
                [ "$v" != 0.0 ] && any=1
                row+="$v% | $(calc '%.2f' "$v * ${PS_TOTAL[$id]} / 100 / $PERF_HZ") | "
            done
            [ "$any" = 1 ] && echo "$row"
        done
        row="| total | "
        for id in bare kiln-trace kiln-sample; do
            isnum "${PS_TOTAL[$id]:-}" || continue
            row+="100% | $(calc '%.2f' "${PS_TOTAL[$id]} / $PERF_HZ") | "
        done
        echo "$row"
        echo
        for id in kiln-trace kiln-sample; do
            isnum "${PS_TOTAL[$id]:-}" || continue
            echo "Heaviest functions of **$id** (self, of all its samples):"
            echo
            echo "| self | thread | library | function |"
            echo "|---:|---|---|---|"
            echo "${PS_TABLE[$id]}"
            echo
        done
    fi
    echo "### Goals (issue 5)"
    echo
    local g
    for g in "${goals[@]}"; do echo "- $g"; done
    [ "${#goals[@]}" -eq 0 ] && echo "- (no goal could be evaluated: configurations failed)"
    for id in "${!lossy[@]}"; do
        echo "- **$id lost events**: its figures are lower bounds"
    done
    [ "${#lossy[@]}" -eq 0 ] &&
        echo "- lost events: none in any kiln run checked (every full trace counted at least the workload's calls and at most 64 KiB more leaked than it; no \`kiln heap\` summary warned)"
    echo
}

report | tee "$RESULTS"
say "wrote $RESULTS; per-run data in $res, log in $log"
exit "$failed"
