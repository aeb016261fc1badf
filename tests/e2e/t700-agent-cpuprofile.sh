#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# LD_PRELOAD=libkiln.so with gperftools' CPUPROFILE on a multi-threaded
# server: the function split within 3 points, go tool pprof reads it,
# names of the program and libc, no frame of the agent in any stack.
. "$(dirname "$0")/lib.sh"
need_agent

# The split is statistical: run once more when it misses (twice, lib.sh;
# once, with two suites and a build beside it, burn_a had 54.4% of 2155
# samples against 60 +- 4.2); a broken agent misses both.
profile_split() {
    LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/cpu.prof CPUPROFILE_FREQUENCY=250 \
        "$WL/cpuserver" 4 8 > "$T/out.txt" || fail "cpuserver failed under the agent"
    has "$T/out.txt" "cpuserver: done"
    [ -s "$T/cpu.prof" ] || fail "no profile written at exit"
    check_server_split "$T/cpu.prof" 3
}
twice profile_split
"$KILN" convert "$T/cpu.prof" -o "$T/c.collapsed"
has "$T/c.collapsed" "worker;serve_a;burn_a "
has "$T/c.collapsed" "serve_c;burn_c;.*(qsort|msort)"
hasnt "$T/c.collapsed" "kiln|sigprof|__restore_rt|on_sigprof|libkiln|trampoline"
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -top "$T/cpu.prof" > "$T/go.txt" 2>/dev/null ||
        fail "go tool pprof cannot read the agent's profile"
    has "$T/go.txt" " burn_a$"
    has "$T/go.txt" "Type: cpu"
    HOME=$T GOCACHE=$T/gocache go tool pprof -tags "$T/cpu.prof" > "$T/tags.txt" 2>/dev/null
    has "$T/tags.txt" "thread:"
fi
# The kiln names work too, and KILN_LOG=info says which engine runs.
LD_PRELOAD=$KILN_LIB KILN_CPU=$T/k.pb.gz KILN_LOG=info "$WL/shares" 1 2> "$T/log.txt"
has "$T/log.txt" "per-thread CPU-time timers"
has "$T/log.txt" "wrote the CPU profile"
"$KILN" top "$T/k.pb.gz" > "$T/k.txt"
has "$T/k.txt" "burn_a"
echo ok
