#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record -p attached while the target starts threads (issue 22): a
# thread started by a thread kiln has already opened inherits that event,
# and was counted twice when kiln's listing then opened it too (1.4-2.0x
# the real CPU).  The threadburst workload starts threads from threads
# all the time (4 chains, one every 1 ms each) while kiln attaches; once
# kiln records (its progress line, on a terminal made by script(1)), the
# 24 newest burn 100 ms of CPU each in burst_work and the program prints
# the CPU time they measured (CLOCK_THREAD_CPUTIME_ID).  burst_work's CPU
# in the profile must be within 5% of that, 10 runs of 10, and the
# threads named ("burst").
# Not under ASan: with the recorder built with ASan (several times
# slower) kiln counted 0.6-5.2% more than the program measured in one
# clean-clone CI (run 6 of 10 over 5%): while a thread's newest event
# has not yet delivered, its inherited copy's samples still count, and
# a slow recorder widens that window.  The accuracy is judged on the
# product build; the overlap is a known limit (capture/perfown.c).
# ctest-labels: serial noasan
. "$(dirname "$0")/lib.sh"
need_record
need script
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

# burst_work's cum CPU in milliseconds in profile $1.
cum_ms() {
    go tool pprof -top -unit=ms -sample_index=cpu -nodecount=1000 "$1" 2>/dev/null |
        awk '$NF == "burst_work" { v = $4; sub(/ms$/, "", v); print v; exit }'
}
recording() { tr '\r' '\n' < "$1" 2>/dev/null | grep -q '^kiln: recording'; }

runs=${RUNS:-10}
for run in $(seq "$runs"); do
    "$WL/threadburst" > "$T/m$run" & pid=$!
    wait_for "threadburst to start its chains" has_threads $pid 8
    # script(1) gives kiln a terminal, where it prints its progress line
    # once the events are enabled: the readiness sign.
    script -qfec "'$KILN' record -F 999 -p $pid -o '$T/p$run.pb.gz'" \
        "$T/tty$run" < /dev/null > /dev/null 2>&1 & kpid=$!
    wait_for "kiln record -p to record" recording "$T/tty$run"
    kill -USR1 $pid
    wait $pid || fail "threadburst failed"
    wait $kpid || { tr '\r' '\n' < "$T/tty$run"; fail "kiln record -p failed (run $run)"; }
    want=$(awk '{ print $2 }' "$T/m$run")
    got=$(cum_ms "$T/p$run.pb.gz")
    echo "run $run: the program measured ${want} ms, kiln ${got:-none} ms"
    [ -n "$got" ] || fail "no burst_work in the profile (run $run)"
    awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 * b) }' ||
        fail "run $run: burst_work ${got} ms in the profile, the program measured ${want} ms"
done
# The threads that started while kiln attached are named.
go tool pprof -tags "$T/p1.pb.gz" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags"
has "$T/tags.txt" "thread_name:"
has "$T/tags.txt" "burst"
echo ok
