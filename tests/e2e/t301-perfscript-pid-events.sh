#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf script with -F +pid (pid/tid), two events in one file
# (-e cpu-clock,task-clock): one sample type per event.
. "$(dirname "$0")/lib.sh"
need_perf

perf_record -q -F 999 -g -e cpu-clock,task-clock -o "$T/perf.data" -- "$WL/shares" 1 \
    >/dev/null 2>&1 || fail "perf record failed"
perf script -i "$T/perf.data" -F +pid > "$T/x.perf" 2>/dev/null || fail "perf script failed"
has "$T/x.perf" '^shares +[0-9]+/[0-9]+ '
nc=$(grep -c '^[^[:space:]].* cpu-clock:' "$T/x.perf")
nt=$(grep -c '^[^[:space:]].* task-clock:' "$T/x.perf")
[ "$nc" -gt 300 ] && [ "$nt" -gt 300 ] || fail "too few samples: $nc cpu-clock, $nt task-clock"

# Each event is a sample type of its own; samples counts both.
for ev in cpu-clock task-clock; do
    expect_status 0 "$KILN" top --sample-type $ev "$T/x.perf"
    has "$T/out" "^Type: $ev"
    within "$(top_pct "$T/out" burn_a)" 60 6 || fail "$ev: burn_a share off"
done
expect_status 0 "$KILN" top --sample-type samples "$T/x.perf"
has "$T/out" "of $((nc + nt)) total"
expect_status 0 "$KILN" convert "$T/x.perf" --sample-type task-clock -o "$T/t.collapsed"
# Nanoseconds: each sample is ~1 ms of task-clock.
total=$(awk '{ s += $NF } END { print s }' "$T/t.collapsed")
within "$((total / nt))" 1001001 200000 || fail "task-clock total $total for $nt samples"

# The pid/tid labels survive into the written perf script.
pid=$(awk '/^shares/ { split($2, a, "/"); print a[1]; exit }' "$T/x.perf")
expect_status 0 "$KILN" convert "$T/x.perf" --sample-type task-clock -o "$T/y.perf"
has "$T/y.perf" "^shares $pid/$pid [0-9.]+: [0-9]+ task-clock: $"
echo ok
