#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/agent.sh: overhead of the in-process agent (libkiln.so, LD_PRELOAD)
# against gperftools' libprofiler.so on the same CPU-bound multi-threaded
# program, at the same frequency, in the same run (issue 4, "Speed": no more
# overhead than libprofiler, and under 1% at 99 Hz).  Prints a markdown
# section on stdout and writes it to bench/RESULTS-agent.md (bench/run.sh
# appends it to RESULTS.md).
#
# Workload: bench/mtloop.c (built here with gcc -O2 -g
# -fno-omit-frame-pointer -pthread): THREADS threads x ROUNDS rounds of fixed
# work, about 3 s of wall time on 2 cores.  Configurations, each run RUNS
# times, interleaved (round r runs every configuration once, starting at a
# different one each round) so that bursts of load elsewhere spread over all
# of them; medians are reported:
#   bare
#   kiln 99 / 999 Hz   LD_PRELOAD=libkiln.so KILN_CPU=F KILN_CPU_HZ=N
#   gperf 99 / 999 Hz  LD_PRELOAD=libprofiler.so CPUPROFILE=F
#                      CPUPROFILE_FREQUENCY=N
# CPU-time timers expire on the scheduler tick (CONFIG_HZ, 250 here), so
# "999 Hz" really samples at about 250 Hz for both tools; the samples each
# tool took are reported (read back with `kiln top --sample-type samples`),
# with the CPU time each profile claims (kiln counts timer overruns;
# gperftools assumes 1/FREQUENCY s per sample).
#
# Measured per run: wall time around the whole process (it includes writing
# the profile at exit); the process's CPU time (user+sys, /usr/bin/time),
# whose excess over the bare run is the profiler's own CPU (signal delivery,
# handler, kiln's collector thread, writing); the "tail" from the end of
# mtloop's work (it prints CLOCK_REALTIME) to the process's exit, and the CPU
# spent in it (total CPU minus what mtloop reports for its work).  Slowdowns
# are ratios of medians, and also the median of per-round ratios (each run
# against the bare run of the same round), which drift on the machine
# disturbs less.
#
# Where the CPU goes (PERF_SHARE=1, the default, when perf exists): one more
# run of each configuration under `perf stat -e signal:signal_deliver`
# (the SIGPROF signals delivered: the stacks each profiler really took) and
# `perf record -g` (hrtimer-driven cpu-clock at PERF_HZ, kernel and user,
# every thread): the CPU in the signal handler and the kernel's signal
# path per signal, the start-up and exit work of the main thread beyond the
# bare run's (and the libraries it is spent in), the profiler's own threads.
# Unlike the timings, these figures do not depend on how busy the machine
# is (they leave out indirect costs such as cache pollution).  As root, a
# diagnostic run of kiln at 99 Hz with /usr/lib/debug hidden (a tmpfs over
# it in a mount namespace of its own) shows what reading detached debug
# files (e.g. libc6-dbg's compressed DWARF) costs kiln at exit.
#
# Noise: everything runs at nice $NICE (root only); with scheduler
# autogroups nice only weighs processes of one session against each other,
# so the script re-runs itself in a session of its own (setsid) and gives
# that session's autogroup the nice value.  CPUS (e.g. "0,1") pins the
# workload with taskset; unset, it runs on every CPU.
#
# Environment: KILN (default build/kiln), LIBKILN (libkiln.so next to
# KILN), LIBPROFILER (/usr/lib/x86_64-linux-gnu/libprofiler.so), RUNS (7),
# THREADS (4), ROUNDS (2400), CPUS (unset), NICE (-10 as root, else 0),
# PERF (perf), PERF_SHARE (1), PERF_HZ (4999), BENCH_OUT (bench/out/agent),
# RESULTS (bench/RESULTS-agent.md).  Exit status 1 if a configuration
# failed; goals missed are reported only (the numbers are noisy).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac
LIBKILN=${LIBKILN:-$(dirname "$KILN")/libkiln.so}
case $LIBKILN in /*) ;; *) LIBKILN=$PWD/$LIBKILN ;; esac
LIBPROFILER=${LIBPROFILER:-/usr/lib/x86_64-linux-gnu/libprofiler.so}
RUNS=${RUNS:-7}
THREADS=${THREADS:-4}
ROUNDS=${ROUNDS:-2400}
CPUS=${CPUS:-}
PERF=${PERF:-perf}
PERF_SHARE=${PERF_SHARE:-1}
PERF_HZ=${PERF_HZ:-4999}
if [ "$(id -u)" = 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
OUT=${BENCH_OUT:-$root/bench/out/agent}
RESULTS=${RESULTS:-$here/RESULTS-agent.md}

say() { echo "agent-bench: $*" >&2; }
die() { say "$*"; exit 1; }

# Own session, so that the autogroup's nice value protects the runs from
# other sessions' jobs (see the header).
if [ "$NICE" != 0 ] && [ -z "${AGENT_BENCH_INNER:-}" ] &&
   [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] &&
   command -v setsid >/dev/null 2>&1; then
    AGENT_BENCH_INNER=1 setsid bash "$0" "$@" &
    inner=$!
    trap 'kill -TERM -- -"$inner" 2>/dev/null' INT TERM
    wait "$inner"
    rc=$?
    kill -0 "$inner" 2>/dev/null && { wait "$inner"; rc=$?; }
    exit "$rc"
fi
agnote=
if [ -n "${AGENT_BENCH_INNER:-}" ]; then
    if echo "$NICE" >/proc/self/autogroup 2>/dev/null; then
        agnote=" (own session, autogroup nice $NICE)"
    else
        say "cannot set the autogroup's nice value; timings will be noisier"
    fi
fi

mkdir -p "$OUT" || exit 1
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
[ -f "$LIBKILN" ] || die "no libkiln.so at $LIBKILN (build it first, or set LIBKILN)"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
have_gperf=1
if [ ! -f "$LIBPROFILER" ]; then
    have_gperf=0
    say "no $LIBPROFILER (Debian package libgoogle-perftools4): kiln only"
fi
have_perf=0
if [ "$PERF_SHARE" = 1 ] && command -v "$PERF" >/dev/null 2>&1; then have_perf=1; fi
pin=()
[ -n "$CPUS" ] && pin=(taskset -c "$CPUS")
prio=()
[ "$NICE" != 0 ] && prio=(nice -n "$NICE")

# ---- the workload

bin=$OUT/mtloop
if [ ! -x "$bin" ] || [ "$here/mtloop.c" -nt "$bin" ]; then
    gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$bin" "$here/mtloop.c" ||
        die "cannot build $here/mtloop.c"
fi

# ---- configurations: id tool Hz label

configs=("bare - - bare")
for hz in 99 999; do
    configs+=("kiln-$hz kiln $hz libkiln.so (KILN_CPU)")
    [ "$have_gperf" = 1 ] && configs+=("gperf-$hz gperf $hz libprofiler.so (CPUPROFILE)")
done

now_ns() { date +%s%N; }

# profile_of ID: the profile file a configuration writes.
profile_of() {
    case $1 in
    kiln-*) echo "$OUT/$1.pb.gz" ;;
    gperf-*) echo "$OUT/$1.prof" ;;
    esac
}

# env_of ID HZ FILE: sets the array envv to the environment (for `env`)
# that turns the profiler on.
envv=()
env_of() {
    case $1 in
    kiln-*) envv=("LD_PRELOAD=$LIBKILN" "KILN_CPU=$3" "KILN_CPU_HZ=$2") ;;
    gperf-*) envv=("LD_PRELOAD=$LIBPROFILER" "CPUPROFILE=$3" "CPUPROFILE_FREQUENCY=$2") ;;
    esac
}

# top_total FILE TYPE: the total of a profile for a sample type, as a plain
# number (seconds for time, a count for samples), from `kiln top`.
top_total() {
    "$KILN" top -q -n 1 --sample-type "$2" "$1" 2>/dev/null |
        sed -n 's/.* of \([0-9.]*\)\([a-z]*\) total.*/\1 \2/p' | awk '
        {v = $1; u = $2
         if (u == "ns") v /= 1e9; else if (u == "us") v /= 1e6
         else if (u == "ms") v /= 1e3
         printf (u == "" ? "%d\n" : "%.4f\n"), v; exit}'
}

