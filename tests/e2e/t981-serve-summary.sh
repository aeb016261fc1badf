#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's summary: /api/summary of a profile kiln recorded names its
# command line, host, event and period, kiln record's sample count, its
# processes and threads; of a kiln heap trace, kiln heap's own figures
# (calls, temporary, peak and its blocks, leaked); a time range narrows the
# selection only.  Then the page in headless chromium shows them (see
# tests/browser/summary.test.mjs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need_record

"$KILN" record -F 999 -o "$T/shares.pb.gz" -- "$WL/shares" 1 2> "$T/rec.err" ||
    { cat "$T/rec.err" >&2; fail "kiln record"; }
samples=$(sed -n "s/^kiln: wrote .*: \([0-9]*\) samples, .*/\1/p" "$T/rec.err")
[ -n "$samples" ] && [ "$samples" -gt 0 ] || fail "no sample count from kiln record: $(cat "$T/rec.err")"
inputs=("$T/shares.pb.gz")
heap=false
if [ "${KILN_SANITIZE:-OFF}" != ON ] && [ -e "$KILN_LIB" ]; then
    # The agent cannot be preloaded into programs built without ASan.
    "$KILN" heap -o "$T/h" -- "$WL/heapbasic" > "$T/heap.txt" 2>&1 ||
        { cat "$T/heap.txt" >&2; fail "kiln heap"; }
    inputs+=("$T/h.trace.zst")
    heap=true
fi

serve_start -q --http 127.0.0.1:0 "${inputs[@]}"
expect_get 200 /api/summary
[ "$(jq -r .command "$T/body")" = "$WL/shares 1" ] || fail "command: $(cat "$T/body")"
[ "$(jq -r .host "$T/body")" = "$(uname -n), kernel $(uname -r)" ] || fail "host: $(cat "$T/body")"
[ "$(jq -r '"\(.event) \(.period_type)/\(.period_unit)"' "$T/body")" = "cpu-clock, frequency 999 Hz cpu/nanoseconds" ] ||
    fail "event: $(cat "$T/body")"
[ "$(jq .samples "$T/body")" = "$samples" ] || fail "samples: $(jq .samples "$T/body"), kiln record wrote $samples"
[ "$(jq '.selection.samples' "$T/body")" = "$samples" ] || fail "selection: $(cat "$T/body")"
[ "$(jq -c '[.processes, .threads]' "$T/body")" = "[1,1]" ] || fail "processes, threads: $(cat "$T/body")"
jq -e '.duration_ns > 0 and .period > 0 and .lost == null and (.kiln_version | length > 0)' "$T/body" >/dev/null ||
    fail "duration, period, lost, version: $(cat "$T/body")"
# A time range: the first half of the samples' span.
mid=$(jq '(.time_span[0] + .time_span[1]) / 2 | floor' "$T/body")
expect_get 200 "/api/summary?t0=0&t1=$mid"
jq -e --argjson n "$samples" '.samples == $n and .selection.samples > 0 and .selection.samples < $n' "$T/body" >/dev/null ||
    fail "time range: $(cat "$T/body")"
expect_get 400 '/api/summary?p=9'

printf '{"file":"%s","command":"%s","host":"%s","samples":%s' \
    "$T/shares.pb.gz" "$WL/shares 1" "$(uname -n)" "$samples" > "$T/expect.json"
if $heap; then
    # kiln heap's lines: "calls to allocation functions: N (...)",
    # "temporary allocations: N (...)", "peak heap memory consumption: B
    # (...) in K blocks after S s", "total memory leaked: B (...) in K blocks".
    calls=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$T/heap.txt")
    temp=$(sed -n 's/^temporary allocations: \([0-9]*\).*/\1/p' "$T/heap.txt")
    peak=$(sed -n 's/^peak heap memory consumption: \([0-9]*\) .* in \([0-9]*\) blocks.*/\1 \2/p' "$T/heap.txt")
    leak=$(sed -n 's/^total memory leaked: \([0-9]*\) .* in \([0-9]*\) blocks.*/\1 \2/p' "$T/heap.txt")
    [ -n "$calls" ] && [ -n "$temp" ] && [ -n "$peak" ] && [ -n "$leak" ] ||
        fail "kiln heap's summary: $(cat "$T/heap.txt")"
    expect_get 200 '/api/summary?p=1'
    got=$(jq -r '.heap | "\(.calls) \(.temporary) \(.peak) \(.peak_objs) \(.leaked) \(.leaked_objs)"' "$T/body")
    [ "$got" = "$calls $temp $peak $leak" ] || fail "heap summary: $got, kiln heap: $calls $temp $peak $leak"
    [ "$(jq -r .command "$T/body")" = "$WL/heapbasic" ] || fail "heap command: $(cat "$T/body")"
    printf ',"heap":{"calls":%s,"temporary":%s,"peak":"in %s blocks, ","leaked":"in %s blocks"}' \
        "$calls" "$temp" "${peak#* }" "${leak#* }" >> "$T/expect.json"
fi
echo '}' >> "$T/expect.json"

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/summary.test.mjs" "$URL" "$T/expect.json" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
