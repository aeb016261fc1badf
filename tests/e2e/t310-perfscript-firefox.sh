#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The perf script that kiln writes, read by the Firefox Profiler's own
# import rules (tests/e2e/firefox-perf.js: one sample per record, period
# ignored) gives the profile's shares:
#   - a known profile (hot 490 samples against 30 cold stacks of 17):
#     hot has 49% (one record per distinct stack gave 3.2%);
#   - a real `perf record -g` of the shares workload through kiln: as many
#     records as perf's, burn_a's share as kiln's within 1 point;
#   - a `kiln record` profile: one record per sample, in time order, with
#     time stamps that span the recording (the time labels).
. "$(dirname "$0")/lib.sh"
need node
FF="node $KILN_SRC/tests/e2e/firefox-perf.js"
# self% of function $1 in firefox-perf.js output $2
ff_self() { awk -v f="$1" '$3 == f { print $1; exit }' "$2"; }

{ echo "main;hot 490"; for i in $(seq 1 30); do echo "main;cold$i 17"; done; } > "$T/k.collapsed"
expect_status 0 "$KILN" convert "$T/k.collapsed" -o "$T/k.perf" --to perf-script
$FF "$T/k.perf" > "$T/k.ff" || fail "firefox-perf.js failed"
has "$T/k.ff" '^samples 1000 threads 1 ordered 1$'
[ "$(ff_self hot "$T/k.ff")" = 49.00 ] || { cat "$T/k.ff"; fail "hot has $(ff_self hot "$T/k.ff")% in Firefox's reading, want 49"; }
# kiln reads it back with the same counts.
expect_status 0 "$KILN" convert "$T/k.perf" -o "$T/k2.collapsed" --sample-type samples
diff -u "$T/k.collapsed" <(LC_ALL=C sort "$T/k2.collapsed") >/dev/null ||
    diff -u <(LC_ALL=C sort "$T/k.collapsed") "$T/k2.collapsed" || fail "round trip changed the counts"

if perf record -q -o "$T/probe.data" -- true >/dev/null 2>&1; then
    perf_record -q -F 999 -g -o "$T/perf.data" -- "$WL/shares" 1 >/dev/null 2>&1 ||
        fail "perf record failed"
    perf script -i "$T/perf.data" > "$T/x.perf" 2>/dev/null || fail "perf script failed"
    n=$(grep -c '^[^[:space:]#]' "$T/x.perf")
    expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/x.pb.gz"
    expect_status 0 "$KILN" convert "$T/x.pb.gz" -o "$T/y.perf" --to perf-script
    $FF "$T/y.perf" > "$T/y.ff" || fail "firefox-perf.js failed"
    has "$T/y.ff" "^samples $n threads 1 ordered 1\$"
    expect_status 0 "$KILN" top "$T/x.pb.gz"
    within "$(ff_self burn_a "$T/y.ff")" "$(top_pct "$T/out" burn_a)" 1 ||
        fail "burn_a: $(ff_self burn_a "$T/y.ff")% in Firefox's reading, $(top_pct "$T/out" burn_a)% in kiln's"
    # perf's own time stamps are kept: the first and last record as perf's.
    first=$(grep -m1 -o '[0-9]*\.[0-9]*:' "$T/x.perf"); last=$(grep -o ' [0-9]*\.[0-9]*:' "$T/x.perf" | tail -1)
    span=$(awk -v a="$first" -v b="$last" 'BEGIN { print b - a }')
    yfirst=$(grep -m1 -o ' [0-9]*\.[0-9]*:' "$T/y.perf"); ylast=$(grep -o ' [0-9]*\.[0-9]*:' "$T/y.perf" | tail -1)
    within "$(awk -v a="$yfirst" -v b="$ylast" 'BEGIN { print b - a }')" "$span" 0.002 ||
        fail "time span $yfirst..$ylast, perf's $first..$last"
fi

if "$KILN" record -q -o "$T/probe.pb.gz" -- true >/dev/null 2>&1; then
    expect_status 0 "$KILN" record -q -F 499 -o "$T/r.pb.gz" -- "$WL/shares" 1
    expect_status 0 "$KILN" top --sample-type samples "$T/r.pb.gz"
    n=$(sed -n 's/.* of \([0-9]*\) total.*/\1/p' "$T/out")
    expect_status 0 "$KILN" convert "$T/r.pb.gz" -o "$T/r.perf"
    $FF "$T/r.perf" > "$T/r.ff" || fail "firefox-perf.js failed"
    has "$T/r.ff" "^samples $n threads 1 ordered 1\$"
    expect_status 0 "$KILN" top "$T/r.pb.gz"
    within "$(ff_self burn_a "$T/r.ff")" "$(top_pct "$T/out" burn_a)" 1 || fail "burn_a share differs"
    # Time stamps since 1970, spanning the run (1 s of CPU, 0.8 s or more).
    f=$(grep -m1 -o ' [0-9]*\.[0-9]*:' "$T/r.perf" | tr -d ' :'); l=$(grep -o ' [0-9]*\.[0-9]*:' "$T/r.perf" | tail -1 | tr -d ' :')
    awk -v f="$f" -v l="$l" -v now="$(date +%s)" 'BEGIN { exit !(f > now - 600 && f <= now && l - f >= 0.8 && l - f < 60) }' ||
        fail "time stamps $f..$l do not span the recording"
fi
echo ok
