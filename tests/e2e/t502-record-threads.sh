#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Both threads of a two-thread program are sampled and labelled.
. "$(dirname "$0")/lib.sh"
need_record
need go
export HOME=$T GOCACHE=$T/gocache

expect_status 0 "$KILN" record -q -F 499 -o "$T/t.pb.gz" -- "$WL/threads" 1
"$KILN" top "$T/t.pb.gz" > "$T/top.txt"
a=$(top_pct "$T/top.txt" spin_a); b=$(top_pct "$T/top.txt" spin_b)
within "${a:-0}" 50 6 || { cat "$T/top.txt"; fail "spin_a at ${a:-none}%"; }
within "${b:-0}" 50 6 || { cat "$T/top.txt"; fail "spin_b at ${b:-none}%"; }
go tool pprof -tags "$T/t.pb.gz" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags"
has "$T/tags.txt" "thread_name:"
has "$T/tags.txt" "worker-a"
has "$T/tags.txt" "worker-b"
has "$T/tags.txt" "pid:"
# Two distinct thread ids, each about half.
[ "$(awk '/^ *thread:/ {on=1; next} on && /%\)/ {n++} on && /^$/ {on=0} END {print n}' "$T/tags.txt")" -ge 2 ] ||
    { cat "$T/tags.txt"; fail "fewer than two thread labels"; }
# --focus on a thread's function keeps only its samples.
"$KILN" top --focus '^spin_a$' "$T/t.pb.gz" > "$T/fa.txt"
hasnt "$T/fa.txt" "spin_b"
echo ok
