#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# As an unprivileged user: profiling one's own command works (user space
# only); -p on root's process fails with a clear message and exit 1.
. "$(dirname "$0")/lib.sh"
need_record
[ "$(id -u)" -eq 0 ] || skip "needs root to switch to nobody"
need setpriv
[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ] ||
    skip "perf_event_paranoid is above 2: unprivileged users cannot sample"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
chmod 777 "$T"
cp "$WL/shares" "$T/shares"; chmod 755 "$T/shares"

expect_status 0 as_nobody "$KILN" record -F 1999 -o "$T/own.pb.gz" -- "$T/shares" 1.5
check_shares "$T/own.pb.gz" 5
# User space only at perf_event_paranoid 2: the summary says so.
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
    has "$T/err" "time spent in the kernel is not counted"
fi

sleep 30 & rootpid=$!
expect_status 1 as_nobody "$KILN" record -q -p $rootpid --duration 1 -o "$T/root.pb.gz"
kill $rootpid
has "$T/err" "perf_event_open was refused"
has "$T/err" "fix: run as root"
# Not the setting already in force (2 allows one's own processes only).
hasnt "$T/err" "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)'"
[ ! -e "$T/root.pb.gz" ] || fail "a profile was written"
# Root (here root of a user namespace) is not told to run as root.
if unshare --user --map-root-user true 2>/dev/null; then
    sleep 30 & other=$!
    expect_status 1 unshare --user --map-root-user "$KILN" record -q -p $other --duration 1 -o "$T/ns.pb.gz"
    kill $other
    has "$T/err" "perf_event_open was refused"
    hasnt "$T/err" "run as root"
fi
echo ok
