#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record --call-graph dwarf on a program built without frame pointers:
# the split within 3 points and whole chains through DWARF CFI unwinding;
# auto mode falls back to DWARF by itself.
. "$(dirname "$0")/lib.sh"
need_record

for cg in dwarf auto dwarf,16384; do
    expect_status 0 "$KILN" record -q -F 1999 --call-graph $cg -o "$T/p.pb.gz" -- "$WL/shares-nofp" 2
    check_shares "$T/p.pb.gz" 3
    check_chains "$T/p.pb.gz"
done
# Frame pointers alone cannot walk this binary: the chain is broken.
expect_status 0 "$KILN" record -q -F 999 --call-graph fp -o "$T/fp.pb.gz" -- "$WL/shares-nofp" 1
"$KILN" convert "$T/fp.pb.gz" -o "$T/fp.collapsed"
hasnt "$T/fp.collapsed" "main;run;stage_a;burn_a "
echo ok
