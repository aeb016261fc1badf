#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/record.sh: speed of `kiln record` against `perf record` + `perf script`
# on a CPU-bound program (bench/cpuloop.c: fixed work, about 3 s, five calls
# deep).  Prints a markdown section on stdout and writes it to
# bench/RESULTS-record.md (bench/run.sh calls this script).
#
# Configurations, each run RUNS times, interleaved (run 1 of every
# configuration, then run 2, ...) so that a burst of load elsewhere on the
# machine spreads over all of them; medians are reported:
#   bare                      cpuloop built -fno-omit-frame-pointer (fp)
#                             and -fomit-frame-pointer (nofp)
#   kiln fp     99 / 999 Hz   fp build,   kiln record --call-graph fp
#   kiln dwarf  99 / 999 Hz   nofp build, kiln record --call-graph dwarf
#   perf -g     99 / 999 Hz   fp build,   perf record -g, default options
#                             and with --no-bpf-event -B ("lean")
#   perf dwarf  99 / 999 Hz   nofp build, perf record --call-graph dwarf,
#                             default and lean
# perf runs with --all-user, kiln's default (user-space samples only), so
# both tools take the same samples; both sample cpu-clock with 8192 bytes of
# stack in dwarf mode.  For perf the time and CPU of `perf script` (the step
# that symbolizes, and in dwarf mode unwinds) are measured separately and
# added; kiln writes its symbolized profile before it exits.
#
# Measured per run: wall time of the whole command; the tool's own CPU time
# (user+sys of its process tree from /usr/bin/time, minus the CPU time
# cpuloop reports for itself); the "tail" from the end of cpuloop's work (it
# prints CLOCK_REALTIME) to the tool's exit; samples (kiln's closing line;
# lines of `perf script`), lost samples/records, output size.  Stack
# completeness: the cumulative share of samples whose stack reaches `main`,
# read with `kiln top` from the profile and from the `perf script` text.
#
# Noise: the target is pinned to CPU $CPU_TARGET and the tool (kiln's or
# perf's reader) to CPU $CPU_TOOL with taskset; everything runs at nice
# $NICE (root only) to keep other jobs from stealing the pinned CPUs.  With
# scheduler autogroups (kernel.sched_autogroup_enabled=1) nice only weighs
# processes of one session against each other, so the script re-runs itself
# in a session of its own (setsid) and gives that session's autogroup the
# nice value.
#
# Environment: KILN (default build/kiln), PERF (perf), RUNS (5), ROUNDS
# (cpuloop rounds, 1700), CPU_TARGET (1), CPU_TOOL (0), NICE (-10 as root,
# else 0), BENCH_OUT (bench/out/record), RESULTS (bench/RESULTS-record.md).
# Exit status 1 if a configuration failed; goals missed are reported only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
RUNS=${RUNS:-5}
ROUNDS=${ROUNDS:-1700}
CPU_TARGET=${CPU_TARGET:-1}
CPU_TOOL=${CPU_TOOL:-0}
if [ "$(id -u)" = 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
OUT=${BENCH_OUT:-$root/bench/out/record}
RESULTS=${RESULTS:-$here/RESULTS-record.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

say() { echo "record-bench: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$NICE" != 0 ] && [ -z "${RECORD_BENCH_INNER:-}" ] &&
   [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] &&
   command -v setsid >/dev/null 2>&1; then
    # A background job of a non-interactive shell is no process group
    # leader, so setsid does not fork: $! is the new session's leader.
    RECORD_BENCH_INNER=1 setsid bash "$0" "$@" &
    inner=$!
    trap 'kill -TERM -- -"$inner" 2>/dev/null' INT TERM
    wait "$inner"
    rc=$?
    # wait returns early when a trapped signal arrives: wait again
    kill -0 "$inner" 2>/dev/null && { wait "$inner"; rc=$?; }
    exit "$rc"
fi
if [ -n "${RECORD_BENCH_INNER:-}" ]; then
    echo "$NICE" >/proc/self/autogroup 2>/dev/null ||
        say "cannot set the autogroup's nice value; timings will be noisier"
fi

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
command -v "$PERF" >/dev/null 2>&1 || die "no perf ($PERF) in PATH"
command -v taskset >/dev/null 2>&1 || die "no taskset (util-linux)"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
ncpu=$(nproc)
if [ "$ncpu" -lt 2 ]; then CPU_TARGET=0 CPU_TOOL=0; fi

# ---- the workload

src=$here/cpuloop.c
for v in fp nofp; do
    bin=$OUT/cpuloop-$v
    flag=-fno-omit-frame-pointer
    [ "$v" = nofp ] && flag=-fomit-frame-pointer
    if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
        gcc -O2 -g $flag -o "$bin" "$src" || die "cannot build $src"
    fi
done

# ---- configurations: id, kind (bare|kiln|perf), build, Hz, call graph,
# perf variant (default|lean), label

configs=(
    "bare-fp bare fp - - - bare (fp build)"
    "bare-nofp bare nofp - - - bare (nofp build)"
    "kiln-fp-99 kiln fp 99 fp - kiln record --call-graph fp"
    "kiln-fp-999 kiln fp 999 fp - kiln record --call-graph fp"
    "perf-g-99 perf fp 99 fp default perf record -g"
    "perf-g-999 perf fp 999 fp default perf record -g"
    "perf-gl-99 perf fp 99 fp lean perf record --no-bpf-event -B -g"
    "perf-gl-999 perf fp 999 fp lean perf record --no-bpf-event -B -g"
    "kiln-dw-99 kiln nofp 99 dwarf - kiln record --call-graph dwarf"
    "kiln-dw-999 kiln nofp 999 dwarf - kiln record --call-graph dwarf"
    "perf-dw-99 perf nofp 99 dwarf default perf record --call-graph dwarf"
    "perf-dw-999 perf nofp 999 dwarf default perf record --call-graph dwarf"
    "perf-dwl-99 perf nofp 99 dwarf lean perf record --no-bpf-event -B --call-graph dwarf"
    "perf-dwl-999 perf nofp 999 dwarf lean perf record --no-bpf-event -B --call-graph dwarf"
)

prio=()
[ "$NICE" != 0 ] && prio=(nice -n "$NICE")
now_ns() { date +%s%N; }

# One line per run: id run wall cpu tail script_wall script_cpu samples lost
# bytes target_cpu wall_minus_target_cpu (seconds; "-" where it does not
# apply).
res=$OUT/runs.tsv
: >"$res"
log=$OUT/record-bench.log
: >"$log"
failed=0
declare -A bad

# cpuloop_field FILE: "USER SYS END_NS" from cpuloop's closing line in FILE.
cpuloop_field() {
    sed -n 's/.*cpuloop: .*, cpu \([0-9.]*\) \([0-9.]*\), end \([0-9]*\).*/\1 \2 \3/p' "$1"
}

# run_one ID KIND BUILD HZ CG VARIANT RUN: one timed run; appends to $res.
run_one() {
    local id=$1 kind=$2 build=$3 hz=$4 cg=$5 variant=$6 i=$7
    local bin=$OUT/cpuloop-$build tgt cmd t0 t1 rc
    local tool_out=$OUT/$id.out
    tgt=(taskset -c "$CPU_TARGET" "$bin" "$ROUNDS")
    case $kind in
    bare) cmd=("${tgt[@]}") ;;
    kiln)
        tool_out=$OUT/$id.pb.gz
        cmd=(taskset -c "$CPU_TOOL" "$KILN" record -F "$hz" --call-graph "$cg"
             -o "$tool_out" -- "${tgt[@]}") ;;
    perf)
        tool_out=$OUT/$id.data
        local opts=(--all-user -F "$hz" -o "$tool_out")
        [ "$variant" = lean ] && opts+=(--no-bpf-event -B)
        if [ "$cg" = dwarf ]; then opts+=(--call-graph dwarf); else opts+=(-g); fi
        cmd=(taskset -c "$CPU_TOOL" "$PERF" record "${opts[@]}" -- "${tgt[@]}") ;;
    esac
    rm -f "$tool_out"
    t0=$(now_ns)
    "${prio[@]}" /usr/bin/time -f '%U %S' -o "$OUT/time.txt" "${cmd[@]}" \
        >"$OUT/stdout.txt" 2>"$OUT/stderr.txt"
    rc=$?
    t1=$(now_ns)
    {
        echo "== $id run $i (exit $rc): ${cmd[*]}"
        cat "$OUT/stdout.txt"
        head -c 1500 "$OUT/stderr.txt"
    } >>"$log"
    local cl
    cl=$(cpuloop_field "$OUT/stdout.txt")
    if [ "$rc" -ne 0 ] || [ -z "$cl" ]; then
        say "$id run $i: FAILED (exit $rc; see $log)"
        bad[$id]="exit $rc: $(grep -v '^Command exited' "$OUT/stderr.txt" | head -1 | cut -c1-120)"
        failed=1
        return 1
    fi
    local wl_u wl_s wl_end tot wall cpu tail
    read -r wl_u wl_s wl_end <<<"$cl"
    tot=$(tail -1 "$OUT/time.txt")
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
    tail=$(awk -v e="$wl_end" -v b="$t1" 'BEGIN {printf "%.4f", (b - e) / 1e9}')
    cpu=$(awk -v t="$tot" -v u="$wl_u" -v s="$wl_s" \
        'BEGIN {split(t, a, " "); printf "%.4f", a[1] + a[2] - u - s}')
    local swall=- scpu=- samples=- lost=- bytes=-
    case $kind in
    kiln)
        # kiln: wrote 'FILE': N samples, M lost
        read -r samples lost <<<"$(sed -n "s/.*: \([0-9]*\) samples, \([0-9]*\) lost.*/\1 \2/p" \
            "$OUT/stderr.txt" | tail -1)"
        bytes=$(stat -c %s "$tool_out" 2>/dev/null || echo -) ;;
    perf)
        bytes=$(stat -c %s "$tool_out" 2>/dev/null || echo -)
        # "Processed N events and lost M chunks!" / "lost N samples"
        lost=$(grep -o 'lost [0-9]*' "$OUT/stderr.txt" | awk '{s += $2} END {print s + 0}')
        local s0 s1
        s0=$(now_ns)
        "${prio[@]}" /usr/bin/time -f '%U %S' -o "$OUT/time.txt" \
            "$PERF" script -i "$tool_out" >"$OUT/$id.txt" 2>"$OUT/script-err.txt"
        rc=$?
        s1=$(now_ns)
        if [ "$rc" -ne 0 ]; then
            say "$id run $i: perf script FAILED (exit $rc)"
            bad[$id]="perf script exit $rc"
            failed=1
            return 1
        fi
        swall=$(awk -v a="$s0" -v b="$s1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
        scpu=$(tail -1 "$OUT/time.txt" | awk '{printf "%.4f", $1 + $2}')
        samples=$(awk '/^[^ \t]/ {n++} END {print n + 0}' "$OUT/$id.txt") ;;
    esac
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$i" "$wall" "$cpu" \
        "$tail" "$swall" "$scpu" "${samples:--}" "${lost:--}" "$bytes" \
        "$(awk -v u="$wl_u" -v s="$wl_s" 'BEGIN {printf "%.4f", u + s}')" \
        "$(awk -v w="$wall" -v u="$wl_u" -v s="$wl_s" 'BEGIN {printf "%.4f", w - u - s}')" >>"$res"
    say "$id run $i: wall $wall s, tool CPU $cpu s, tail $tail s, script $swall s, samples $samples, lost $lost, $bytes bytes"
}

rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null) && rev=" (tree at $rev)"
agnote=
[ -n "${RECORD_BENCH_INNER:-}" ] && agnote=" (own session, autogroup nice $(awk '{print $3}' /proc/self/autogroup 2>/dev/null))"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
say "kiln $KILN, $($PERF --version), cpuloop $ROUNDS rounds, $RUNS runs, target CPU $CPU_TARGET, tool CPU $CPU_TOOL, nice $NICE"
# warm-up: page cache, CPU frequency
"${prio[@]}" taskset -c "$CPU_TARGET" "$OUT/cpuloop-fp" $((ROUNDS / 4)) >/dev/null
for ((r = 1; r <= RUNS; r++)); do
    for c in "${configs[@]}"; do
        read -r id kind build hz cg variant _ <<<"$c"
        [ -n "${bad[$id]:-}" ] && continue
        run_one "$id" "$kind" "$build" "$hz" "$cg" "$variant" "$r"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Stack completeness from the last run's output: cum% of `main`.
declare -A main_pct
for c in "${configs[@]}"; do
    read -r id kind _ <<<"$c"
    f=
    case $kind in
    kiln) f=$OUT/$id.pb.gz ;;
    perf) f=$OUT/$id.txt ;;
    esac
    [ -n "$f" ] && [ -s "$f" ] || continue
    main_pct[$id]=$("$KILN" top -q -n 0 --sample-type samples "$f" 2>/dev/null |
        awk '$NF == "main" {print $(NF - 1); exit}')
