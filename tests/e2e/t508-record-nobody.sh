#!/usr/bin/env bash
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

expect_status 0 as_nobody "$KILN" record -q -F 1999 -o "$T/own.pb.gz" -- "$T/shares" 1.5
check_shares "$T/own.pb.gz" 5

sleep 30 & rootpid=$!
expect_status 1 as_nobody "$KILN" record -q -p $rootpid --duration 1 -o "$T/root.pb.gz"
kill $rootpid
has "$T/err" "perf_event_open was refused"
has "$T/err" "fix: run as root"
[ ! -e "$T/root.pb.gz" ] || fail "a profile was written"
echo ok
