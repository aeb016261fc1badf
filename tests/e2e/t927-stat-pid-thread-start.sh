#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln stat -p while the target starts threads from threads (issue 22):
# perf stat -p lists the threads once and counts each with what it starts
# from then on, so a thread started by one not yet counted is never
# counted, nor anything it starts (perf stat and kiln before: 0.1-100% of
# the threadburst workload's CPU); listing again would count a thread
# that inherited counters twice.  kiln follows the threads with a dummy
# event whose FORK records say which ones inherited (session/follow.c).
# threadburst's 24 newest threads burn 100 ms of CPU each after SIGUSR1,
# sent once kiln counts (its first -I interval): the task-clock kiln
# counts must hold those 2400 ms and at most the CPU the whole process
# used after kiln was started (plus 2% and a clock tick), 10 runs of 10.
# A chain missed or counted twice is a quarter of it.  The lower margin
# is 10%: on a machine that switches tasks all the time (a process
# spawn loop beside it), task-clock counters read while the threads
# wake (here: SIGUSR1 right after an interval's read) end each thread
# 2-7% short of what the thread's own clock measured; without those
# reads, or without the spawn loop, kiln's total is within 0.5%
# (session 16; perf stat -p -I loses more, its last interval too).
# A thread started while its starter's events were being opened can get
# the thread-following event without the counters, and so does every
# thread it starts: a whole chain went uncounted about one run in fifty
# (sessions 16-22, 1839-1866 of 2400 ms).  kiln checks each such
# thread's records against a second following event opened after the
# counters and reopens the family (session/stat-run.c reopen()).  The
# race is made to happen in 5 more runs: KILN_FAULT_FOLLOW_GAP_US holds
# each open for a millisecond between the following event and the
# counters (without the check: 2 runs in 3 lost one to three chains);
# the last counts three events, task-clock opened last.
# ctest-labels: serial
. "$(dirname "$0")/lib.sh"
need_stat() { "$KILN" stat -e task-clock -- true > /dev/null 2> "$T/probe" ||
    skip "cannot count here: $(head -1 "$T/probe")"; }
need_stat
tick_ms=$((1000 / $(getconf CLK_TCK)))
counting() { [ -s "$1" ]; }

runs=${RUNS:-10}
# A failed run must not leave threadburst starting threads for good (it
# ends only at SIGUSR1): it would load every test after this one.
tb=
trap 'kill $tb 2>/dev/null; rm -rf "$T"' EXIT
# one_run NAME [ENV=VALUE...]: threadburst counted by kiln stat -p.
one_run() {
    local run=$1 pid kpid before want total got
    shift
    "$WL/threadburst" ${CHAINS:-4} > "$T/m$run" & pid=$!
    tb=$pid
    wait_for "threadburst to start its chains" has_threads $pid 8
    # The process's CPU so far (user + system, in clock ticks).
    before=$(awk -v t="$tick_ms" '{ sub(/^.*\) /, ""); print ($12 + $13) * t }' /proc/$pid/stat)
    env "$@" "$KILN" stat -e "$events" -p $pid -I 100 -x , -o "$T/s$run" 2> "$T/e$run" & kpid=$!
    wait_for "kiln stat -p to count" counting "$T/s$run"
    kill -USR1 $pid
    wait $pid || fail "threadburst failed"
    wait $kpid || { cat "$T/e$run"; fail "kiln stat -p failed (run $run)"; }
    want=$(awk '{ print $2 }' "$T/m$run")
    total=$(awk -v b="$before" '{ print $6 - b }' "$T/m$run")
    got=$(awk -F, '$4 == "task-clock" { s += $2 } END { print s + 0 }' "$T/s$run")
    echo "run $run: burst threads ${want} ms, process after the start <= ${total} ms, kiln ${got} ms"
    awk -v g="$got" -v w="$want" -v t="$total" -v k="$tick_ms" \
        'BEGIN { exit !(g >= 0.90 * w && g <= 1.02 * t + k) }' ||
        fail "run $run: kiln stat counted ${got} ms, want at least ${want} less 10% and at most ${total} ms"
}
events=task-clock
for run in $(seq "$runs"); do
    one_run "$run"
done
for run in $(seq ${FAULT_RUNS:-5}); do
    # The last with three counters: a thread may get some of them.
    [ "$run" = "${FAULT_RUNS:-5}" ] && events=context-switches,page-faults,task-clock
    one_run "gap$run" KILN_FAULT_FOLLOW_GAP_US=1000
done
echo ok
