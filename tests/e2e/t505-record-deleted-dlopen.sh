#!/usr/bin/env bash
# A binary deleted after it started, and a library dlopened mid-run, are
# both symbolized.
. "$(dirname "$0")/lib.sh"
need_record

cp "$WL/shares" "$T/victim"
( sleep 0.4; rm -f "$T/victim" ) &
expect_status 0 "$KILN" record -q -F 499 -o "$T/del.pb.gz" -- "$T/victim" 1.5
wait
[ ! -e "$T/victim" ] || fail "the binary was not deleted"
check_chains "$T/del.pb.gz"

expect_status 0 "$KILN" record -q -F 499 -o "$T/dl.pb.gz" -- "$WL/dlopener" "$WL/libplugin.so" 1
"$KILN" convert "$T/dl.pb.gz" -o "$T/dl.collapsed"
has "$T/dl.collapsed" "main;plugin_burn;plugin_inner "
has "$T/dl.collapsed" "main;host_burn "
# Deleted before kiln ever looked at it: only /proc/PID/map_files reaches it.
cp "$WL/shares" "$T/victim2"
"$T/victim2" 4 & vpid=$!
sleep 0.3
rm -f "$T/victim2"
expect_status 0 "$KILN" record -q -p $vpid --duration 1 -o "$T/del2.pb.gz"
kill $vpid; wait $vpid 2>/dev/null
check_chains "$T/del2.pb.gz"
echo ok
