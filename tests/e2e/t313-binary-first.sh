#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pprof's `pprof BINARY PROFILE` form (issue 22 item 6): a program given
# before the profile names the addresses of the profile's main mapping,
# whatever path the profile names (here the binary was moved after the
# recording, and the recording kept only addresses).  top, flame,
# callgraph and convert take it; a binary with another build ID is
# refused; a binary alone is told how to be used.
. "$(dirname "$0")/lib.sh"
need_record

mkdir -p "$T/bin" "$T/moved"
cp "$WL/shares" "$T/bin/shares"
KILN_NO_LOCAL_SYMBOLS=1 "$KILN" record -q -o "$T/raw.pb.gz" -- "$T/bin/shares" 1 ||
    fail "kiln record failed"
"$KILN" top "$T/raw.pb.gz" > "$T/raw.txt"
hasnt "$T/raw.txt" "burn_a"
mv "$T/bin/shares" "$T/moved/prog"

"$KILN" top "$T/moved/prog" "$T/raw.pb.gz" > "$T/top.txt" || fail "kiln top BINARY PROFILE failed"
has "$T/top.txt" " burn_a$"
has "$T/top.txt" " burn_b$"
a=$(top_pct "$T/top.txt" burn_a)
within "$a" 60 12 || fail "burn_a has $a%, not about 60%"

"$KILN" flame "$T/moved/prog" "$T/raw.pb.gz" -o "$T/f.svg" || fail "kiln flame BINARY PROFILE failed"
has "$T/f.svg" "burn_a"
[ ! -e "$T/moved/prog.svg" ] || fail "the output was named after the binary"
"$KILN" convert "$T/moved/prog" "$T/raw.pb.gz" -o "$T/named.collapsed" || fail "kiln convert failed"
has "$T/named.collapsed" "main;.*burn_a [0-9]+$"
"$KILN" callgraph "$T/moved/prog" "$T/raw.pb.gz" -o "$T/g.dot" || fail "kiln callgraph failed"
has "$T/g.dot" "burn_a"

# Another program: refused, both build IDs said.
expect_status 2 "$KILN" top "$WL/cpuserver" "$T/raw.pb.gz"
has "$T/err" "is not the program the profile was taken from"
has "$T/err" "build ID [0-9a-f]+"
# A program alone: not a profile, and how to use it.
expect_status 2 "$KILN" top "$T/moved/prog"
has "$T/err" "is an ELF file .* give it before the profile"
echo ok
