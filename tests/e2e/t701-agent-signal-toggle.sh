#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# CPUPROFILESIGNAL=12: each pair of signals starts and stops a profile,
# written as PATH.0, PATH.1; both have the right split.
#
# Statistics, so that a loaded machine does not fail it: each window
# lasts until the server has used 8 s of CPU time (not 6 s of wall time,
# in which a loaded machine may give it a fraction of that): about 2000
# samples at 250 Hz, whatever the load.  The share of a function with true
# share p among N samples has a standard error of sqrt(p(1-p)/N), 1.1
# points for burn_a at N = 2000; check_server_split allows 3 points or
# four standard errors when wider (lib.sh), so a correct agent fails a
# check about once in 16,000, while a split off by more (a thread's
# samples lost, stacks cut) still fails.  Fewer than 500 samples is a
# failure itself: the window is not what it should be.  Under two copies
# of the suite the timers' bias has exceeded that once: the whole run is
# tried once more then (twice, lib.sh).
. "$(dirname "$0")/lib.sh"
need_agent

# wait_cpu (lib.sh) waits for CPU time used; 8 s of it may take long on a
# loaded machine: allow 3000 tries (5 minutes or more) before giving up.
WAIT_TRIES=3000
# One server, two windows, both checked (run again once if it fails:
# twice in lib.sh).
toggle_run() {
    rm -f "$T"/cpu.prof*
    LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/cpu.prof CPUPROFILESIGNAL=12 CPUPROFILE_FREQUENCY=250 \
        "$WL/cpuserver" 4 > "$T/out.txt" & pid=$!
    # A failed check ends this subshell: the server goes with it.
    trap 'kill -9 $pid 2>/dev/null' EXIT
    # Ready when the agent has started the workers (they use CPU).
    wait_cpu $pid 1
    for n in 0 1; do
        kill -12 $pid; wait_cpu $pid 8; kill -12 $pid
        # Written by the agent's thread after the second signal.
        written() { kill -0 $pid || fail "the server died before writing cpu.prof.$n"; [ -s "$T/cpu.prof.$n" ]; }
        wait_for "cpu.prof.$n" written
    done
    kill -TERM $pid; wait $pid
    [ ! -e "$T/cpu.prof" ] || fail "a plain cpu.prof was written in toggle mode"
    [ ! -e "$T/cpu.prof.2" ] || fail "a third profile appeared"
    for n in 0 1; do
        N=$(nsamples "$T/cpu.prof.$n")
        [ "${N:-0}" -ge 500 ] || fail "cpu.prof.$n holds ${N:-no} samples, want 2000 or so"
        echo "cpu.prof.$n: $N samples"
        check_server_split "$T/cpu.prof.$n" 3
        if command -v go >/dev/null; then
            HOME=$T GOCACHE=$T/gocache go tool pprof -top "$T/cpu.prof.$n" > "$T/go.txt" 2>/dev/null ||
                fail "go tool pprof cannot read cpu.prof.$n"
            has "$T/go.txt" " burn_b$"
        fi
    done
}
twice toggle_run
echo ok
