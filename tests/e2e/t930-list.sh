#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln list: events grouped as perf list groups them, only those that can
# be counted here unless --all, which marks the others; a filter; and the
# tracepoints of tracefs (sched:sched_switch).
. "$(dirname "$0")/lib.sh"

expect_status 0 "$KILN" list sw
has "$T/out" "^  task-clock +\[Software event\]"
has "$T/out" "^  context-switches OR cs +\[Software event\]"
hasnt "$T/out" "Tracepoint event"

expect_status 0 "$KILN" list
has "$T/out" "^  page-faults OR faults +\[Software event\]"
# Only what opens here is listed: every line kiln list shows, kiln stat counts.
if perf stat -e cycles -- true 2>&1 | grep -q "<not supported>"; then
    hasnt "$T/out" "\[Hardware event\]"
    hasnt "$T/out" "\[Hardware cache event\]"
    has "$T/out" "known events cannot be counted here: 'kiln list --all' shows them"
    expect_status 0 "$KILN" list --all hw
    has "$T/out" "^  cpu-cycles OR cycles +\[Hardware event\]  \(not supported here\)"
    expect_status 0 "$KILN" list --all cache
    has "$T/out" "^  L1-dcache-load-misses +\[Hardware cache event\]  \(not supported here\)"
    has "$T/out" "^  dTLB-load-misses +\[Hardware cache event\]  \(not supported here\)"
    "$KILN" stat -e cycles -- true 2>"$T/c.err" || true
    has "$T/c.err" "<not supported> +cycles"
fi
# Every software event listed counts.
"$KILN" list sw | awk '/\[Software event\]/ { print $1 }' > "$T/sw"
[ -s "$T/sw" ] || fail "no software events listed"
ev=$(paste -sd, "$T/sw")
expect_status 0 "$KILN" stat -x, -e "$ev" -- true
hasnt "$T/err" "<not supported>"

if [ -d /sys/kernel/tracing/events/sched ] || [ -d /sys/kernel/debug/tracing/events/sched ]; then
    expect_status 0 "$KILN" list sched
    has "$T/out" "^  sched:sched_switch +\[Tracepoint event\]"
    hasnt "$T/out" "task-clock"
    expect_status 0 "$KILN" list 'syscalls:*_getrandom'
    has "$T/out" "^  syscalls:sys_enter_getrandom +\[Tracepoint event\]"
    has "$T/out" "^  syscalls:sys_exit_getrandom +\[Tracepoint event\]"
    [ "$(grep -c Tracepoint "$T/out")" -eq 2 ] || fail "the glob matched more"
fi
# PMU events from sysfs, where the machine has any.
for d in /sys/bus/event_source/devices/*/events/*; do
    [ -e "$d" ] || continue
    case "$d" in *.*) continue ;; esac
    pmu=$(basename "$(dirname "$(dirname "$d")")"); e=$(basename "$d")
    expect_status 0 "$KILN" list --all pmu
    has "$T/out" "^  $pmu/$e/ +\[Kernel PMU event\]"
    break
done
expect_status 1 "$KILN" list no-such-event-anywhere
has "$T/err" "no event matches 'no-such-event-anywhere'"
echo ok
