#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record on a process-per-connection load (issue 22: postgres'
# backends under pgbench -C, shell loops, builds): the forkserve workload
# forks a child per request, which names itself "conn" and burns 5 ms of
# CPU in conn_work.  Every child's samples are in the profile under its
# own pid label, named (comm "conn"); and Ctrl-C (SIGINT to kiln) ends a
# recording of an endless load, which kiln then stops (SIGTERM) and
# writes (waited for, not timed: the time goes to bench/prefork.sh).
. "$(dirname "$0")/lib.sh"
need_record
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

expect_status 0 "$KILN" record -q -F 999 -o "$T/f.pb.gz" -- "$WL/forkserve" 40 5
cp "$T/out" "$T/served"
has "$T/served" "^served 40$"
go tool pprof -tags "$T/f.pb.gz" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags"
# The pid labels with samples, and the comm labels.
awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { on = 0 }' "$T/tags.txt" | sort > "$T/pids"
for pid in $(awk '$1 == "child" { print $2 }' "$T/served"); do
    grep -qx "$pid" "$T/pids" || { cat "$T/tags.txt"; fail "child $pid has no samples"; }
done
awk '/^ *comm:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { on = 0 }' "$T/tags.txt" > "$T/comms"
grep -qx conn "$T/comms" || { cat "$T/tags.txt"; fail "no comm label conn"; }
"$KILN" top -n 0 "$T/f.pb.gz" > "$T/top.txt"
has "$T/top.txt" "conn_work"

# Ctrl-C ends the recording of an endless load.
"$KILN" record -q -F 999 -o "$T/i.pb.gz" -- "$WL/forkserve" 0 5 > "$T/endless" 2> "$T/ierr" & kpid=$!
served() { [ "$(grep -c '^child ' "$T/endless" 2>/dev/null)" -ge 20 ]; }
wait_for "20 requests served under kiln record" served
kill -INT $kpid
rc=0; wait $kpid || rc=$?
[ $rc -eq 0 ] || { cat "$T/ierr"; fail "kiln record exited $rc after SIGINT"; }
has "$T/endless" "^served "
"$KILN" top -n 0 "$T/i.pb.gz" > "$T/itop.txt"
has "$T/itop.txt" "conn_work"
echo ok