done

# ---- report

# med ID COLUMN: median of a column of $res over ID's runs ("-" if none).
med() {
    awk -F'\t' -v id="$1" -v c="$2" '$1 == id && $c != "-" {print $c}' "$res" |
        sort -g | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "-"}'
}
# all ID COLUMN: every run's value, space separated.
all() {
    awk -F'\t' -v id="$1" -v c="$2" '$1 == id {printf "%s%s", (n++ ? " " : ""), $c}' "$res"
}
calc() { awk "BEGIN {printf \"$1\", $2}"; }
isnum() { [[ $1 =~ ^-?[0-9.]+$ ]]; }

declare -A W C T SW SC N L B TC X
for c in "${configs[@]}"; do
    read -r id _ <<<"$c"
    W[$id]=$(med "$id" 3) C[$id]=$(med "$id" 4) T[$id]=$(med "$id" 5)
    SW[$id]=$(med "$id" 6) SC[$id]=$(med "$id" 7) N[$id]=$(med "$id" 8)
    L[$id]=$(med "$id" 9) B[$id]=$(med "$id" 10) TC[$id]=$(med "$id" 11)
    X[$id]=$(med "$id" 12)
done

# slowdown ID: median wall / the matching bare median.
base_of() { case $1 in *-dw*) echo bare-nofp ;; *) echo bare-fp ;; esac; }
slow() {
    local b
    b=$(base_of "$1")
    isnum "${W[$1]}" && isnum "${W[$b]}" || { echo -; return; }
    calc '%.3f' "${W[$1]} / ${W[$b]}"
}
# total ID: record wall + perf script wall (record wall for kiln).
total() {
    isnum "${W[$1]}" || { echo -; return; }
    if isnum "${SW[$1]}"; then calc '%.3f' "${W[$1]} + ${SW[$1]}"; else echo "${W[$1]}"; fi
}
added() {
    local b t
    b=$(base_of "$1") t=$(total "$1")
    isnum "$t" && isnum "${W[$b]}" || { echo -; return; }
    calc '%.3f' "$t - ${W[$b]}"
}
# added2 ID: like added, on (wall - target CPU): what the tool adds besides
# the target's own computation (start-up, exit tail, perf script, waiting),
# robust against the drift of the target's CPU time between runs.
added2() {
    local b
    b=$(base_of "$1")
    isnum "${X[$1]}" && isnum "${X[$b]}" || { echo -; return; }
    if isnum "${SW[$1]}"; then calc '%.3f' "${X[$1]} + ${SW[$1]} - ${X[$b]}"
    else calc '%.3f' "${X[$1]} - ${X[$b]}"; fi
}
endprof() {
    isnum "${T[$1]}" || { echo -; return; }
    if isnum "${SW[$1]}"; then calc '%.3f' "${T[$1]} + ${SW[$1]}"; else echo "${T[$1]}"; fi
}
toolcpu() {
    isnum "${C[$1]}" || { echo -; return; }
    if isnum "${SC[$1]}"; then calc '%.3f' "${C[$1]} + ${SC[$1]}"; else calc '%.3f' "${C[$1]}"; fi
}
kib() { isnum "$1" && calc '%.1f' "$1 / 1024" || echo -; }

