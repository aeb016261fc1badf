#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln's signal handlers are harmless to the host, in each mode (CPU,
# heap trace, HTTP, all three), with the same stdout and exit status as
# bare (tests/workloads/stackedge.c, sigdlopen.c):
#  - a thread burning CPU 1 KiB above the end of its stack (the SIGPROF
#    handler used to run, with the kernel's frame, on that stack: SIGSEGV);
#  - the same with the program's own sigaltstack and SIGSEGV handler
#    (kiln's handler runs on the program's alternate stack: no fault);
#  - the program siglongjmps out of a fault taken inside kiln's handler:
#    the exit does not wait for ever for that handler to return;
#  - SIGTERM while the loader's lock is held: the fatal-signal path calls
#    no interposer and no dlsym (it hung there).
# Every case runs under `timeout`: a hang fails with status 124.
. "$(dirname "$0")/lib.sh"
need_agent
need timeout
readelf -d "$KILN_LIB" 2>/dev/null | grep -q 'FLAGS.*NOW' ||
    fail "libkiln.so is not linked with -z now (lazy binding in the SIGPROF handler)"

modes=(
    "KILN_CPU=$T/c.pb.gz KILN_CPU_HZ=999"
    "KILN_HEAP_TRACE=$T/h.trace"
    "KILN_HTTP=127.0.0.1:0"
    "KILN_CPU=$T/c.pb.gz KILN_CPU_HZ=999 KILN_HEAP_TRACE=$T/h.trace KILN_HTTP=127.0.0.1:0"
)

# run NAME MODE-ENV CMD...: bare and under the agent, bounded.
run() {
    local name=$1 envs=$2 rc=0 brc=0
    shift 2
    rm -f "$T"/c.pb.gz* "$T"/h.trace*
    timeout 120 "$@" > "$T/bare.txt" 2>/dev/null || brc=$?
    timeout 120 env LD_PRELOAD="$(agent_lib $envs)" $envs "$@" > "$T/agent.txt" 2> "$T/agent.err" || rc=$?
    [ "$rc" -ne 124 ] || fail "$name: '$*' hung under the agent"
    [ "$brc" -eq "$rc" ] || { cat "$T/agent.err" >&2; fail "$name: '$*' exited $rc under the agent, $brc without"; }
    diff -u "$T/bare.txt" "$T/agent.txt" || fail "$name: '$*' printed something else under the agent"
    case $envs in *KILN_CPU*)
        [ -s "$T/c.pb.gz" ] || fail "$name: '$*' left no CPU profile" ;;
    esac
}

i=0
for m in "${modes[@]}"; do
    i=$((i + 1))
    run "mode $i" "$m" "$WL/stackedge" edge
    run "mode $i" "$m" "$WL/stackedge" edge-alt
    has "$T/agent.txt" "edge-alt: 0 faults caught"
    if [ "$(uname -m)" = x86_64 ]; then
        run "mode $i" "$m" "$WL/stackedge" longjmp
    fi
    run "mode $i" "$m" "$WL/sigdlopen" "$WL/libstuckctor.so"
done
echo ok
