#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's Heap tab in headless chromium (tests/browser/heap.test.mjs)
# on a trace of tests/workloads/heapsites: the per-site chart of three
# sites of known growth with a legend of distinct labels, hover, the
# allocations over time and size histogram, and the allocation list
# filtered to "alive at the end, lifetime at least 1 s" equal to the six
# known leaks (long-lived by construction: the workload waits 1.2 s of
# CLOCK_MONOTONIC before it frees the rest), its link, paging, the call
# tree links; no Heap tab for a CPU profile.  KILN_SHOTS=DIR keeps the
# screenshots.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need node
need_agent
[ -x /usr/bin/chromium ] || skip "no chromium"
[ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ] || skip "no playwright-core (npm install in tests/browser)"

expect_status 0 "$KILN" heap -q -o "$T/h" -- "$WL/heapsites"
serve_start -q --http 127.0.0.1:0 "$T/h.trace.zst" "$KILN_SRC/tests/fixtures/demo/demo.perf.gz"
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 300 node "$KILN_SRC/tests/browser/heap.test.mjs" "$URL" "$SHOTS" ||
    fail "browser checks failed"
serve_stop
exit 0