# goal lines
goals=()
verdict() { if awk "BEGIN {exit !($1)}"; then echo met; else echo MISSED; fi; }
pct() { calc '%+.1f%%' "($1 - 1) * 100"; }
ratio() { calc '%.2f' "$1 / ($2 > 0.001 ? $2 : 0.001)"; }
for hz in 99 999; do
    k=kiln-fp-$hz
    for p in perf-g-$hz perf-gl-$hz; do
        isnum "$(slow $k)" && isnum "$(slow $p)" || continue
        goals+=("fp overhead, $hz Hz, kiln vs $p: slowdown $(pct "$(slow $k)") vs $(pct "$(slow $p)") — $(verdict "$(slow $k) <= $(slow $p)"); wall time added besides the target's CPU $(calc '%.3f' "${X[$k]} - ${X[bare-fp]}") s vs $(calc '%.3f' "${X[$p]} - ${X[bare-fp]}") s — $(verdict "${X[$k]} <= ${X[$p]}")")
    done
done
for hz in 99 999; do
    k=kiln-dw-$hz
    for p in perf-dw-$hz perf-dwl-$hz; do
        isnum "$(added $k)" && isnum "$(added $p)" || continue
        goals+=("dwarf record+symbolize, $hz Hz, kiln vs $p + perf script: time added over the bare run $(added $k) s vs $(added $p) s (ratio $(ratio "$(added $k)" "$(added $p)"), goal <= 0.33) — $(verdict "$(added $k) <= $(added $p) / 3"); added besides the target's CPU $(added2 $k) s vs $(added2 $p) s (ratio $(ratio "$(added2 $k)" "$(added2 $p)")) — $(verdict "$(added2 $k) <= $(added2 $p) / 3"); whole wall $(total $k) s vs $(total $p) s (ratio $(calc '%.2f' "$(total $k) / $(total $p)")); tool CPU $(toolcpu $k) s vs $(toolcpu $p) s (ratio $(ratio "$(toolcpu $k)" "$(toolcpu $p)"))")
    done
