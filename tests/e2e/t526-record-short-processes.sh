#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Short processes, as a build or a shell loop runs them, at kiln's
# default 99 Hz: each child's event counts from zero, so a child that
# runs less than a period (10.1 ms) was never sampled and one that runs
# longer lost part of its last period -- 50 children of 4 ms left an
# empty profile, `kiln record -- make` showed cc1 alone where perf shows
# as, gcc and make too.  Each inherited task's own count at its exit
# (attr.inherit_stat's READ records) now gives what its samples missed:
# to its last sample's stack, or with none to a frame named by the
# program ("[shortprocs]").  The profile's total is the children's CPU
# as they measure it (getrusage), within 25%; children of 30 ms keep
# their short_burn stacks.
. "$(dirname "$0")/lib.sh"
need_record

# total_ms PROFILE: the profile's CPU in milliseconds.
total_ms() {
    "$KILN" convert "$1" -o "$T/p.perf" --to perf-script > /dev/null 2>&1 || fail "convert $1"
    awk '/cpu-clock:/ { s += $(NF-1) } END { printf "%.1f", s / 1e6 }' "$T/p.perf"
}
for run in "50 4" "10 30"; do
    # shellcheck disable=SC2086
    expect_status 0 "$KILN" record -q -o "$T/s.pb.gz" -- "$WL/shortprocs" $run
    want=$(sed -n 's/^shortprocs: [0-9]* children, \([0-9]*\) ms of their CPU$/\1/p' "$T/out")
    [ -n "$want" ] || fail "no measure from shortprocs: $(cat "$T/out")"
    got=$(total_ms "$T/s.pb.gz")
    awk -v g="$got" -v w="$want" 'BEGIN { exit !(g >= 0.75 * w && g <= 1.25 * w + 15) }' ||
        fail "children $run: the profile holds $got ms of their $want ms of CPU"
done
# 30 ms children were sampled: their stacks name short_burn (most of it).
expect_status 0 "$KILN" top -n 0 "$T/s.pb.gz"
cum=$(top_pct "$T/out" short_burn 5)
awk -v c="$cum" 'BEGIN { exit !(c >= 50) }' || { cat "$T/out"; fail "short_burn holds $cum% of 30 ms children"; }
echo ok
