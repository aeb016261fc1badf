#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A program that forks and execs another binary: the child's samples land
# on the child's functions, the parent's on its own; the command's exit
# status becomes kiln's.
. "$(dirname "$0")/lib.sh"
need_record

expect_status 0 "$KILN" record -q -F 499 -o "$T/f.pb.gz" -- "$WL/forkexec" "$WL/shares" 1
"$KILN" convert "$T/f.pb.gz" -o "$T/f.collapsed"
has "$T/f.collapsed" "main;run;stage_a;burn_a "
has "$T/f.collapsed" "main;parent_burn "
# The child's frames never carry the parent's names and vice versa.
hasnt "$T/f.collapsed" "parent_burn;.*burn_a|burn_a;.*parent_burn"
"$KILN" top -n 0 "$T/f.pb.gz" > "$T/top.txt"
a=$(top_pct "$T/top.txt" burn_a 5); [ -n "$a" ] || fail "no burn_a in the child"

# Exit status passes through, 128+N for a signal.
expect_status 3 "$KILN" record -q -o "$T/x.pb.gz" -- sh -c 'exit 3'
expect_status 137 "$KILN" record -q -o "$T/y.pb.gz" -- sh -c 'kill -9 $$'
echo ok
