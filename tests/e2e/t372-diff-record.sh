#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln diff end to end on real recordings: the diffcost workload recorded
# with kiln record, twice as it is (the base and an unchanged "new"
# version) and once with cost_c twice as slow (its share 25% -> 40%).
# With --fail-on 5%: the unchanged pair passes (exit 0), the slower one
# fails (exit 1) naming cost_c, and no other function's flat share.
. "$(dirname "$0")/lib.sh"
need_record

rec() {    # rec OUT C_COST
    expect_status 0 "$KILN" record -q -F 999 -o "$T/$1" -- "$WL/diffcost" 1.5 "$2"
}
rec base.pb.gz 1
rec slow.pb.gz 2

unchanged() {
    rec same.pb.gz 1
    expect_status 0 "$KILN" diff --no-svg --fail-on 5% "$T/base.pb.gz" "$T/same.pb.gz"
    has "$T/out" '^No regression'
}
twice unchanged

expect_status 1 "$KILN" diff --fail-on 5% --svg "$T/d.svg" "$T/base.pb.gz" "$T/slow.pb.gz"
cat "$T/out"
has "$T/out" '^REGRESSION: cost_c flat share'
if grep '^REGRESSION: .* flat share' "$T/out" | grep -v '^REGRESSION: cost_c '; then
    fail "another function's flat share named"
fi
has "$T/out" 'shrank +cost_a$'
has "$T/d.svg" '<title>cost_c '
echo ok
