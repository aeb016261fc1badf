#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's heap views on a trace of tests/workloads/heapsites: three
# sites of known growth (grow_a to 2,400,000 bytes, grow_b to 1,440,000,
# grow_c to 480,000, in step) and known leaks (3 x 40000, 2 x 24000,
# 1 x 8000, each over 1 s old at the end by construction).
#  - /api/heap/sites: the three sites first, labels distinct and naming
#    them, each one's largest value and leak exact, its series growing to
#    it; "other" the rest; allocations (780) and temporary ones (600) over
#    time; the size histogram; a time range is a slice of the buckets;
#  - /api/heap/allocs: "live at the end, lifetime at least 1 s" is exactly
#    the six leaks, from the time index's mark of the end (no reading); filters by site
#    and size; lifetime bounds that split the blocks add up; paging;
#    bad filters 400; a profile that is no heap trace 400;
#  - kiln heap's .heap.svg legend: no two labels alike.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need_agent

expect_status 0 "$KILN" heap -q -o "$T/h" -- "$WL/heapsites"
# The legend of the static chart: its labels are distinct.
# (each entry: a 12-pixel swatch, then its text)
grep -A1 'height="12" fill=' "$T/h.heap.svg" | grep -o '<text[^>]*>[^<]*' | sed 's/.*>//' > "$T/legend"
[ "$(wc -l < "$T/legend")" -ge 4 ] || fail "no legend in the .heap.svg: $(cat "$T/legend")"
[ "$(sort "$T/legend" | uniq -d | wc -l)" = 0 ] || fail "the .heap.svg legend repeats a label: $(sort "$T/legend" | uniq -d)"
for s in grow_a grow_b grow_c; do has "$T/h.heap.svg" "$s \\(heapsites.c:" ; done

serve_start -q --http 127.0.0.1:0 "$T/h.trace.zst" "$KILN_SRC/tests/fixtures/demo/demo.perf.gz"

expect_get 200 '/api/heap/sites?n=3'
cp "$T/body" "$T/sites.json"
/usr/bin/python3 - "$T/sites.json" <<'PY' || fail "per-site chart: $(head -c 1500 "$T/sites.json")"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"grow_a": (2400000, 120000), "grow_b": (1440000, 48000), "grow_c": (480000, 8000)}
names = [s["label"].split(" ")[0] for s in d["sites"]]
assert names == ["grow_a", "grow_b", "grow_c"], names
assert len({s["label"] for s in d["sites"]}) == 3, "labels not distinct"
assert d["sites_total"] == 4, d["sites_total"]       # churn's is "other"
n = d["buckets"]
for s, name in zip(d["sites"], names):
    mx, leak = want[name]
    v = s["values"]
    assert len(v) == n and s["max"] == mx and s["leaked"] == leak, (name, s["max"], s["leaked"])
    top = v.index(mx)
    assert all(v[i] <= v[i + 1] for i in range(top)), (name, "does not grow")
    # (the series are taken at each bucket's largest heap: the frees at
    # the end fall in the last bucket, after its largest moment)
# Growth in step (until the frees): grow_a holds 5/3 of grow_b and 5
# times grow_c, give or take the round in progress.
a, b, c = (s["values"] for s in d["sites"])
for i in range(a.index(2400000) + 1):
    assert abs(a[i] - 5 * c[i]) <= 40000 and abs(3 * a[i] - 5 * b[i]) <= 120000, (i, a[i], b[i], c[i])
tot = d["total"]
for i in range(n):
    assert abs(a[i] + b[i] + c[i] + d["other"][i] - tot[i]) < 1, i
assert max(tot) == d["peak"] == 4320100, (max(tot), d["peak"])
assert sum(d["calls"]) == 780 and sum(d["temporary"]) == 600, (sum(d["calls"]), sum(d["temporary"]))
sizes = {(lo, hi): (k, b) for lo, hi, k, b in d["sizes"]}
assert sizes[(64, 127)] == (600, 60000) and sizes[(32768, 65535)] == (60, 2400000), sizes
print(d["bucket_ns"], n)
PY
read -r BNS NB < <(jq -r '"\(.bucket_ns) \(.buckets)"' "$T/sites.json")
# A time range: the buckets that meet it, the same values.
expect_get 200 "/api/heap/sites?n=3&t0=$((BNS * 10))&t1=$((BNS * 20))"
[ "$(jq '.first' "$T/body") $(jq '.buckets' "$T/body")" = "10 10" ] || fail "range: $(head -c 300 "$T/body")"
[ "$(jq -c '.sites[0].values' "$T/body")" = "$(jq -c '.sites[0].values[10:20]' "$T/sites.json")" ] ||
    fail "a range is a slice of the series"

