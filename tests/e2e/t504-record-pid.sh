#!/usr/bin/env bash
# kiln record -p PID --duration 2 on a running process (all its threads).
. "$(dirname "$0")/lib.sh"
need_record

"$WL/threads" 8 & pid=$!
sleep 0.3
start=$(date +%s.%N)
expect_status 0 "$KILN" record -q -p $pid --duration 2 -o "$T/p.pb.gz"
end=$(date +%s.%N)
kill $pid 2>/dev/null; wait $pid 2>/dev/null
awk -v a="$start" -v b="$end" 'BEGIN { exit !(b - a >= 1.9 && b - a < 6) }' ||
    fail "recording took $start..$end, want about 2 s"
"$KILN" top "$T/p.pb.gz" > "$T/top.txt"
has "$T/top.txt" "spin_a"
has "$T/top.txt" "spin_b"
# Two PIDs at once.
"$WL/shares" 5 & p1=$!
"$WL/threads" 5 & p2=$!
sleep 0.3
expect_status 0 "$KILN" record -q -p $p1,$p2 --duration 1 -o "$T/two.pb.gz"
kill $p1 $p2 2>/dev/null; wait 2>/dev/null
"$KILN" top -n 0 "$T/two.pb.gz" > "$T/top2.txt"
has "$T/top2.txt" "burn_a"
has "$T/top2.txt" "spin_a"
echo ok
