#!/usr/bin/env bash
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
check() {       # check NAME EVENT
    local n=$1 e=$2 p k p2
    p=$(val "$T/$n.perf" "$e"); k=$(val "$T/$n.kiln" "$e"); p2=$(val "$T/$n.perf2" "$e")
    [ -n "$k" ] || { cat "$T/$n.kiln"; fail "$n: kiln has no $e"; }
    awk -v p="$p" -v k="$k" -v p2="$p2" 'BEGIN {
        d = k - p; if (d < 0) d = -d
        noise = p2 - p; if (noise < 0) noise = -noise
        tol = 0.10 * (p > k ? p : k); if (4 * noise + 50 > tol) tol = 4 * noise + 50
        exit !(d <= tol) }' ||
        fail "$n: $e kiln $k against perf $p (and $p2)"
    echo "$n $e: kiln $k perf $p $p2"
}
# Strict 10% (no noise allowance) where the program fixes the count.
strict() {
    local n=$1 e=$2 p k
    p=$(val "$T/$n.perf" "$e"); k=$(val "$T/$n.kiln" "$e")
    awk -v p="$p" -v k="$k" 'BEGIN { d = k - p; if (d < 0) d = -d; exit !(d <= 0.10 * p) }' ||
        fail "$n: $e kiln $k against perf $p (beyond 10%)"
}

run_all cpu cpu 0.5
run_all touch touch 1024
run_all wake wake 10000
run_all threads threads 8 0.2
for n in cpu touch wake threads; do
    for e in task-clock page-faults context-switches cpu-migrations; do
        check $n $e
    done
done
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
