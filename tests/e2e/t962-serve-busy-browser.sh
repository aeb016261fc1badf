#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's busy state in the page (issue 22): on a heap trace whose
# range analysis takes seconds (tests/tools/gen-heaptrace, 10 M events),
# a range makes the page busy (dimmed views, what the server does and how
# far), a newer range aborts the older requests (tried again with another
# range when the first was answered before the newer was asked: failed so
# once in ~20 runs beside other tests), the answer ends the busy state.
# See tests/browser/busy.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need node
[ -x /usr/bin/chromium ] || skip "no /usr/bin/chromium"
[ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ] || skip "no playwright-core in tests/browser/node_modules"
GEN=$KILN_BUILD/tools/gen-heaptrace
# Under ASan+UBSan kiln is several times slower: fewer events take as long.
EVENTS=10000000
[ "${KILN_SANITIZE:-OFF}" = ON ] && EVENTS=3000000
[ -x "$GEN" ] || fail "no $GEN: build the gen-heaptrace target"

# Two frames: the time index marks frame boundaries only, so the range
# below is read from the trace's start (seconds), not from the stretch
# sums of its marks (a fraction of a second: too quick to see busy).
EV=${KILN_T962_EVENTS:-$EVENTS}
expect_status 0 "$GEN" -n "$EV" -f $((EV / 2 + 1)) -t 10000 -o "$T/in.trace.zst"
serve_start -q --http 127.0.0.1:0 "$T/in.trace.zst"
expect_get 200 /api/timeline       # waits for the reading
END=$(jq .end "$T/body")
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 600 node "$KILN_SRC/tests/browser/busy.test.mjs" "$URL" "$SHOTS" "$END" ||
    fail "browser checks failed"
serve_stop
exit 0
