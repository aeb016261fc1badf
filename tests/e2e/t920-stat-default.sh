#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln stat -- CMD: perf stat's default events with their derived lines,
# the elapsed/user/sys times, <not supported> for what the machine lacks,
# the command's exit status as kiln's, and Ctrl-C printing the totals.
. "$(dirname "$0")/lib.sh"
"$KILN" stat -e task-clock -- true >/dev/null 2>"$T/probe" ||
    skip "kiln stat cannot count here: $(head -1 "$T/probe")"

expect_status 0 "$KILN" stat -- "$WL/statload" cpu 0.3
has "$T/err" "Performance counter stats for '.*statload cpu 0.3'"
has "$T/err" "^ +[0-9.,]+ msec task-clock +# +0\.[0-9]+ CPUs utilized"
for e in context-switches cpu-migrations page-faults; do
    has "$T/err" "^ +[0-9,]+ +$e +# +[0-9.]+ (K|M|G)?/sec"
done
for e in cycles instructions branches branch-misses; do
    grep -Eq "^ +(<not supported>|[0-9,]+) +$e( |$)" "$T/err" || { cat "$T/err"; fail "no line for $e"; }
done
has "$T/err" "^ +[0-9]+\.[0-9]{9} seconds time elapsed"
has "$T/err" "^ +0\.[0-9]{9} seconds user"
has "$T/err" "^ +[0-9]+\.[0-9]{9} seconds sys"
# The CPU-bound program: about one CPU utilized and 300 ms of task-clock.
tc=$(awk '/msec task-clock/ { gsub(",", "", $1); print $1 }' "$T/err")
within "$tc" 300 60 || fail "task-clock $tc ms for 300 ms of CPU"

# Where the machine has no hardware counters, perf says <not supported>; so does kiln.
if perf stat -e cycles -- true 2>&1 | grep -q "<not supported>"; then
    expect_status 0 "$KILN" stat -e cycles,instructions,task-clock -- true
    has "$T/err" "<not supported> +cycles"
    has "$T/err" "<not supported> +instructions"
    has "$T/err" "msec task-clock"
fi

# The exit status of the command is kiln's; so is death by a signal.
expect_status 3 "$KILN" stat -e task-clock -- "$WL/statload" exit 3
has "$T/err" "msec task-clock"
expect_status 137 "$KILN" stat -e task-clock -- sh -c 'kill -9 $$'
# A command that cannot run.
expect_status 2 "$KILN" stat -- /nonexistent/program
has "$T/err" "cannot run '/nonexistent/program'"

# Ctrl-C (SIGINT to kiln): the command is stopped and the totals so far print.
"$KILN" stat -e task-clock,page-faults -- "$WL/statload" cpu 30 >"$T/int.out" 2>"$T/int.err" &
kpid=$!
# The signal comes once the command runs statload (kiln's forked child
# shows kiln's command line until it execs) and has used CPU time.
wait_for "kiln stat to run statload" child_running $kpid "$WL/statload" >/dev/null
wait_cpu "$(child_running $kpid "$WL/statload")" 0.1
kill -INT $kpid
rc=0; wait $kpid || rc=$?
[ "$rc" -eq 130 ] || { cat "$T/int.err"; fail "exit $rc after SIGINT, want 130"; }
has "$T/int.err" "msec task-clock"
has "$T/int.err" "page-faults"
has "$T/int.err" "seconds time elapsed"
echo ok
