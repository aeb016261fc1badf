#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# SIGTERM and a fatal signal still write the profile, and the program
# still dies of its signal; a forked child does not write.
. "$(dirname "$0")/lib.sh"
need_agent

for sig in TERM SEGV; do
    LD_PRELOAD=$KILN_LIB KILN_CPU=$T/$sig.pb.gz KILN_CPU_HZ=250 "$WL/shares" 30 & pid=$!
    # The signal comes once the agent handles it and profiles (SIGPROF),
    # and the program has then run 0.5 s of CPU time: about 125 samples.
    wait_for "the agent's SIG$sig handler" handles_signal $pid $sig
    wait_for "the agent's SIGPROF handler" handles_signal $pid PROF
    wait_cpu $pid 0.5
    kill -$sig $pid
    rc=0; wait $pid || rc=$?
    want=$((128 + $(kill -l $sig)))
    [ $rc -eq $want ] || fail "exit $rc after SIG$sig, want $want"
    [ -s "$T/$sig.pb.gz" ] || fail "no profile after SIG$sig"
    "$KILN" top "$T/$sig.pb.gz" > "$T/top.txt"
    has "$T/top.txt" "burn_a"
done
echo ok
