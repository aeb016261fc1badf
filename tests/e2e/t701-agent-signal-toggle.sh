#!/usr/bin/env bash
# ctest-labels: noasan serial
# CPUPROFILESIGNAL=12: each pair of signals starts and stops a profile,
# written as PATH.0, PATH.1; both have the right split.
. "$(dirname "$0")/lib.sh"
need_agent

LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/cpu.prof CPUPROFILESIGNAL=12 CPUPROFILE_FREQUENCY=250 \
    "$WL/cpuserver" 4 > "$T/out.txt" & pid=$!
sleep 0.5
for n in 0 1; do
    kill -12 $pid; sleep 6; kill -12 $pid
    for _ in $(seq 50); do [ -s "$T/cpu.prof.$n" ] && break; sleep 0.1; done
    [ -s "$T/cpu.prof.$n" ] || fail "no cpu.prof.$n after the second signal"
done
kill -TERM $pid; wait $pid
[ ! -e "$T/cpu.prof" ] || fail "a plain cpu.prof was written in toggle mode"
[ ! -e "$T/cpu.prof.2" ] || fail "a third profile appeared"
for n in 0 1; do
    check_server_split "$T/cpu.prof.$n" 3
    if command -v go >/dev/null; then
        HOME=$T GOCACHE=$T/gocache go tool pprof -top "$T/cpu.prof.$n" > "$T/go.txt" 2>/dev/null ||
            fail "go tool pprof cannot read cpu.prof.$n"
        has "$T/go.txt" " burn_b$"
    fi
done
echo ok
