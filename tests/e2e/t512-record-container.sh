#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A process in another mount namespace with another root (a container):
# its mappings name files that exist only under /proc/PID/root, and kiln
# still symbolizes them.  No bare addresses at the ends of chains.
. "$(dirname "$0")/lib.sh"
need_record
[ "$(id -u)" -eq 0 ] || skip "needs root for unshare --root"
need unshare
need gcc
gcc -O1 -g -fno-omit-frame-pointer -fno-inline -static -o "$T/app" \
    "$KILN_SRC/tests/workloads/shares.c" 2>"$T/gcc.err" || skip "no static libc: $(head -1 "$T/gcc.err")"
mkdir "$T/root"
mv "$T/app" "$T/root/app"
unshare --mount --fork --root="$T/root" /app 6 & upid=$!
# The workload is unshare's child.
for _ in $(seq 50); do
    pid=$(pgrep -P $upid | head -1)
    [ -n "$pid" ] && break
    sleep 0.1
done
[ -n "$pid" ] || fail "the contained process did not start"
[ "$(readlink /proc/$pid/root)" = "$T/root" ] || fail "not in its own root"
[ ! -e /app ] || skip "/app exists on the host too"
expect_status 0 "$KILN" record -q -F 1999 -p $pid --duration 2 -o "$T/c.pb.gz"
kill $pid $upid 2>/dev/null; wait 2>/dev/null
check_shares "$T/c.pb.gz" 6
check_chains "$T/c.pb.gz"
"$KILN" top -n 0 "$T/c.pb.gz" > "$T/top.txt"
hasnt "$T/top.txt" " 0x[0-9a-f]+$"
echo ok
