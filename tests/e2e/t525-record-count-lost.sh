#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A counting event's burst while kiln (its ring reader included) is
# stopped: the workload waits for a file, kiln gets SIGSTOP, the file
# appears, the 2,500 getrandom calls run and the workload exits, then
# kiln gets SIGCONT.  With the defaults every record fits the rings
# (exactly 2000 and 500); with 32 KiB stack copies in 4 MiB rings
# (--call-graph dwarf -m 1024) records are lost, deterministically: then
# the event's own count (2500) is reported beside the samples, the lost
# events are added to the recorded stacks so that the event's values add
# up to the count, samples/count keeps the records, and a warning says
# that the shares are estimates (with -q too).
. "$(dirname "$0")/lib.sh"
need_record
[ "$(id -u)" -eq 0 ] || skip "tracepoint samples need root here"

kpid=
cleanup() {
    [ -n "$kpid" ] && kill -CONT "$kpid" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
# zombie PID: the process has exited (its parent, kiln, is stopped).
zombie() { grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
# burst NAME ARGS...: kiln record ARGS on getrandom -n, stopped while the
# burst runs; stderr in $T/NAME.err, the profile in $T/NAME.pb.gz.
burst() {
    local name=$1 c rc=0
    shift
    rm -f "$T/go"
    "$KILN" record "$@" -e syscalls:sys_enter_getrandom -o "$T/$name.pb.gz" \
        -- "$WL/getrandom" -n "$T/go" 2>"$T/$name.err" &
    kpid=$!
    wait_for "the workload to start" child_running "$kpid" "$WL/getrandom" >/dev/null
    c=$(child_running "$kpid" "$WL/getrandom")
    kill -STOP "$kpid"
    touch "$T/go"
    wait_for "the burst to end" zombie "$c"
    kill -CONT "$kpid"
    wait "$kpid" || rc=$?
    kpid=
    [ "$rc" -eq 0 ] || { cat "$T/$name.err" >&2; fail "$name: kiln exited $rc"; }
}
cum() { awk -v f="$2" '$NF==f { print $4; exit }' "$1"; }
# total FILE TYPE: the sum of the sample type in kiln top's header.
total() { "$KILN" top --sample-type "$2" "$1" | awk '/^Showing nodes accounting for/ { sub(",", "", $5); print $5; exit }'; }

burst whole
has "$T/whole.err" "2500 samples, 0 lost, the event counted 2500 times"
"$KILN" top -n 100 "$T/whole.pb.gz" > "$T/top.txt"
[ "$(cum "$T/top.txt" rand_many)" = 2000 ] && [ "$(cum "$T/top.txt" rand_few)" = 500 ] ||
    { cat "$T/top.txt" >&2; fail "not exactly 2000 and 500 with the reader stopped"; }

burst lost --call-graph dwarf -m 1024
has "$T/lost.err" "the event counted 2500 times"
has "$T/lost.err" "warning: the event occurred 2500 times \(its own count\) but [0-9]+ were recorded"
has "$T/lost.err" "shares are estimates"
has "$T/lost.err" "use larger rings \(-m 2048\)"
samples=$(sed -n 's/.*: \([0-9]*\) samples, [0-9]* lost.*/\1/p' "$T/lost.err")
[ -n "$samples" ] && [ "$samples" -gt 0 ] && [ "$samples" -lt 2500 ] ||
    fail "no loss forced ($samples samples)"
[ "$(total "$T/lost.pb.gz" syscalls:sys_enter_getrandom)" = 2500 ] ||
    fail "the event's values do not add up to its count"
[ "$(total "$T/lost.pb.gz" samples)" = "$samples" ] ||
    fail "samples/count is not the $samples records"
gunzip -c "$T/lost.pb.gz" | grep -aq "event count: 2500 (the kernel's), $((2500 - samples)) of them without a record" ||
    fail "the profile's comment lacks the count"

# -q keeps the warning.
burst quiet -q --call-graph dwarf -m 1024
has "$T/quiet.err" "warning: the event occurred 2500 times"
hasnt "$T/quiet.err" "wrote"
echo ok