# mtloop_fields FILE: "CHECKSUM WORK_WALL USER SYS END_NS" from mtloop's line.
mtloop_fields() {
    sed -n 's/^mtloop: .*checksum \([0-9]*\), wall \([0-9.]*\), cpu \([0-9.]*\) \([0-9.]*\), end \([0-9]*\).*/\1 \2 \3 \4 \5/p' "$1"
}

# One line per run: id round wall cpu work_wall work_cpu tail tail_cpu
# samples profile_cpu bytes (seconds; "-" where it does not apply).
res=$OUT/runs.tsv
: >"$res"
log=$OUT/agent-bench.log
: >"$log"
failed=0
checksum=
declare -A bad

# run_one ID TOOL HZ ROUND: one timed run; appends to $res.
run_one() {
    local id=$1 tool=$2 hz=$3 r=$4 prof='' cmd t0 t1 rc
    # bare runs through env too, so that every run execs the same way
    cmd=(env "${pin[@]}" "$bin" "$THREADS" "$ROUNDS")
    if [ "$tool" != - ]; then
        prof=$(profile_of "$id")
        rm -f "$prof"
        env_of "$id" "$hz" "$prof"
        cmd=(env "${envv[@]}" "${pin[@]}" "$bin" "$THREADS" "$ROUNDS")
    fi
    t0=$(now_ns)
    "${prio[@]}" /usr/bin/time -f '%U %S' -o "$OUT/time.txt" "${cmd[@]}" \
        >"$OUT/stdout.txt" 2>"$OUT/stderr.txt"
    rc=$?
    t1=$(now_ns)
    {
        echo "== $id round $r (exit $rc): ${cmd[*]}"
        cat "$OUT/stdout.txt"
        head -c 1500 "$OUT/stderr.txt"
    } >>"$log"
    local f sum wwall wu ws wend
    f=$(mtloop_fields "$OUT/stdout.txt")
    read -r sum wwall wu ws wend <<<"$f"
    local why=
    if [ "$rc" -ne 0 ] || [ -z "$f" ]; then
        why="exit $rc: $(grep -v '^Command exited' "$OUT/stderr.txt" | head -1 | cut -c1-120)"
    elif [ -n "$checksum" ] && [ "$sum" != "$checksum" ]; then
        why="checksum $sum, not $checksum (the work changed)"
    fi
    local samples=- pcpu=- bytes=-
    if [ -z "$why" ] && [ -n "$prof" ]; then
        if [ ! -s "$prof" ]; then
            why="no profile written at $prof"
        else
            bytes=$(stat -c %s "$prof")
            samples=$(top_total "$prof" samples)
            pcpu=$(top_total "$prof" cpu)
            [ -n "$samples" ] && [ "$samples" -gt 0 ] 2>/dev/null ||
                why="kiln top cannot read $prof or it has no samples"
        fi
    fi
    if [ -n "$why" ]; then
        say "$id round $r: FAILED ($why; see $log)"
        bad[$id]=$why
        failed=1
        return 1
    fi
    [ -z "$checksum" ] && checksum=$sum
    local tot wall cpu wcpu tail tcpu
    tot=$(tail -1 "$OUT/time.txt")
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
    cpu=$(awk -v t="$tot" 'BEGIN {split(t, a, " "); printf "%.4f", a[1] + a[2]}')
    wcpu=$(awk -v u="$wu" -v s="$ws" 'BEGIN {printf "%.4f", u + s}')
    tail=$(awk -v e="$wend" -v b="$t1" 'BEGIN {printf "%.4f", (b - e) / 1e9}')
    tcpu=$(awk -v c="$cpu" -v w="$wcpu" 'BEGIN {printf "%.4f", c - w}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$r" "$wall" "$cpu" \
        "$wwall" "$wcpu" "$tail" "$tcpu" "${samples:--}" "${pcpu:--}" "$bytes" >>"$res"
    say "$id round $r: wall $wall s, cpu $cpu s, tail $tail s, samples $samples, profile cpu $pcpu s"
}

rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null) && rev=" (tree at $rev)"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_ns=$(now_ns)
say "kiln $LIBKILN vs $LIBPROFILER, mtloop $THREADS threads x $ROUNDS rounds, $RUNS runs, nice $NICE"
# warm-up: page cache, CPU frequency, the libraries
"${prio[@]}" "${pin[@]}" "$bin" "$THREADS" $((ROUNDS / 4)) >/dev/null
ncfg=${#configs[@]}
for ((r = 1; r <= RUNS; r++)); do
    for ((k = 0; k < ncfg; k++)); do
        c=${configs[$(((k + r - 1) % ncfg))]}
        read -r id tool hz _ <<<"$c"
        [ -n "${bad[$id]:-}" ] && continue
        run_one "$id" "$tool" "$hz" "$r"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- where the time goes: perf record -g of one run per configuration

# deps_of LIB: basenames (symlinks resolved, as perf names them) of the
# libraries LIB pulls in, less the C runtime that the workload uses too.
deps_of() {
    ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
        while read -r f; do basename "$(readlink -f "$f")"; done |
        grep -Ev '^(libc|libm|libpthread|libdl|librt)[.-]|^ld-linux' | tr '\n' ' '
}

# classify SCRIPT LIB DEPS: one line "total workers handler sigpath
# start exit other exit_top" from `perf script -F comm,pid,tid,time,ip,sym,dso`
# output, in samples.  Workers = threads with a sample in run_rounds;
# handler = their samples in the signal handler (a frame of LIB other than
# its thread-start trampoline, or of its libraries, or the sigreturn
# trampoline __restore_rt below it); sigpath =
# their other samples in the kernel's CPU-timer and signal delivery code;
# start / exit = the main thread's samples before the first / after the
# last worker sample; other = threads of the profiler (kiln's collector).
# exit_top: the heaviest DSOs of the exit samples.
classify() {
    awk -v lib="$2" -v deps=" $3 " '
    function base(d) {sub(/^.*\//, "", d); sub(/\)$/, "", d); return d}
    function header(   nf, pt, h) {
        h = $0; sub(/[ \t:]+$/, "", h)
        nf = split(h, f, /[ \t]+/)
        t = f[nf] + 0; pt = f[nf - 1]; split(pt, q, "/"); pid = q[1]; tid = q[2]
        nfr = 0
    }
    function done_sample(   i, inprof, insig, hasrun, d) {
        if (tid == "") return
        hasrun = 0; inprof = 0; insig = 0
        for (i = 1; i <= nfr; i++) {
            if (sym[i] == "run_rounds") hasrun = 1
            d = base(dso[i])
            # the thread-start trampoline of kiln sits at the bottom of
            # every thread it starts: that is no cost of sampling.
            if ((d == lib && sym[i] != "trampoline") || sym[i] == "__restore_rt" ||
                (i == 1 && index(deps, " " d " "))) inprof = 1
            if (d == "[kernel.kallsyms]" && sym[i] ~ /signal|sigreturn|posix_cpu_timer|cpu_timer_fire|sigqueue|setup_rt_frame|sigframe|fpstate|fpregs/) insig = 1
        }
        if (pass == 1) {
            if (hasrun) {
                worker[tid] = 1
                if (first == "" || t < first) first = t
                if (last == "" || t > last) last = t
            }
        } else {
            total++
            if (tid in worker) {
                nw++
                if (inprof) nh++
                else if (insig) ns++
            } else if (tid == pid) {
                if (t < first) nstart++
                else if (t > last) {
                    nexit++
                    d = nfr ? base(dso[1]) : "?"
                    sub(/(-[0-9.]+)?\.so.*/, "", d); sub(/\.kallsyms\]/, "]", d)
                    xd[d]++
                }
            } else nother++
        }
        tid = ""
    }
    FNR == 1 {done_sample(); pass++}
    /^[^ \t]/ {done_sample(); header(); next}
    /^[ \t]*$/ {done_sample(); next}
    {
        nfr++
        line = $0; sub(/^[ \t]+[0-9a-f]+ /, "", line)
        p = index(line, " (")
        if (p) {sym[nfr] = substr(line, 1, p - 1); dso[nfr] = substr(line, p + 2)}
        else {sym[nfr] = line; dso[nfr] = ""}
        sub(/\+0x[0-9a-f]+$/, "", sym[nfr])
    }
    END {
        done_sample()
        top = ""
        for (k = 0; k < 3; k++) {
            best = ""; bn = 0
            for (d in xd) if (xd[d] > bn) {best = d; bn = xd[d]}
            if (best == "") break
            top = top (k ? ", " : "") best " " int(bn * 100 / nexit + 0.5) "%"
            delete xd[best]
        }
        printf "%d %d %d %d %d %d %d %s\n", total, nw, nh, ns, nstart, nexit, nother, (top == "" ? "-" : top)
    }' "$1" "$1"
}

declare -A PS_TOTAL PS_W PS_H PS_S PS_START PS_EXIT PS_OTHER PS_XTOP PS_SIG
# A diagnostic run: kiln at 99 Hz with the detached debug files hidden
# (a tmpfs over /usr/lib/debug in a mount namespace of its own), to show
# what reading them (libc6-dbg's compressed DWARF) costs at exit.
perf_configs=("${configs[@]}")
if [ "$(id -u)" = 0 ] && [ -d /usr/lib/debug ] && command -v unshare >/dev/null 2>&1 &&
   [ -z "${bad[kiln-99]:-}" ]; then
    perf_configs+=("kiln-99-nodbg kiln 99 libkiln.so (KILN_CPU), /usr/lib/debug hidden (diagnostic)")
fi
if [ "$have_perf" = 1 ]; then
    kiln_deps=$(deps_of "$LIBKILN")
    gperf_deps=$([ "$have_gperf" = 1 ] && deps_of "$LIBPROFILER")
    for c in "${perf_configs[@]}"; do
        read -r id tool hz _ <<<"$c"
        [ -n "${bad[$id]:-}" ] && continue
        cmd=(env "${pin[@]}" "$bin" "$THREADS" "$ROUNDS")
        lib=- deps='' ns=()
        [[ $id == *-nodbg ]] &&
            ns=(unshare -m sh -c 'mount -t tmpfs kiln-bench /usr/lib/debug && exec "$@"' sh)
        if [ "$tool" != - ]; then
            prof=$OUT/perf-$(basename "$(profile_of "$id")")
            env_of "$id" "$hz" "$prof"
            cmd=(env "${envv[@]}" "${pin[@]}" "$bin" "$THREADS" "$ROUNDS")
            if [ "$tool" = kiln ]; then lib=$(basename "$(readlink -f "$LIBKILN")") deps=$kiln_deps
            else lib=$(basename "$(readlink -f "$LIBPROFILER")") deps=$gperf_deps; fi
        fi
        data=$OUT/perf-$id.data
        # perf stat counts the SIGPROF signals delivered (the stacks the
        # profiler really took); perf record samples where the CPU goes.
        if ! "${prio[@]}" "${ns[@]}" "$PERF" stat -x, -o "$OUT/perf-$id.stat" \
            -e signal:signal_deliver --filter 'sig == 27' -- \
            "$PERF" record -q --no-bpf-event -B -e cpu-clock -F "$PERF_HZ" -g \
            -o "$data" -- "${cmd[@]}" >>"$log" 2>&1; then
            say "perf record of $id failed; skipping the perf shares (see $log)"
            break
        fi
        PS_SIG[$id]=$(awk -F, '$3 ~ /signal_deliver/ {print $1 + 0}' "$OUT/perf-$id.stat")
        "$PERF" script -i "$data" -F comm,pid,tid,time,ip,sym,dso 2>>"$log" >"$OUT/perf-$id.txt" || continue
        read -r v_total v_w v_h v_s v_start v_exit v_other v_xtop \
            <<<"$(classify "$OUT/perf-$id.txt" "$lib" "$deps")"
        PS_TOTAL[$id]=$v_total PS_W[$id]=$v_w PS_H[$id]=$v_h PS_S[$id]=$v_s
        PS_START[$id]=$v_start PS_EXIT[$id]=$v_exit PS_OTHER[$id]=$v_other PS_XTOP[$id]=$v_xtop
        rm -f "$data.old" "$OUT/perf-$id.txt"
        say "perf of $id: ${PS_TOTAL[$id]} samples, workers ${PS_W[$id]} (handler ${PS_H[$id]}, kernel signal path ${PS_S[$id]}), main start ${PS_START[$id]} exit ${PS_EXIT[$id]} (${PS_XTOP[$id]}), other threads ${PS_OTHER[$id]}; ${PS_SIG[$id]:-?} SIGPROF delivered"
    done
fi
elapsed=$(awk -v a="$start_ns" -v b="$(now_ns)" 'BEGIN {printf "%.0f", (b - a) / 1e9}')

# ---- report

# med ID COLUMN: median of a column of $res over ID's runs ("-" if none).
med() {
    awk -F'\t' -v id="$1" -v c="$2" '$1 == id && $c != "-" {print $c}' "$res" |
        sort -g | awk '{a[NR] = $1} END {
            if (!NR) print "-"
            else if (NR % 2) print a[(NR + 1) / 2]
            else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# all ID COLUMN: every run's value, space separated.
all() {
    awk -F'\t' -v id="$1" -v c="$2" '$1 == id {printf "%s%s", (n++ ? " " : ""), $c}' "$res"
}
# paired ID COLUMN: median over rounds of ID's value / bare's in that round.
paired() {
    awk -F'\t' -v id="$1" -v c="$2" '
        $1 == "bare" {b[$2] = $c}
        $1 == id {v[$2] = $c}
        END {for (r in v) if ((r in b) && b[r] > 0) print v[r] / b[r]}' "$res" |
        sort -g | awk '{a[NR] = $1} END {
            if (!NR) print "-"
            else if (NR % 2) printf "%.4f\n", a[(NR + 1) / 2]
            else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
calc() { awk "BEGIN {printf \"$1\", $2}"; }
isnum() { [[ $1 =~ ^-?[0-9.]+$ ]]; }
pct() { isnum "$1" && calc '%+.2f%%' "($1 - 1) * 100" || echo -; }

declare -A W C WW WC T TC N P B
for c in "${configs[@]}"; do
    read -r id _ <<<"$c"
    W[$id]=$(med "$id" 3) C[$id]=$(med "$id" 4) WW[$id]=$(med "$id" 5)
    WC[$id]=$(med "$id" 6) T[$id]=$(med "$id" 7) TC[$id]=$(med "$id" 8)
    N[$id]=$(med "$id" 9) P[$id]=$(med "$id" 10) B[$id]=$(med "$id" 11)
done
ratio_of() { isnum "${1:-}" && isnum "${2:-}" && calc '%.4f' "$1 / $2" || echo -; }
slow() { ratio_of "${W[$1]}" "${W[bare]}"; }
cslow() { ratio_of "${C[$1]}" "${C[bare]}"; }
# own ID: median process CPU minus the bare median.
own() { isnum "${C[$1]}" && isnum "${C[bare]}" && calc '%.3f' "${C[$1]} - ${C[bare]}" || echo -; }
# rate ID: samples per CPU second of the work.
rate() { isnum "${N[$1]}" && isnum "${WC[$1]}" && calc '%.0f' "${N[$1]} / ${WC[$1]}" || echo -; }
# spread ID COLUMN: (max - min) / median of a column over ID's runs, in %.
spread() {
    local m
    m=$(med "$1" "$2")
    isnum "$m" || { echo -; return; }
    awk -F'\t' -v id="$1" -v c="$2" -v m="$m" '$1 == id {v = $c; if (!n++ || v < lo) lo = v; if (v > hi) hi = v}
        END {if (n < 2) print "-"; else printf "%.1f%%", (hi - lo) / m * 100}' "$res"
}

# perf-derived figures, in ms of CPU (one perf sample = 1/PERF_HZ s).
ms() { calc '%.1f' "$1 * 1000 / $PERF_HZ"; }
has_perf() { isnum "${PS_TOTAL[$1]:-}" && isnum "${PS_TOTAL[bare]:-}"; }
# hs ID: samples in the handler and the kernel's signal path (workers).
hs() { echo $((PS_H[$1] + PS_S[$1])); }
# fixed ID: start-up + exit samples of the main thread beyond bare's.
fixed_start() { echo $((PS_START[$1] - PS_START[bare])); }
fixed_exit() { echo $((PS_EXIT[$1] - PS_EXIT[bare])); }
# direct ID: all the profiler's samples: handler + signal path + start and
# exit beyond bare + its own threads.
direct() { echo $(($(hs "$1") + $(fixed_start "$1") + $(fixed_exit "$1") + PS_OTHER[$1] - PS_OTHER[bare])); }
# direct_pct ID: direct cost as a share of the bare run's CPU samples.
direct_pct() { calc '%.2f%%' "$(direct "$1") * 100 / ${PS_TOTAL[bare]}"; }
per_signal() {
    isnum "${PS_SIG[$1]:-}" && [ "${PS_SIG[$1]}" -gt 0 ] &&
        calc '%.1f' "$(hs "$1") * 1e6 / $PERF_HZ / ${PS_SIG[$1]}" || echo -
}
# sig_rate ID: SIGPROF signals per CPU second of the workers (perf run).
sig_rate() {
    isnum "${PS_SIG[$1]:-}" && [ "${PS_W[$1]}" -gt 0 ] &&
        calc '%.0f' "${PS_SIG[$1]} * $PERF_HZ / ${PS_W[$1]}" || echo -
}
hs_pct() { [ "${PS_W[$1]}" -gt 0 ] && calc '%.2f%%' "$(hs "$1") * 100 / ${PS_W[$1]}" || echo -; }

verdict() { if awk "BEGIN {exit !($1)}"; then echo met; else echo MISSED; fi; }
goals=()
for hz in 99 999; do
    k=kiln-$hz g=gperf-$hz
    isnum "$(slow $k)" || continue
    line="$hz Hz:"
    if has_perf "$k"; then
        line+=" direct cost (perf, independent of the load): kiln $(direct_pct $k)"
        has_perf "$g" && line+=" vs libprofiler $(direct_pct $g) — no more than libprofiler: $(verdict "$(direct $k) <= $(direct $g)")"
        [ "$hz" = 99 ] && line+=", under 1%: $(verdict "$(direct $k) * 100 < ${PS_TOTAL[bare]}")"
        line+="; handler + signal path per signal $(per_signal $k) µs"
        has_perf "$g" && line+=" vs $(per_signal $g) µs"
        line+=", start $(ms "$(fixed_start $k)") ms"
        has_perf "$g" && line+=" vs $(ms "$(fixed_start $g)") ms"
        line+=", exit $(ms "$(fixed_exit $k)") ms"
        has_perf "$g" && line+=" vs $(ms "$(fixed_exit $g)") ms"
        line+=".  Timed runs:"
    fi
    line+=" kiln CPU $(pct "$(cslow $k)") (per-round $(pct "$(paired $k 4)")), wall $(pct "$(slow $k)") (per-round $(pct "$(paired $k 3)"))"
    if isnum "$(slow $g)"; then
        line+="; libprofiler CPU $(pct "$(cslow $g)") (per-round $(pct "$(paired $g 4)")), wall $(pct "$(slow $g)") (per-round $(pct "$(paired $g 3)"))"
        line+=" — no more than libprofiler: CPU $(verdict "$(cslow $k) <= $(cslow $g)"), wall $(verdict "$(slow $k) <= $(slow $g)")"
    fi
    [ "$hz" = 99 ] && line+="; under 1%: CPU $(verdict "$(cslow $k) < 1.01"), wall $(verdict "$(slow $k) < 1.01")"
    line+=" (bare runs spread: CPU $(spread bare 4), wall $(spread bare 3)"
    sp=$(spread bare 4)
    if isnum "${sp%\%}" && awk "BEGIN {exit !(${sp%\%} > 3)}"; then
        line+=": more than the effects measured, so these timed verdicts mean little in this run; the perf figures hold"
    fi
    line+=")"
    goals+=("$line")
done

report() {
    echo "## libkiln.so vs gperftools' libprofiler.so (in-process CPU profiling, multi-threaded)"
    echo
    echo "Generated by \`bench/agent.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed} s: $(nproc) CPUs,"
    echo "kernel $(uname -r), agent \`$LIBKILN\`$rev, \`$LIBPROFILER\`"
    echo "($(dpkg-query -W -f '${Package} ${Version}' libgoogle-perftools4 2>/dev/null || echo 'version unknown'))."
    echo "Workload: \`bench/mtloop.c\` ($THREADS threads x $ROUNDS rounds of fixed work, gcc -O2 -g"
    echo "-fno-omit-frame-pointer -pthread), ${pin[*]:-unpinned}, nice $NICE$agnote."
    echo "$RUNS runs per configuration, interleaved (each round starts at another"
    echo "configuration); medians.  Load average at start: $load_start; at end: $load_end."
    echo "The machine is shared with other jobs (compilers, tests): single timings are noisy"
    echo "(spread of the bare runs, (max − min) / median: wall $(spread bare 3), CPU $(spread bare 4)), and differences"
    echo "of a few percent are within the noise; the perf figures further down are not."
    echo
    echo "### Overhead (timed runs)"
    echo
    echo "Wall = the whole process, writing the profile at exit included.  CPU ="
    echo "user+sys of the process (all threads, /usr/bin/time).  Slowdown = ratio of"
    echo "medians to bare; per-round = median of the ratios to the bare run of the same"
    echo "round.  Own CPU = process CPU minus bare's (signal delivery, handler, kiln's"
    echo "collector thread, start-up, writing).  Samples = the profile's sample count"
    echo "(\`kiln top --sample-type samples\`); rate = samples per CPU second of the work."
    echo "CPU-time timers expire at most once per scheduler tick (CONFIG_HZ, 250 here):"
    echo "kiln counts the expirations merged into one signal (timer overruns) into its"
    echo "samples, so its count follows CPU time while the stacks it really took are the"
    echo "SIGPROF signals counted in the perf section; gperftools counts one per signal."
    echo "Profile CPU = the CPU time the profile claims (\`kiln top\`) against the work's"
    echo "real CPU time: gperftools assumes 1/FREQUENCY s per sample."
    echo
    echo "| configuration | Hz | wall (s), median | runs (s) | slowdown | per-round | CPU (s) | CPU slowdown | per-round | own CPU (s) | samples | rate (/s) | profile CPU (s) | work CPU (s) |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    local c id tool hz label
    for c in "${configs[@]}"; do
        read -r id tool hz label <<<"$c"
        if [ -n "${bad[$id]:-}" ]; then
            echo "| $label | $hz | failed: ${bad[$id]//|/ } | | | | | | | | | | | |"
            continue
        fi
        if [ "$tool" = - ]; then
            echo "| $label | - | ${W[$id]} | $(all "$id" 3) | - | - | ${C[$id]} | - | - | - | - | - | - | ${WC[$id]} |"
            continue
        fi
        echo "| $label | $hz | ${W[$id]} | $(all "$id" 3) | $(slow "$id")× | $(paired "$id" 3)× | ${C[$id]} | $(cslow "$id")× | $(paired "$id" 4)× | $(own "$id") | ${N[$id]} | $(rate "$id") | ${P[$id]} | ${WC[$id]} |"
    done
    echo
    echo "### Start and exit (timed runs)"
    echo
    echo "Start = wall − the work's own wall time (mtloop's, from before its first"
    echo "pthread_create to the last join) − tail: exec, loading the libraries, the"
    echo "profiler's set-up.  Tail = from the end of the work (mtloop's CLOCK_REALTIME)"
    echo "to the process's exit: stopping, symbolizing and writing the profile.  Tail"
    echo "CPU = process CPU minus the CPU mtloop reports at the end of its work."
    echo
    echo "| configuration | Hz | start (s) | tail (s) | tail CPU (s) | profile (KiB) |"
    echo "|---|---:|---:|---:|---:|---:|"
    for c in "${configs[@]}"; do
        read -r id tool hz label <<<"$c"
        [ -n "${bad[$id]:-}" ] && continue
        local kb=- st=-
        isnum "${B[$id]}" && kb=$(calc '%.1f' "${B[$id]} / 1024")
        isnum "${W[$id]}" && isnum "${WW[$id]}" && isnum "${T[$id]}" &&
            st=$(calc '%.4f' "${W[$id]} - ${WW[$id]} - ${T[$id]}")
        echo "| $label | $hz | $st | ${T[$id]} | ${TC[$id]} | $kb |"
    done
    echo
    if has_perf bare; then
        echo "### Where the profiler's CPU goes (perf, one more run each)"
        echo
        echo "\`perf record --no-bpf-event -B -e cpu-clock -F $PERF_HZ -g\` (kernel and user, every"
        echo "thread) of one more run per configuration, under \`perf stat -e"
        echo "signal:signal_deliver --filter 'sig == 27'\`, which counts the SIGPROF signals"
        echo "delivered: the stacks the profiler really took (per CPU s: per CPU second of the"
        echo "workers; perf's own sampling makes these runs use ~20% more CPU, hence more"
        echo "signals than in the timed runs).  CPU in ms = perf samples /"
        echo "$PERF_HZ.  Handler = the workers' samples in the signal handler (a frame of the"
        echo "profiler's library or of a library it pulls in, or below the sigreturn"
        echo "trampoline); signal path = their other samples in the kernel's CPU-timer,"
        echo "signal delivery and sigreturn code; per signal = both over the signals."
        echo "Start / exit = the main thread's CPU before the first / after the last worker"
        echo "sample, beyond the bare run's; exit DSOs = where the exit samples are (leaf)."
        echo "Threads = the profiler's own threads (kiln's collector).  Direct = all of it,"
        echo "as a share of the bare run's CPU.  This leaves out indirect costs (caches,"
        echo "the timers' bookkeeping on every tick) but does not depend on the machine's load."
        echo
        echo "| configuration | Hz | SIGPROF delivered | per CPU s | handler + signal path (ms) | of the workers' CPU | per signal (µs) | start (ms) | exit (ms) | exit DSOs | threads (ms) | direct (ms) | direct |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
        for c in "${perf_configs[@]}"; do
            read -r id tool hz label <<<"$c"
            has_perf "$id" || continue
            if [ "$tool" = - ]; then
                echo "| $label (baseline) | - | ${PS_SIG[$id]:--} | - | $(ms "$(hs "$id")") | $(hs_pct "$id") | - | $(ms "${PS_START[$id]}") (absolute) | $(ms "${PS_EXIT[$id]}") (absolute) | ${PS_XTOP[$id]} | $(ms "${PS_OTHER[$id]}") | - | - |"
                continue
            fi
            echo "| $label | $hz | ${PS_SIG[$id]:--} | $(sig_rate "$id") | $(ms "$(hs "$id")") | $(hs_pct "$id") | $(per_signal "$id") | $(ms "$(fixed_start "$id")") | $(ms "$(fixed_exit "$id")") | ${PS_XTOP[$id]} | $(ms "$((PS_OTHER[$id] - PS_OTHER[bare]))") | $(ms "$(direct "$id")") | $(direct_pct "$id") |"
        done
        echo
    fi
    echo "### Goals (issue 4)"
    echo
    local g
    for g in "${goals[@]}"; do echo "- $g"; done
    [ "${#goals[@]}" -eq 0 ] && echo "- (no goal could be evaluated: configurations failed)"
    echo
}

report | tee "$RESULTS"
say "wrote $RESULTS; per-run data in $res, log in $log"
exit "$failed"
