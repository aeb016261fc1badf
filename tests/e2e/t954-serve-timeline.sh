#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's threads over time and time range: a perf script profile of
# two threads in known phases (alpha in phase_one for its first 600 ms,
# beta in phase_two from 400 ms to 1 s, one 1 ms sample each millisecond)
# gives exact per-thread buckets; a range gives exactly the samples taken
# in it, in every view and download; bad ranges get 400.  Then the page:
# the strips draw, a drag across them selects a range that the URL keeps
# and the views follow, a double-click selects the whole run again.
# See tests/browser/timeline.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

awk 'BEGIN {
  for (i = 0; i < 1000; i++) {
    s = sprintf("%d.%06d", 100 + int(i / 1000), (i * 1000) % 1000000)
    if (i < 600) printf "alpha   101 %s:    1000000 cpu-clock:pppH: \n\t            1000 phase_one+0x1 (/opt/app)\n\t            2000 run+0x1 (/opt/app)\n\t            3000 main+0x1 (/opt/app)\n\n", s
    if (i >= 400) printf "beta   102 %s:    1000000 cpu-clock:pppH: \n\t            1100 phase_two+0x1 (/opt/app)\n\t            2000 run+0x1 (/opt/app)\n\t            3000 main+0x1 (/opt/app)\n\n", s
  } }' > "$T/two.perf"
printf 'main;run;phase_one 5\n' > "$T/untimed.collapsed"
serve_start -q --http 127.0.0.1:0 "$T/two.perf" "$T/untimed.collapsed"

# /api/profiles says which inputs have times.
expect_get 200 "/api/profiles"
/usr/bin/python3 - "$T/body" <<'PY' || fail "profiles: times flags"
import json, sys
p = json.load(open(sys.argv[1]))["profiles"]
assert p[0]["times"] is True and p[1]["times"] is False, p
PY

# Ten buckets of 100 ms: alpha 100 ms in each of the first six, beta in
# the last six, the total twice that where they overlap.
expect_get 200 "/api/timeline?buckets=10&type=cpu"
/usr/bin/python3 - "$T/body" <<'PY' || { cat "$T/body"; fail "timeline buckets"; }
import json, sys
d = json.load(open(sys.argv[1]))
ms = 1000000
assert d["bucket_ns"] == 100 * ms and d["buckets"] == 10 and d["end"] == 1000 * ms, d
assert d["nthreads"] == 2 and d["untimed"] == 0, d
a, b = d["threads"]
assert (a["tid"], a["name"]) == (101, "alpha") and (b["tid"], b["name"]) == (102, "beta"), d
assert a["values"] == [100 * ms] * 6 + [0] * 4, a
assert b["values"] == [0] * 4 + [100 * ms] * 6, b
assert d["total"] == [x + y for x, y in zip(a["values"], b["values"])], d
assert a["total"] == b["total"] == 600 * ms, d
PY
# Finer buckets are whole milliseconds; focus applies, the range does not.
expect_get 200 "/api/timeline?buckets=3000&type=samples&focus=phase_two&t0=0&t1=1000"
/usr/bin/python3 - "$T/body" <<'PY' || { head -c 600 "$T/body"; fail "timeline: 1 ms buckets, focus"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bucket_ns"] == 1000000 and d["buckets"] == 1000, (d["bucket_ns"], d["buckets"])
assert d["nthreads"] == 1 and d["threads"][0]["name"] == "beta", d["threads"]
assert sum(d["total"]) == 600, sum(d["total"])
assert d["total"][399] == 0 and d["total"][400] == 1 and d["total"][999] == 1
PY
# An input without times: no buckets, its value untimed.
expect_get 200 "/api/timeline?p=1"
grep -q '"buckets":0,"untimed":5,' "$T/body" || { cat "$T/body"; fail "untimed input"; }

# The range [0, 400 ms): alpha only; [400, 600 ms): both, half each.
expect_get 200 "/api/top?type=samples&t0=0&t1=400000000"
grep -q '"total":400,' "$T/body" && grep -q '"count":3,' "$T/body" &&
    ! grep -q phase_two "$T/body" || { cat "$T/body"; fail "top in [0, 400 ms)"; }
expect_get 200 "/api/top?type=samples&t0=400000000&t1=600000000"
/usr/bin/python3 - "$T/body" <<'PY' || { cat "$T/body"; fail "top in [400, 600 ms)"; }
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["name"]: x["flat"] for x in d["rows"]}
assert d["total"] == 400 and r["phase_one"] == 200 and r["phase_two"] == 200, d
PY
expect_get 200 "/api/flame?type=samples&t0=900000000&t1=1000000000&width=100"
grep -q '"total":100,' "$T/body" && grep -q phase_two "$T/body" &&
    ! grep -q phase_one "$T/body" || { cat "$T/body"; fail "flame in [900 ms, 1 s)"; }
