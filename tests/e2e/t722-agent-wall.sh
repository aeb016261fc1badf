#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# Wall-clock mode of libkiln.so (KILN_CPU_MODE=wall, gperftools'
# CPUPROFILE_REALTIME=1): every thread sampled whether it runs or waits.
#  - tests/workloads/offcpu (burn 0.5 s of CPU, nap 1 s, wait_pipe 0.5 s
#    on a pipe, in the main thread): each phase's value is the wall time
#    the program measured for it, within 5% (+40 ms: the ticks around a
#    phase's ends on a loaded machine, and the first samples in a function
#    whose unwinding rows the collector has not built yet, which stop at
#    that function: 20-40 ms of burn's clock_gettime at a load of 14 on 2
#    CPUs), in the frame-pointer build and in
#    the one without (stacks of waiting threads are unwound from a copy of
#    their stack: by CFI, or by the frame records found on it);
#  - `offcpu pair`: a thread sleeping 1 s in nap_once and one burning 1 s
#    in burn get 50% +-5 each of the two, state sleeping and running, and
#    the sleeps are never cut short (EINTR: a waiting thread gets no
#    signal);
#  - go tool pprof reads it: samples/count wall/nanoseconds, state labels;
#  - no frame of the agent (its thread-start trampoline) in any stack.
. "$(dirname "$0")/lib.sh"
need_agent

# $1 measured seconds of field $2 in the workload's line in $3
m() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$2"; }
# cumulative ms of function $1 in collapsed file $2 (frames counted once
# per stack), optionally only stacks whose thread label is $3
cum_ms() { awk -v f="$1" '{ n = split($1, a, ";"); for (i = 1; i <= n; i++)
    if (a[i] == f) { s += $2; break } } END { printf "%.1f\n", s / 1e6 }' "$2"; }
# close A B REL ABS: |A-B| <= REL*B + ABS
close() { awk -v a="$1" -v b="$2" -v r="$3" -v t="${4:-0}" \
    'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * b + t) }'; }

# One workload's run and checks (run again once if it fails: twice in
# lib.sh; under two copies of the suite a phase's ends have drifted past
# the margin, once; a broken agent fails both).
wall_run() {
    local wl=$1
    rm -f "$T/w.prof"
    LD_PRELOAD=$KILN_LIB KILN_CPU_MODE=wall KILN_CPU=$T/w.prof KILN_LOG=info \
        "$WL/$wl" > "$T/m" 2> "$T/log" || { cat "$T/log"; fail "$wl failed under the agent"; }
    cat "$T/m"
    has "$T/log" "wall-clock profiling at 99 Hz"
    "$KILN" convert "$T/w.prof" -o "$T/w.collapsed"
    hasnt "$T/w.collapsed" "trampoline|libkiln|on_sigprof"
    for f in burn:burn_wall nap:nap wait_pipe:wait; do
        v=$(cum_ms "${f%%:*}" "$T/w.collapsed")
        want=$(m "${f#*:}" "$T/m" | awk '{ print $1 * 1000 }')
        echo "$wl: ${f%%:*} ${v} ms, measured ${want} ms"
        close "$v" "$want" 0.05 40 || { sort -t' ' -k2 -nr "$T/w.collapsed" | head -20
            fail "$wl: ${f%%:*} ${v} ms of wall time, measured ${want} ms"; }
    done
    # The waits are whole stacks, down to main.
    has "$T/w.collapsed" "main;nap;.*clock_nanosleep "
    has "$T/w.collapsed" "main;wait_pipe;read "
}
for wl in offcpu offcpu-nofp; do
    twice wall_run "$wl"
done

# Two threads at once, by gperftools' variable (twice, as above).
pair_run() {
    rm -f "$T/p.prof"
    LD_PRELOAD=$KILN_LIB CPUPROFILE_REALTIME=1 CPUPROFILE=$T/p.prof "$WL/offcpu" pair > "$T/m" ||
        fail "offcpu pair failed under the agent"
    cat "$T/m"
    has "$T/m" " eintr 0 "
    "$KILN" convert "$T/p.prof" -o "$T/p.collapsed"
    nap=$(cum_ms nap_once "$T/p.collapsed"); burn=$(cum_ms burn "$T/p.collapsed")
    echo "pair: nap_once $nap ms burn $burn ms"
    awk -v a="$nap" -v b="$burn" 'BEGIN { s = a / (a + b); exit !(s >= 0.45 && s <= 0.55) }' ||
        fail "pair: nap_once $nap ms against burn $burn ms, not 50% +-5 each"
    hasnt "$T/p.collapsed" "trampoline"
}
twice pair_run
if command -v go >/dev/null; then
    export HOME=$T GOCACHE=$T/gocache
    go tool pprof -raw "$T/p.prof" > "$T/raw" 2>&1 || { cat "$T/raw"; fail "go tool pprof cannot read the wall profile"; }
    has "$T/raw" "^samples/count wall/nanoseconds"
    go tool pprof -top -tagfocus=state=sleeping "$T/p.prof" > "$T/sleep.top" 2>/dev/null
    has "$T/sleep.top" " nap_once$"
    hasnt "$T/sleep.top" " burn$"
    go tool pprof -top -tagfocus=state=running "$T/p.prof" > "$T/run.top" 2>/dev/null
    has "$T/run.top" " burn$"
    # (nap_once may have a little running time: woken after each of its
    # sleeps, the napper waits for a CPU on a loaded machine.)
fi
# kiln record --wall --mode inject: the same sampler, no root needed.
expect_status 0 "$KILN" record -q --wall --mode inject -o "$T/r.pb.gz" -- "$WL/offcpu" 0.4
"$KILN" top "$T/r.pb.gz" > "$T/r.top"
has "$T/r.top" "^Type: wall"
has "$T/r.top" " nap$"
has "$T/r.top" " wait_pipe$"
expect_status 2 "$KILN" record --off-cpu --mode inject -o "$T/x.pb.gz" -- true
has "$T/err" "not with --mode inject"
# A bad mode is said, and the profile is a CPU one.
LD_PRELOAD=$KILN_LIB KILN_CPU_MODE=walls KILN_CPU=$T/c.prof "$WL/offcpu" 0.1 > /dev/null 2> "$T/log"
has "$T/log" "bad KILN_CPU_MODE 'walls'"
"$KILN" top "$T/c.prof" > "$T/c.top"
has "$T/c.top" "^Type: cpu"
echo ok
