#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A tracepoint counted by kiln stat equals the known number of calls, and
# kiln record -e TRACEPOINT samples every event by default (period 1, as
# perf): 2000 getrandom calls in rand_many, 500 in rand_few.
. "$(dirname "$0")/lib.sh"
[ -e /sys/kernel/tracing/events/syscalls/sys_enter_getrandom ] ||
    [ -e /sys/kernel/debug/tracing/events/syscalls/sys_enter_getrandom ] ||
    [ "$(id -u)" -eq 0 ] || skip "tracefs is not readable here"
"$KILN" stat -e syscalls:sys_enter_getrandom -- true >/dev/null 2>"$T/probe" ||
    skip "tracepoints cannot be counted here: $(head -1 "$T/probe")"

expect_status 0 "$KILN" stat -x, -e syscalls:sys_enter_getrandom,task-clock -- "$WL/getrandom" -n
n=$(awk -F, '$3=="syscalls:sys_enter_getrandom" { print $1 }' "$T/err")
[ "$n" = 2500 ] || { cat "$T/err"; fail "counted $n getrandom calls, want 2500"; }
expect_status 0 "$KILN" stat -e syscalls:sys_enter_getrandom -- "$WL/getrandom" -n
has "$T/err" "^ +2,?500 +syscalls:sys_enter_getrandom"

# Recorded: every call is a sample (no -c needed).  The frame-pointer
# call graph keeps the records small enough for the ring at this rate.
need_record
expect_status 0 "$KILN" record -q --call-graph fp -e syscalls:sys_enter_getrandom \
    -o "$T/tp.pb.gz" -- "$WL/getrandom" -n
"$KILN" convert "$T/tp.pb.gz" -o "$T/tp.collapsed" || fail "convert"
many=$(awk '/;rand_many;/ { s += $NF } END { print s+0 }' "$T/tp.collapsed")
few=$(awk '/;rand_few;/ { s += $NF } END { print s+0 }' "$T/tp.collapsed")
within "$many" 2000 1 || { cat "$T/tp.collapsed"; fail "rand_many has $many, want 2000"; }
within "$few" 500 1 || { cat "$T/tp.collapsed"; fail "rand_few has $few, want 500"; }
# -F still chooses sampling by frequency.
expect_status 0 "$KILN" record -q --call-graph fp -F 10 -e syscalls:sys_enter_getrandom \
    -o "$T/f.pb.gz" -- "$WL/getrandom" -n
"$KILN" top --sample-type samples "$T/f.pb.gz" > "$T/f.top" || fail "top"
ns=$(awk '/^Showing nodes/ { print $(NF-1) }' "$T/f.top")
[ "${ns:-0}" -ge 1 ] && [ "$ns" -lt 500 ] || { cat "$T/f.top"; fail "-F 10 took $ns samples"; }
echo ok
