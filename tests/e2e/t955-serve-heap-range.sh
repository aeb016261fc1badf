#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's time range on a heap trace: heapphases allocates 1,000,000
# bytes (kept), then 300 ms later 2,000,000 (freed in phase three), then
# 300 ms later 500,000 (kept).  The memory-over-time line shows the three
# steps and the 3,000,000-byte peak; a range between two pauses analyses
# the trace again: allocated in the range, the peak within it (earlier
# blocks included), and what the range allocated that is still live at its
# end, exactly, in every view.  The page draws the line and a link with a
# range gives the range's numbers.  See tests/browser/timeline.test.mjs --heap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need_agent

expect_status 0 "$KILN" heap -q -o "$T/h" -- "$WL/heapphases"
serve_start -q --http 127.0.0.1:0 "$T/h.trace.zst"
expect_get 200 /api/profiles
[ "$(jq '.profiles[0].times' "$T/body")" = true ] || fail "a heap trace has times: $(cat "$T/body")"

# The line: 1 MB, then 3 MB, then 1.5 MB.  Ranges go from pause to pause:
# halfway between the buckets where the size changes.
expect_get 200 /api/timeline
cp "$T/body" "$T/line.json"
read -r R1 R2 < <(/usr/bin/python3 - "$T/line.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h, t, B = d["heap"], d["total"], d["bucket_ns"]
assert h["peak"] == 3000000, h["peak"]
assert max(t) == 3000000 and max(h["end"]) == 3000000, (max(t), max(h["end"]))
assert h["end"][-1] == 1500000, h["end"][-1]
e = h["end"]
# Phase one is done well before phase two (its 100 mallocs took 8 buckets
# of 1 ms with two copies of the suite running: a phase may straddle
# several); phase two starts in bucket a and is done in bucket a2; phase
# three starts in bucket c.
p1 = next(i for i in range(len(e)) if e[i] == 1000000)
assert p1 * B < 150e6 and all(x <= 1000000 for x in e[:p1]), (p1, B, e[:p1 + 1])
a = next(i for i in range(len(t)) if t[i] > 1000000)
a2 = next(i for i in range(a, len(e)) if e[i] == 3000000)
c = next(i for i in range(a2, len(e)) if e[i] < 3000000)
# Each pause is 300 ms: at least 250 ms of buckets between the phases.
assert (a - 1) * B >= 250e6 and (c - a2 - 1) * B >= 250e6, (a, a2, c, B)
print(int(a * B / 2), int((a2 + 1 + c) * B / 2))
PY
) || fail "memory over time: $(head -c 600 "$T/line.json")"
END=$(jq .end "$T/line.json")
# measure TYPE T0 T1: "total name=flat ..." of the range's top table
measure() {
    expect_get 200 "/api/top?type=$1&t0=$2&t1=$3&n=0"
    jq -r '[.total, (.rows[] | select(.flat > 0) | "\(.name)=\(.flat)")] | join(" ")' "$T/body"
}
want() {        # want TYPE T0 T1 EXPECTED
    local got; got=$(measure "$1" "$2" "$3")
    [ "$got" = "$4" ] || fail "$1 in [$2, $3): got '$got', want '$4'"
}
want allocated 0 "$R1" "1000000 phase_one=1000000"
want peak      0 "$R1" "1000000 phase_one=1000000"
want leaked    0 "$R1" "1000000 phase_one=1000000"
want allocated "$R1" "$R2" "2000000 phase_two=2000000"
want peak      "$R1" "$R2" "3000000 phase_two=2000000 phase_one=1000000"
want leaked    "$R1" "$R2" "2000000 phase_two=2000000"
want allocated "$R2" "$END" "500000 phase_three=500000"
want peak      "$R2" "$END" "3000000 phase_two=2000000 phase_one=1000000"
want leaked    "$R2" "$END" "500000 phase_three=500000"
want calls     "$R2" "$END" "50 phase_three=50"
# Over two phases: phase_two's blocks were freed inside the range.
want leaked    "$R1" "$END" "500000 phase_three=500000"
want allocated "$R1" "$END" "2500000 phase_two=2000000 phase_three=500000"
# The whole run, as a range, is the whole run.
want leaked    0 "$END" "1500000 phase_one=1000000 phase_three=500000"
want peak      0 "$END" "3000000 phase_two=2000000 phase_one=1000000"
# Other views and filters follow the range.
expect_get 200 "/api/flame?type=allocated&t0=$R1&t1=$R2&focus=phase_"
[ "$(jq '.total' "$T/body")" = 2000000 ] || fail "flame in a range: $(head -c 300 "$T/body")"
expect_get 200 "/api/download?format=collapsed&type=leaked&t0=$R2&t1=$END"
grep -q 'phase_three 500000$' "$T/body" && ! grep -q phase_one "$T/body" ||
    fail "collapsed download in a range: $(cat "$T/body")"

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/timeline.test.mjs" --heap "$URL" "$SHOTS" "$R1" "$R2" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
