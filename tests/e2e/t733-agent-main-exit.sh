#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program whose main thread ends with pthread_exit() ends when its last
# thread does, under the agent as bare: kiln's own threads (the
# collector, the HTTP server, the heap writer) keep no process alive.  In
# every mode (CPU, wall, KILN_HTTP, heap trace, heap profile) and both
# ways the worker ends (return, pthread_exit): exit status 0, the same
# stdout, and the profile written with the worker's function.  (Before:
# the process lived on, with its main thread a zombie and SIGTERM pending
# for good.)  `timeout` only guards against a hang.
. "$(dirname "$0")/lib.sh"
need_agent
need timeout

# run NAME HOW ENV...: the workload under the agent with ENV.
run() {
    local name=$1 how=$2 rc=0
    shift 2
    timeout -s KILL 120 env LD_PRELOAD="$(agent_lib "$@")" "$@" \
        "$WL/mainexit" "$how" 0.3 > "$T/$name.out" 2> "$T/$name.err" || rc=$?
    [ "$rc" -ne 137 ] || fail "$name ($how): the process did not end (killed after 120 s)"
    [ "$rc" -eq 0 ] || { cat "$T/$name.err"; fail "$name ($how): exit status $rc"; }
    diff -u "$T/bare.out" "$T/$name.out" || fail "$name ($how): stdout differs"
}
"$WL/mainexit" return 0.1 > "$T/bare.out" || fail "the workload fails bare"
for how in return exit; do
    run cpu $how KILN_CPU="$T/cpu.$how.pb.gz"
    "$KILN" top "$T/cpu.$how.pb.gz" > "$T/cpu.top" || fail "kiln top of the CPU profile"
    has "$T/cpu.top" " burn_worker$"
    if command -v go >/dev/null; then
        # The command line, read once the main thread is a zombie.
        HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/cpu.$how.pb.gz" > "$T/raw" 2>&1 ||
            fail "go tool pprof cannot read the profile"
        has "$T/raw" "mainexit $how 0.3"
    fi
    run wall $how KILN_CPU="$T/wall.$how.pb.gz" KILN_CPU_MODE=wall
    "$KILN" top "$T/wall.$how.pb.gz" > "$T/wall.top" || fail "kiln top of the wall profile"
    has "$T/wall.top" " burn_worker$"
    run http $how KILN_HTTP=127.0.0.1:0
    run trace $how KILN_HEAP_TRACE="$T/trace.$how.zst"
    "$KILN" top "$T/trace.$how.zst" > "$T/trace.top" 2>&1 || { cat "$T/trace.top"; fail "kiln top of the heap trace"; }
    run heap $how HEAPPROFILE="$T/hp.$how"
    ls "$T"/hp.$how.*.heap > /dev/null 2>&1 || fail "no heap profile written ($how)"
done
echo ok
