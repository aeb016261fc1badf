#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record on a program built with frame pointers: the 60/30/10 split
# within 3 points and every chain whole down to main (the caller of the
# frameless leaf recovered), in fp and auto modes.
. "$(dirname "$0")/lib.sh"
need_record

for cg in fp auto; do
    expect_status 0 "$KILN" record -q -F 1999 --call-graph $cg -o "$T/$cg.pb.gz" -- "$WL/shares" 2
    check_shares "$T/$cg.pb.gz" 3
    check_chains "$T/$cg.pb.gz"
done
echo ok
