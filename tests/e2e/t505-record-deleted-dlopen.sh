#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A binary deleted after it started, and a library dlopened mid-run, are
# both symbolized.
#
# No wall-clock waits: the binary is deleted once it is running (its
# command line shows the exec happened), and `record -p` follows the
# process to its end rather than for a wall-clock --duration.  shares
# runs for a given amount of CPU time, so however loaded the machine,
# each recording holds about SECONDS x 499 samples, 10% of them in
# burn_c: 150 expected in 3 CPU seconds; a whole chain is missing only if
# unwinding or symbolization breaks (P(0 of 150) is e^-150).
. "$(dirname "$0")/lib.sh"
need_record

# running_as PID PATH: waits until PID has exec'ed PATH.
running_as() {
    while [ "$(readlink "/proc/$1/exe" 2>/dev/null)" != "$2" ]; do
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
    done
}

cp "$WL/shares" "$T/victim"
"$KILN" record -q -F 499 -o "$T/del.pb.gz" -- "$T/victim" 1.5 > "$T/out" 2> "$T/err" & kpid=$!
# The workload is kiln's child: wait for it to run the victim.
vpid=
while [ -z "$vpid" ]; do
    kill -0 $kpid 2>/dev/null || { cat "$T/err" >&2; fail "kiln record ended before the victim ran"; }
    for c in $(pgrep -P $kpid); do
        [ "$(readlink "/proc/$c/exe" 2>/dev/null)" = "$T/victim" ] && vpid=$c
    done
    [ -n "$vpid" ] || sleep 0.05
done
rm -f "$T/victim"
wait $kpid || { cat "$T/err" >&2; fail "kiln record failed"; }
check_chains "$T/del.pb.gz"

expect_status 0 "$KILN" record -q -F 499 -o "$T/dl.pb.gz" -- "$WL/dlopener" "$WL/libplugin.so" 1
"$KILN" convert "$T/dl.pb.gz" -o "$T/dl.collapsed"
has "$T/dl.collapsed" "main;plugin_burn;plugin_inner "
has "$T/dl.collapsed" "main;host_burn "
# Deleted before kiln ever looked at it: only /proc/PID/map_files reaches it.
cp "$WL/shares" "$T/victim2"
"$T/victim2" 3 & vpid=$!
running_as $vpid "$T/victim2" || fail "victim2 did not start"
rm -f "$T/victim2"
# Until it exits (3 s of CPU time from its start).
expect_status 0 "$KILN" record -q -F 499 -p $vpid -o "$T/del2.pb.gz"
wait $vpid 2>/dev/null
check_chains "$T/del2.pb.gz"
echo ok