done
for pair in "kiln-fp-99 perf-g-99" "kiln-fp-999 perf-g-999" "kiln-dw-99 perf-dw-99" "kiln-dw-999 perf-dw-999"; do
    read -r k p <<<"$pair"
    isnum "${B[$k]}" && isnum "${B[$p]}" || continue
    goals+=("size, $k vs $p: $(kib "${B[$k]}") KiB vs $(kib "${B[$p]}") KiB (ratio $(calc '%.4f' "${B[$k]} / ${B[$p]}"), goal <= 0.1) — $(verdict "${B[$k]} <= ${B[$p]} / 10")")
done

report() {
    echo "## kiln record vs perf record (CPU-bound, fixed work)"
    echo
    echo "Generated by \`bench/record.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $ncpu CPUs,"
    echo "kernel $(uname -r), $($PERF --version), kiln \`$KILN\`$rev."
    echo "Workload: \`bench/cpuloop.c\` ($ROUNDS rounds, gcc -O2 -g; fp build"
    echo "\`-fno-omit-frame-pointer\` for fp mode, nofp build \`-fomit-frame-pointer\` for"
    echo "dwarf mode).  $RUNS runs per configuration, interleaved; medians.  Target pinned to CPU"
    echo "$CPU_TARGET, kiln / perf to CPU $CPU_TOOL (\`taskset\`), all at nice $NICE$agnote.  perf with"
    echo "\`--all-user\` (kiln's default: user-space samples), event cpu-clock for both,"
    echo "8192 bytes of stack per sample in dwarf mode for both."
    echo "Load average at start: $load_start; at end: $load_end.  The machine is shared"
    echo "with other jobs (compilers): single numbers are noisy, compare ratios of"
    echo "medians, and differences under ~3% are within the noise."
    echo
    echo "### Recording overhead"
    echo
    echo "Slowdown = median wall time / the bare run of the same build.  Tool CPU ="
    echo "user+sys of kiln's or perf record's own process tree, without the target's"
    echo "CPU time; for perf plus \`perf script\`'s CPU.  main% = share of samples"
    echo "whose stack reaches \`main\` (last run, read with \`kiln top\`).  Target CPU ="
    echo "the CPU time cpuloop reports for itself: its spread between runs of the"
    echo "same configuration shows how much the machine disturbed the runs."
    echo
    echo "| configuration | Hz | wall (s), median | runs (s) | slowdown | target CPU (s) | tool CPU (s) | samples | lost | main% |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
    local c id kind build hz cg variant label
    for c in "${configs[@]}"; do
        read -r id kind build hz cg variant label <<<"$c"
        if [ -n "${bad[$id]:-}" ]; then
            echo "| $label | $hz | failed: ${bad[$id]//|/ } | | | | | | | |"
            continue
        fi
        local sd=-
        [ "$kind" != bare ] && sd="$(slow "$id")×"
        local tc=-
        [ "$kind" != bare ] && tc=$(toolcpu "$id")
        echo "| $label | $hz | ${W[$id]} | $(all "$id" 3) | $sd | ${TC[$id]} | $tc | ${N[$id]} | ${L[$id]} | ${main_pct[$id]:--} |"
    done
    echo
    echo "### From the end of recording to a symbolized profile; file size"
    echo
    echo "Tail = from the end of the target's work to the exit of kiln / perf record"
    echo "(kiln: flush, unwind and symbolize what is left, write the .pb.gz; perf:"
    echo "flush and write perf.data; by default also the wait for its BPF side-band"
    echo "thread, up to ~1 s: perf's default runs end near whole seconds, 3.1 or 4.1 s)."
    echo "End→profile = tail + \`perf script\` for perf.  Record+symbolize = record wall +"
    echo "\`perf script\` wall; added = that minus the bare run.  Added besides target"
    echo "CPU = the same on (wall − the target's own CPU time) per run: start-up, exit"
    echo "tail, \`perf script\` and waiting, without the drift of the target's CPU time"
    echo "between runs (the machine's noise); it leaves out the kernel's per-sample work"
    echo "in the target, which is the same for both tools at the same rate and stack size."
    echo
    echo "| configuration | Hz | tail (s) | perf script (s) | end→profile (s) | record+symbolize (s) | added over bare (s) | added besides target CPU (s) | output (KiB) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for c in "${configs[@]}"; do
        read -r id kind build hz cg variant label <<<"$c"
        [ "$kind" = bare ] && continue
        [ -n "${bad[$id]:-}" ] && continue
        echo "| $label | $hz | ${T[$id]} | ${SW[$id]} | $(endprof "$id") | $(total "$id") | $(added "$id") | $(added2 "$id") | $(kib "${B[$id]}") |"
    done
    echo
    echo "### Goals (issue 3)"
    echo
    local g
    for g in "${goals[@]}"; do echo "- $g"; done
    [ "${#goals[@]}" -eq 0 ] && echo "- (no goal could be evaluated: configurations failed)"
    echo
}

report | tee "$RESULTS"
say "wrote $RESULTS; per-run data in $res, log in $log"
exit "$failed"