expect_get 200 "/api/sandwich?type=samples&fn=run&t0=500000000&t1=700000000"
grep -q '"cum":300,' "$T/body" || { cat "$T/body"; fail "sandwich in [500, 700 ms): alpha 100, beta 200"; }
# Downloads carry the range: 50 samples of beta.
expect_get 200 "/api/download?format=collapsed&type=samples&t0=950000000&t1=1000000000"
[ "$(cat "$T/body")" = "main;run;phase_two 50" ] || { cat "$T/body"; fail "collapsed download in a range"; }
# A range and focus together.
expect_get 200 "/api/top?type=samples&focus=phase_one&t0=500000000&t1=1000000000"
grep -q '"total":100,' "$T/body" || { cat "$T/body"; fail "focus and range"; }

# Bad ranges.
expect_get 400 "/api/top?t0=5"
grep -q 't0 < t1' "$T/body" || fail "half a range: $(cat "$T/body")"
expect_get 400 "/api/top?t0=7&t1=7"
expect_get 400 "/api/top?t0=-1&t1=7"
grep -q 'bad t0' "$T/body" || fail "negative t0: $(cat "$T/body")"
expect_get 400 "/api/top?t0=1x&t1=7"
expect_get 400 "/api/top?p=1&t0=0&t1=7"
grep -q 'has no sample times' "$T/body" || fail "range on an untimed input: $(cat "$T/body")"
expect_get 400 "/api/timeline?buckets=0"

# perf.data in, with its times: perf record -g of shares (52 samples, one
# thread): its strip, and two ranges that split its samples.
serve_stop
serve_start -q --http 127.0.0.1:0 "$T/two.perf" "$T/untimed.collapsed" "$KILN_SRC/tests/fixtures/perfdata/fp.data"
expect_get 200 "/api/profiles"
grep -q '"format":"perf.data","samples":[0-9]*,"times":true' "$T/body" || fail "perf.data profile: $(cat "$T/body")"
expect_get 200 "/api/timeline?p=2&type=samples&buckets=20"
/usr/bin/python3 - "$T/body" <<'PY' || { cat "$T/body"; fail "perf.data timeline"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nthreads"] == 1 and d["threads"][0]["name"] == "shares", d["threads"]
assert sum(d["total"]) == 52, sum(d["total"])
PY
half=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["bucket_ns"] * (d["buckets"] // 2))' "$T/body")
expect_get 200 "/api/top?p=2&type=samples&t0=0&t1=$half"
a=$(jq .total "$T/body")
expect_get 200 "/api/top?p=2&type=samples&t0=$half&t1=999999999999"
b=$(jq .total "$T/body")
[ $((a + b)) -eq 52 ] && [ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "perf.data halves: $a + $b, want 52 in all"

# The page.
if ! command -v node >/dev/null || [ ! -x /usr/bin/chromium ] ||
   [ ! -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    serve_stop
    skip "API checked; the page needs node, /usr/bin/chromium and playwright-core (scripts/deps.sh)"
fi
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 300 node "$KILN_SRC/tests/browser/timeline.test.mjs" "$URL" "$SHOTS" ||
    fail "browser checks failed"
serve_stop
exit 0
