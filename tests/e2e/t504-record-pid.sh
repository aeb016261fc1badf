#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record -p PID --duration 2 on a running process (all its threads).
# No upper bound on wall-clock time (a loaded machine stretches it): that
# --duration ended the recording shows in the process still running after
# it (it burns 60 s of CPU per thread); it cannot end sooner than 2 s.
. "$(dirname "$0")/lib.sh"
need_record

# Waits until process $1 runs $2 threads.
threads_up() {
    up() { kill -0 "$1" 2>/dev/null || fail "process $1 ended"; has_threads "$1" "$2"; }
    wait_for "process $1 to run $2 threads" up "$1" "$2"
}

"$WL/threads" 60 & pid=$!
threads_up $pid 3
start=$(date +%s.%N)
expect_status 0 "$KILN" record -q -p $pid --duration 2 -o "$T/p.pb.gz"
end=$(date +%s.%N)
kill -0 $pid 2>/dev/null || fail "the process ended first: --duration did not stop the recording"
kill $pid 2>/dev/null; wait $pid 2>/dev/null
awk -v a="$start" -v b="$end" 'BEGIN { exit !(b - a >= 1.9) }' ||
    fail "recording took $start..$end, want 2 s at least"
"$KILN" top "$T/p.pb.gz" > "$T/top.txt"
has "$T/top.txt" "spin_a"
has "$T/top.txt" "spin_b"
# Two PIDs at once, to their end (2 s of CPU time each: hundreds of
# samples in each, however loaded the machine).
"$WL/shares" 2 & p1=$!
"$WL/threads" 2 & p2=$!
threads_up $p2 3
wait_for "shares to start" runs $p1 "$WL/shares"
expect_status 0 "$KILN" record -q -p $p1,$p2 -o "$T/two.pb.gz"
wait
"$KILN" top -n 0 "$T/two.pb.gz" > "$T/top2.txt"
has "$T/top2.txt" "burn_a"
has "$T/top2.txt" "spin_a"
# -t TID: one thread of a process, not its sibling.
"$WL/threads" 8 & pid=$!
worker_a() {
    tid=$(grep -l '^worker-a$' /proc/$pid/task/*/comm 2>/dev/null | head -1 | cut -d/ -f5)
    [ -n "$tid" ]
}
wait_for "worker-a to start" worker_a
expect_status 0 "$KILN" record -q -t $tid --duration 1 -o "$T/t.pb.gz"
kill $pid 2>/dev/null; wait $pid 2>/dev/null
"$KILN" top -n 0 "$T/t.pb.gz" > "$T/topt.txt"
has "$T/topt.txt" "spin_a"
hasnt "$T/topt.txt" "spin_b"
expect_status 2 "$KILN" record -q -t 4194000 --duration 1
has "$T/err" "no thread with TID 4194000"
echo ok
