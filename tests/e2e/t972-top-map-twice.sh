#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A file mapped twice, the second time at another address from another
# file offset (tests/workloads/mapagain.c maps its own twice_burn again,
# as node maps V8's builtins): the copy's frames are named with the right
# bias, for a PIE and for an ET_EXEC program (whose module libdwfl places
# where it was linked), in perf's perf.data (the same counts as perf
# report) and in kiln record's profile.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

for w in mapagain mapagain-nopie; do
    perf_record -q -F 999 -g -o "$T/$w.data" -- "$WL/$w" 4 >/dev/null 2>&1 ||
        fail "perf record of $w failed"
    compare_with_perf "$T/$w.data" "twice_burn once_burn"
    hasnt "$T/kiln.top" "\\[$w\\]"
done

need_record
for w in mapagain mapagain-nopie; do
    expect_status 0 "$KILN" record -F 999 -o "$T/$w.pb.gz" -- "$WL/$w" 4
    expect_status 0 "$KILN" top -n 0 "$T/$w.pb.gz"
    cp "$T/out" "$T/$w.top"
    n=$(nsamples "$T/$w.pb.gz")
    for f in twice_burn once_burn; do
        got=$(top_pct "$T/$w.top" $f)
        [ -n "$got" ] || { cat "$T/$w.top" >&2; fail "$w: kiln record has no $f"; }
        within "$got" 50 "$(share_tol 50 "$n" 10)" || fail "$w: $f has $got%, expected about 50%"
    done
    hasnt "$T/$w.top" "\\[$w\\]"
done
exit 0
