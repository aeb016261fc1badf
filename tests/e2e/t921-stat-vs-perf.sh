#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# kiln stat against perf stat on the same programs: task-clock, page-faults,
# context-switches and cpu-migrations agree within 10%.  Counts that the
# machine's load drives (involuntary switches and migrations of CPU-bound
# programs, the kernel time of 262,144 page faults while other jobs share
# the memory bus) differ between two perf runs too: for those the margin is
# the larger of 10% and four times perf's own run-to-run difference (+50:
# a CPU-bound program's involuntary switches follow whatever else runs,
# 33 and 36 under perf and 78 under kiln in one CI run; the test runs
# alone, and the counts the programs fix are held to a strict 10% below).
# (Seen on a load of 25 on 2 CPUs: touch task-clock kiln 5756 ms, perf
# 6998 and 6635 ms.)
. "$(dirname "$0")/lib.sh"
need perf
perf stat -e task-clock -- true >/dev/null 2>&1 || skip "perf stat is not allowed here"
EV=task-clock,page-faults,context-switches,cpu-migrations

# value of event $2 in perf/kiln CSV file $1
val() { awk -F, -v e="$2" '$3==e { print $1 }' "$1"; }
run_all() {     # run_all NAME ARGS...
    local n=$1; shift
    perf stat -x, -e $EV -o "$T/$n.perf" -- "$WL/statload" "$@" >/dev/null || fail "perf stat $*"
    "$KILN" stat -x, -e $EV -o "$T/$n.kiln" -- "$WL/statload" "$@" >/dev/null || fail "kiln stat $*"
    perf stat -x, -e $EV -o "$T/$n.perf2" -- "$WL/statload" "$@" >/dev/null || fail "perf stat $*"
}
agrees() {      # agrees NAME EVENT: kiln's count within the margin of perf's
    local n=$1 e=$2 p k p2
    p=$(val "$T/$n.perf" "$e"); k=$(val "$T/$n.kiln" "$e"); p2=$(val "$T/$n.perf2" "$e")
    [ -n "$k" ] || { cat "$T/$n.kiln"; fail "$n: kiln has no $e"; }
    echo "$n $e: kiln $k perf $p $p2"
    awk -v p="$p" -v k="$k" -v p2="$p2" 'BEGIN {
        d = k - p; if (d < 0) d = -d
        noise = p2 - p; if (noise < 0) noise = -noise
        tol = 0.10 * (p > k ? p : k); if (4 * noise + 50 > tol) tol = 4 * noise + 50
        exit !(d <= tol) }'
}
# The load moves a count in one run of the three only now and then (touch's
# task-clock, nearly all of it the kernel zeroing 1 GiB: 430 ms in most
# runs, once 2,178 ms under kiln and another time 1,031 ms under perf while
# the runs either side took 430): a workload whose counts disagree is run
# again, up to three times; a real difference disagrees every time.
compare() {     # compare NAME ARGS...
    local n=$1 try e ok
    for try in 1 2 3; do
        run_all "$@"
        ok=1
        for e in task-clock page-faults context-switches cpu-migrations; do
            agrees "$n" "$e" || { ok=0; echo "  (try $try: $e disagrees)"; }
        done
        [ $ok = 1 ] && return 0
    done
    fail "$n: kiln and perf disagree in three runs out of three"
}
# Strict 10% (no noise allowance) where the program fixes the count.
strict() {
    local n=$1 e=$2 p k
    p=$(val "$T/$n.perf" "$e"); k=$(val "$T/$n.kiln" "$e")
    awk -v p="$p" -v k="$k" 'BEGIN { d = k - p; if (d < 0) d = -d; exit !(d <= 0.10 * p) }' ||
        fail "$n: $e kiln $k against perf $p (beyond 10%)"
}

compare cpu cpu 0.5
compare touch touch 1024
compare wake wake 10000
compare threads threads 8 0.2
strict cpu task-clock
strict threads task-clock
strict touch page-faults
strict wake context-switches
# What the programs do, counted: 262,144 faults for 1 GiB of 4 KiB pages,
# 10,000 sleeps, 8 x 200 ms of CPU.  A sleep switches out unless its 50 us
# timer fires before the sleeper reaches schedule() (it was preempted in
# between, on a loaded machine): at least 95% of them switch.
awk -v k="$(val "$T/touch.kiln" page-faults)" 'BEGIN { exit !(k >= 262144) }' || fail "too few page faults"
k=$(val "$T/wake.kiln" context-switches)
awk -v k="$k" 'BEGIN { exit !(k >= 9500) }' || fail "too few context switches: $k for 10,000 sleeps"
awk -v k="$(val "$T/threads.kiln" task-clock)" 'BEGIN { exit !(k >= 1550) }' || fail "threads: task-clock below 8 x 200 ms"
echo ok
