#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Events other than cpu-clock: task-clock, a software event, a tracepoint
# with stacks, and a fixed period with -c.
. "$(dirname "$0")/lib.sh"
need_record

expect_status 0 "$KILN" record -q -e task-clock -F 1999 -o "$T/tc.pb.gz" -- "$WL/shares" 1.5
check_shares "$T/tc.pb.gz" 5
expect_status 0 "$KILN" record -q -e page-faults -c 1 -o "$T/pf.pb.gz" -- "$WL/demo" 0.2
"$KILN" top "$T/pf.pb.gz" > "$T/top.txt"
has "$T/top.txt" "^Type: page-faults"

if [ "$(id -u)" -eq 0 ]; then
    expect_status 0 "$KILN" record -q -e syscalls:sys_enter_getrandom -c 1 -o "$T/tp.pb.gz" -- "$WL/getrandom" 0.3
    "$KILN" convert "$T/tp.pb.gz" -o "$T/tp.collapsed"
    has "$T/tp.collapsed" "main;rand_loop;(__)?getrandom"
fi
# Hardware events: recorded where the machine has them, refused clearly
# where it does not.
rc=0
"$KILN" record -q -e cycles -o "$T/cy.pb.gz" -- "$WL/shares" 0.3 2>"$T/cy.err" || rc=$?
if [ $rc -ne 0 ]; then
    [ $rc -eq 1 ] || fail "cycles: exit $rc"
    has "$T/cy.err" "not supported on this machine"
fi
echo ok
