# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the end-to-end tests (sourced, not run).
# Environment from CTest: KILN (the kiln binary), KILN_SRC (source tree),
# KILN_BUILD (build tree, workloads in $KILN_BUILD/workloads),
# KILN_SANITIZE (ON under ASan+UBSan).
set -u
: "${KILN:?run through ctest (KILN unset)}"
WL=$KILN_BUILD/workloads
# kiln's debug file cache (docs/symbols.md): the build tree's, not $HOME's.
export KILN_CACHE_DIR=${KILN_CACHE_DIR-$KILN_BUILD/debug-cache}
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-e2e.XXXXXX")
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"; }
# Runs a command expecting exit status $1; keeps stdout in $T/out, stderr in $T/err.
expect_status() {
    local want=$1; shift
    local rc=0
    "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -eq "$want" ] || { cat "$T/err" >&2; fail "'$*' exited $rc, expected $want"; }
}
# Readiness waits, not time limits: a test waits for what it needs to have
# happened (a line printed, a file written, CPU time used), never for a
# fixed time, so that a loaded machine only makes it slower.
# wait_for WHAT CMD...: runs CMD every 0.1 s until it succeeds; gives up
# after WAIT_TRIES tries (600 by default: a minute or more however loaded
# the machine) and fails naming WHAT.
wait_for() {
    local what=$1 _
    shift
    for _ in $(seq "${WAIT_TRIES:-600}"); do
        "$@" && return 0
        sleep 0.1
    done
    fail "gave up waiting for $what"
}
# cpu_ticks PID: the CPU time (user + system) process PID has used, in
# clock ticks (fields 14 and 15 of /proc/PID/stat, counted after the
# command name, which may hold spaces); fails when PID has ended
# (gone or a zombie).
cpu_ticks() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    # shellcheck disable=SC2086
    set -- $s
    case $1 in Z|X|x) return 1;; esac
    echo $(( ${12} + ${13} ))
}
# cpu_reached PID TICKS: PID has used TICKS clock ticks of CPU time; fails
# the test when PID has ended.
cpu_reached() {
    local n
    n=$(cpu_ticks "$1") || fail "process $1 ended while it was waited for"
    [ "$n" -ge "$2" ]
}
# wait_cpu PID SECS: waits until process PID has used SECS more seconds of
# CPU time (a program that must run long enough to be sampled: on a loaded
# machine a second of wall time gives it a fraction of a second of CPU).
wait_cpu() {
    local now want
    now=$(cpu_ticks "$1") || fail "process $1 ended before it was waited for"
    want=$(awk -v n="$now" -v s="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%d", n + s * hz + 0.999 }')
    wait_for "process $1 to use $2 s of CPU time" cpu_reached "$1" "$want"
}
# handles_signal PID SIG: PID has a handler for SIG (a number or a name,
# such as TERM), from the SigCgt mask of /proc/PID/status.
handles_signal() {
    local n=$2 mask
    case $n in *[!0-9]*) n=$(kill -l "$n") || return 1;; esac
    mask=$(awk '$1=="SigCgt:" { print $2 }' "/proc/$1/status" 2>/dev/null)
    [ -n "$mask" ] && (( (16#$mask >> (n - 1)) & 1 ))
}
# runs PID EXE: process PID runs program EXE (has exec'ed it: a forked
# child still shows its parent's command line and program).
runs() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$2")" ]; }
# child_running PARENT EXE: prints the PID of PARENT's child that runs
# program EXE; fails when there is none yet.
child_running() {
    local c
    for c in $(pgrep -P "$1"); do
        runs "$c" "$2" && { echo "$c"; return 0; }
    done
    return 1
}
# has_threads PID N: process PID runs N threads or more.
has_threads() { [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -ge "$2" ]; }
# Asserts that file $1 contains the extended regex $2.
has() { grep -Eq -- "$2" "$1" || { echo "--- $1:" >&2; head -50 "$1" >&2; fail "'$1' lacks /$2/"; }; }
hasnt() {
    grep -Eq -- "$2" "$1" || return 0
    grep -En -- "$2" "$1" | head -5 | cut -c1-300 >&2
    fail "'$1' has /$2/ (first matching lines above)"
}
# perf_event_open allowed?
need_perf() {
    need perf
    perf record -q -o "$T/probe.data" -- true >/dev/null 2>&1 || skip "perf record is not allowed here"
}
# Percentage of the value in column $3 (flat% by default) for function $2 in `kiln top` output $1.
top_pct() { awk -v f="$2" -v c="${3:-2}" '$NF==f { gsub("%","",$c); print $c; exit }' "$1"; }
# Within: within A B TOL  (|A-B| <= TOL)
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d=a-b; if (d<0) d=-d; exit !(d<=t) }'; }
# kiln record must be allowed to use perf_event_open here.
need_record() {
    "$KILN" record -q -o "$T/probe.pb.gz" -- true >/dev/null 2>"$T/probe.err" ||
        skip "kiln record cannot sample here: $(head -1 "$T/probe.err")"
}
# The number of samples in profile $1 (empty when it has no samples type).
nsamples() {
    "$KILN" top --sample-type samples -n 1 "$1" 2>/dev/null |
        awk '$1=="Showing" && $(NF)=="total" { print $(NF-1); exit }'
}
# share_tol P N TOL: the tolerance in points for a share of P% measured
# from N samples: TOL, or four standard errors of a binomial share when
# that is wider.  A 60% share from 250 samples has a standard error of
# 3.1 points: a fixed ±3 fails one run in three by chance alone (seen on a
# loaded machine, where a CPU-bound run gets fewer CPU seconds and so
# fewer samples).  Four standard errors fail one check in 16,000 by
# chance, and 60/30/10 stays far from any other split.
share_tol() {
    awk -v p="$1" -v n="${2:-0}" -v t="$3" 'BEGIN {
        s = n > 0 ? 400 * sqrt(p / 100 * (1 - p / 100) / n) : 0
        printf "%.1f\n", (s > t ? s : t) }'
}
# check_split FILE COLUMN TOL NAME=PCT...: each function's share in
# `kiln top` column COLUMN (2 flat%, 5 cum%) within the tolerance.
check_split() {
    local f=$1 col=$2 tol=$3 n want name pct t
    shift 3
    "$KILN" top -n 0 "$f" > "$T/split.txt" || fail "kiln top $f"
    n=$(nsamples "$f")
    for want in "$@"; do
        name=${want%=*} pct=${want#*=}
        t=$(share_tol "$pct" "$n" "$tol")
        v=$(top_pct "$T/split.txt" "$name" "$col")
        within "${v:-0}" "$pct" "$t" ||
            { cat "$T/split.txt"; fail "$name at ${v:-none}%, want $pct±$t (${n:-?} samples)"; }
    done
}
# Checks the 60/30/10 split of the shares workload in profile $1 (±$2
# points, or four standard errors when wider).
check_shares() {
    check_split "$1" 2 "${2:-3}" burn_a=60 burn_b=30 burn_c=10
}
# Checks that the call chains of the shares workload are whole in profile $1.
check_chains() {
    "$KILN" convert "$1" -o "$T/chains.collapsed" || fail "kiln convert $1"
    for x in a b c; do
        has "$T/chains.collapsed" "(^|;)main;run;stage_$x;burn_$x "
    done
}
# twice CMD...: runs CMD in a subshell (its `fail` ends only that); if it
# fails, says so and runs it once more, and fails the test if that fails
# too.  For statistical checks of the agent's splits: with two copies of
# the suite loading both CPUs, its tick-driven CPU timers drift by more
# than four standard errors now and then (t701: burn_a 65% of 2033
# samples, want 60); a correct agent passes the second run, one that
# loses a thread's samples or cuts stacks fails both.
twice() {
    ( "$@" ) && return 0
    echo "$1 failed once; running it again" >&2
    ( "$@" ) || fail "$1 failed twice"
}
# perf_record ARGS...: perf record, run again (up to three times) when perf
# itself dies of a signal: perf 6.1 aborted once (SIGABRT) while two copies
# of the suite loaded the machine.  Any other failure returns at once.
# Not for -o - (a second run would append to the first's output).
perf_record() {
    local i rc=0
    for i in 1 2 3; do
        rc=0
        perf record "$@" || rc=$?
        [ "$rc" -gt 128 ] || return "$rc"
        echo "perf record died of signal $((rc - 128)) (try $i)" >&2
    done
    return "$rc"
}
# The preload agent: libkiln.so, not under ASan (an ASan library cannot be
# preloaded into programs built without it).
need_agent() {
    [ "${KILN_SANITIZE:-OFF}" != ON ] || skip "preload tests do not run under ASan"
    [ -e "$KILN_LIB" ] || skip "libkiln.so was not built"
    [ -e "$KILN_MALLOC_LIB" ] || skip "libkiln-malloc.so was not built"
}
# node with --perf-basic-prof (its JIT code named in /tmp/perf-PID.map):
# skips without it; the probe's own map is removed (a map left in /tmp
# names the JIT code of whatever process gets its pid next); the test
# then runs in $T (node writes isolate-*-v8.log files where it runs).
need_node_perfmap() {
    local probe
    need node
    cd "$T" || fail "cannot enter $T"
    probe=$(node --perf-basic-prof -e 'process.stdout.write(String(process.pid))' 2>/dev/null) ||
        skip "node has no --perf-basic-prof"
    rm -f "/tmp/perf-$probe.map"
}
# node with --perf-prof (its JIT code in a jitdump file, jit-PID.dump, in
# the working directory): skips without it; the test then runs in $T,
# where the probe's dump is removed.
need_node_perfprof() {
    need node
    cd "$T" || fail "cannot enter $T"
    node --perf-prof -e 0 2>/dev/null || skip "node has no --perf-prof"
    rm -f jit-*.dump
}
# What to preload for heap profiling: the malloc interposer and libkiln.so,
# both in front of the C library (libkiln.so's own hooks: fork, exec...).
KILN_HEAP_PRELOAD="$KILN_MALLOC_LIB:$KILN_LIB"
# agent_lib ENV...: what to preload for these variables: KILN_HEAP_PRELOAD
# when they ask for a heap profile or trace, else libkiln.so alone.
agent_lib() {
    case "$*" in
        *KILN_HEAP*|*HEAPPROFILE*) echo "$KILN_HEAP_PRELOAD" ;;
        *) echo "$KILN_LIB" ;;
    esac
}
# Cum% of function $2 in `kiln top` output $1.
cum_pct() { awk -v f="$2" '$NF==f { gsub("%","",$5); print $5; exit }' "$1"; }
# Checks the 60/30/10 split of cpuserver in profile $1 by cum% (±$2, or
# four standard errors when wider).
check_server_split() {
    check_split "$1" 5 "${2:-3}" burn_a=60 burn_b=30 burn_c=10
}
