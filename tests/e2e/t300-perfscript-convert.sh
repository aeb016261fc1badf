#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real `perf record -g` of the shares workload, printed by `perf script`,
# read by kiln: the sample total matches perf's, burn_a has ~60% of the
# time, and every text output (collapsed, speedscope, perf script) and
# pprof carry the same total.
. "$(dirname "$0")/lib.sh"
need_perf

perf_record -q -F 999 -g -o "$T/perf.data" -- "$WL/shares" 2 >/dev/null 2>&1 ||
    fail "perf record failed"
perf script -i "$T/perf.data" > "$T/x.perf" 2>/dev/null || fail "perf script failed"
# perf's own count: one header line (not indented, not blank) per sample.
n=$(grep -c '^[^[:space:]#]' "$T/x.perf")
[ "$n" -gt 1000 ] || fail "only $n samples recorded"

expect_status 0 "$KILN" top "$T/x.perf"
cp "$T/out" "$T/top"
has "$T/top" "^Type: cpu"
pct=$(top_pct "$T/top" burn_a)
[ -n "$pct" ] || fail "burn_a not in kiln top"
within "$pct" 60 5 || fail "burn_a has $pct% flat, expected about 60%"
within "$(top_pct "$T/top" burn_b)" 30 5 || fail "burn_b share off"

# Collapsed: the counts add up to perf's sample count.
expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/x.collapsed" --sample-type samples
total=$(awk '{ s += $NF } END { print s }' "$T/x.collapsed")
[ "$total" = "$n" ] || fail "collapsed total $total, perf has $n samples"
has "$T/x.collapsed" '^[^ ]*main;run;[^ ]*burn_a [0-9]+$'
# Sorted and merged: each stack once.
[ "$(cut -d' ' -f1 "$T/x.collapsed" | sort | uniq -d | wc -l)" = 0 ] || fail "duplicate stacks"
LC_ALL=C sort -c "$T/x.collapsed" || fail "collapsed output is not sorted"
# It reads back with the same total.
expect_status 0 "$KILN" top "$T/x.collapsed"
has "$T/out" "of $n total"

# pprof: the same numbers.
expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/x.pb.gz"
expect_status 0 "$KILN" top --sample-type samples "$T/x.pb.gz"
has "$T/out" "of $n total"
within "$(top_pct "$T/out" burn_a)" "$pct" 0.01 || fail "pprof burn_a share differs"

# speedscope: valid JSON whose weights add up to the cpu time.
expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/x.json"
has "$T/x.json" '"\$schema":"https://www.speedscope.app/file-format-schema.json"'
has "$T/x.json" '"type":"sampled"'
has "$T/x.json" '"unit":"nanoseconds"'
if command -v python3 >/dev/null; then
    python3 - "$T/x.json" "$T/x.perf" <<'PY' || fail "speedscope JSON check failed"
import json, re, sys
d = json.load(open(sys.argv[1]))
prof = d["profiles"][0]
frames = d["shared"]["frames"]
periods = sum(int(m.group(1)) for m in
              re.finditer(r"^\S.*?\d+\.\d+:\s+(\d+) \S+:", open(sys.argv[2]).read(), re.M))
assert sum(prof["weights"]) == periods == prof["endValue"], (sum(prof["weights"]), periods)
assert len(prof["samples"]) == len(prof["weights"])
assert all(0 <= i < len(frames) for s in prof["samples"] for i in s)
names = {f["name"] for f in frames}
assert {"burn_a", "burn_b", "burn_c", "main", "run"} <= names, names
PY
fi

# perf script written by kiln reads back with the same total and shares.
expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/y.perf"
has "$T/y.perf" '^shares [0-9]+ [0-9]+\.[0-9]{6}: [0-9]+ cpu-clock: $'
has "$T/y.perf" $'^\t +[0-9a-f]+ burn_a \\(.*/shares\\)$'
expect_status 0 "$KILN" top "$T/y.perf"
within "$(top_pct "$T/out" burn_a)" "$pct" 0.01 || fail "round trip changed burn_a's share"
expect_status 0 "$KILN" top --sample-type samples "$T/x.perf"
cp "$T/out" "$T/top-samples"
expect_status 0 "$KILN" top --sample-type cpu "$T/y.perf"
[ "$(sed -n 2p "$T/out")" = "$(sed -n 2p "$T/top")" ] || fail "round trip changed the total"
echo ok
