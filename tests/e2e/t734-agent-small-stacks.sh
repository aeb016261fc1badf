#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Threads on small stacks, sampled at 999 Hz in CPU and wall modes.  A
# thread that sets its own 4 KiB or 2 KiB alternate signal stack is not
# signalled while it has it (the kernel's frame and the handler would run
# over it into the program's heap, or the kernel kills the process): the
# memory around the stack stays whole, the program ends as bare, and the
# profile says what it missed; a signal already sent when the stack is
# set is taken off the thread's queue, not delivered on it.  Threads with 16 KiB thread stacks beside a
# CPU hog run the handler on a stack of kiln's, given at their start.
. "$(dirname "$0")/lib.sh"
need_agent

# run NAME ARGS... (ENV in $RUN_ENV): status 0 and "done", as bare.
run() {
    local name=$1 rc=0
    shift
    # shellcheck disable=SC2086
    env LD_PRELOAD="$KILN_LIB" KILN_LOG=info CPUPROFILE_FREQUENCY=999 $RUN_ENV \
        "$WL/smallstacks" "$@" > "$T/$name.out" 2> "$T/$name.err" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/$name.out" "$T/$name.err"; fail "$name: exit status $rc"; }
    has "$T/$name.out" "^smallstacks: done$"
}
for size in 4096 2048; do
    "$WL/smallstacks" alt $size > "$T/bare.out" || fail "bare run with $size-byte stacks"
    for mode in cpu wall; do
        RUN_ENV="CPUPROFILE=$T/$mode.$size.pb.gz KILN_CPU_MODE=$mode" run "$mode-alt-$size" alt $size
        has "$T/$mode-alt-$size.err" "set its own alternate signal stack, too small"
        if command -v go >/dev/null; then
            HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/$mode.$size.pb.gz" > "$T/raw" 2>&1 ||
                fail "go tool pprof cannot read the profile"
            has "$T/raw" "not sampled: 4 thread"
        fi
    done
done
# 400 threads that end on their own 2 KiB stacks: a thread's slot is
# freed at its end while /proc still lists it, and the wall ticker once
# took a fresh slot for it (no small-stack mark) and signalled it -- the
# kernel's frame did not fit (SIGSEGV, 19 runs in 20).
for mode in cpu wall; do
    RUN_ENV="CPUPROFILE=$T/$mode.churn.pb.gz KILN_CPU_MODE=$mode" run "$mode-churn" churn 2048
done
# A wall tick pending (SIGPROF blocked) when the 2 KiB stack is set, then
# unblocked: taken off the queue, not delivered on that stack (SIGSEGV in
# every run before).
RUN_ENV="CPUPROFILE=$T/pending.pb.gz KILN_CPU_MODE=wall" run wall-pending pending 2048
for mode in cpu wall; do
    RUN_ENV="CPUPROFILE=$T/$mode.stack.pb.gz KILN_CPU_MODE=$mode" run "$mode-stack" stack 16384
    "$KILN" top "$T/$mode.stack.pb.gz" > "$T/$mode.top" || fail "kiln top"
    has "$T/$mode.top" " burn_hog$"
done
has "$T/wall.top" " nap_small_stack$"
# A thread that blocks SIGPROF takes no sample: the profile says so.
RUN_ENV="CPUPROFILE=$T/blocked.pb.gz" run blocked blocked 0
has "$T/blocked.err" "1 thread\(s\) blocked SIGPROF when the profile ended"
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/blocked.pb.gz" > "$T/raw" 2>&1 ||
        fail "go tool pprof cannot read the profile"
    has "$T/raw" "blocked SIGPROF when the profile ended"
fi
echo ok