# The allocation list: live at the end, lifetime at least 1 s: the leaks.
expect_get 200 '/api/heap/allocs?alive=end&life_min=1000000000'
cp "$T/body" "$T/leaks.json"
/usr/bin/python3 - "$T/leaks.json" <<'PY' || fail "the leaks: $(head -c 1500 "$T/leaks.json")"
import json, sys
d = json.load(open(sys.argv[1]))
got = sorted((d["sites"][str(a[3])].split(" ")[0], a[2]) for a in d["allocs"])
want = sorted([("grow_a", 40000)] * 3 + [("grow_b", 24000)] * 2 + [("grow_c", 8000)])
assert got == want, got
assert d["count"] == 6 and d["bytes"] == 176000 and d["to_end"], d
assert all(a[1] is None for a in d["allocs"]), "a leak was freed"
assert all(d["read_to"] - a[0] >= 1000000000 for a in d["allocs"]), "a leak younger than 1 s"
# From the time index's mark of the trace's end: nothing more to read.
assert d["read_from"] > 0 and d["bytes_read"] == 0, (d["read_from"], d["bytes_read"])
PY
# Alive at the end with no lifetime bound: the same six (nothing else lives).
expect_get 200 '/api/heap/allocs?alive=end'
[ "$(jq .count "$T/body")" = 6 ] || fail "alive at the end: $(head -c 400 "$T/body")"
# Lifetime at least 1 s: every block kept through the wait (180).
expect_get 200 '/api/heap/allocs?life_min=1000000000&n=1'
[ "$(jq .count "$T/body")" = 180 ] || fail "lifetime >= 1 s: $(head -c 400 "$T/body")"
# A lifetime bound splits the blocks: at most X and at least X+1 add up.
expect_get 200 '/api/heap/allocs?n=1'
ALL=$(jq .count "$T/body")
[ "$ALL" = 780 ] || fail "every allocation: $ALL"
expect_get 200 '/api/heap/allocs?life_max=500000000&n=1'
SHORT=$(jq .count "$T/body")
expect_get 200 '/api/heap/allocs?life_min=500000001&n=1'
[ $((SHORT + $(jq .count "$T/body"))) = 780 ] || fail "lifetime bounds do not split: $SHORT + $(jq .count "$T/body")"
# By site and by size.
STACK_B=$(jq '.sites[1].stack' "$T/sites.json")
expect_get 200 "/api/heap/allocs?site=$STACK_B&n=1"
[ "$(jq .count "$T/body")" = 60 ] || fail "site grow_b: $(head -c 300 "$T/body")"
expect_get 200 '/api/heap/allocs?size_min=8000&size_max=24000&alive=end'
[ "$(jq '[.count, .bytes]' -c "$T/body")" = '[3,56000]' ] || fail "size and alive: $(head -c 400 "$T/body")"
# Paging: blocks in allocation order, offset and n.
expect_get 200 '/api/heap/allocs?life_min=1000000000&n=10'
jq -c '.allocs[4:7]' "$T/body" > "$T/p1"
expect_get 200 '/api/heap/allocs?life_min=1000000000&n=3&offset=4'
[ "$(jq -c .allocs "$T/body")" = "$(cat "$T/p1")" ] || fail "paging: $(cat "$T/p1") vs $(jq -c .allocs "$T/body")"
[ "$(jq '[.allocs[][0]] | . == sort' "$T/body")" = true ] || fail "not in allocation order"
# Bad filters, and a profile that is no heap trace.
expect_get 400 '/api/heap/allocs?life_min=5&life_max=4'
expect_get 400 '/api/heap/allocs?alive=soon'
expect_get 400 '/api/heap/allocs?n=0'
expect_get 400 '/api/heap/sites?p=1'
has "$T/body" "not a kiln heap trace"
serve_stop
exit 0
