#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's call graph navigation in chromium
# (tests/browser/cgnav.test.mjs): fit keeps text readable, wheel zoom,
# drag pan, and the node menu's focus gives the graph ?focus= gives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need node
[ -x /usr/bin/chromium ] || skip "/usr/bin/chromium is not installed"
[ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ] ||
    skip "playwright-core is not installed (run scripts/deps.sh, or npm install in tests/browser)"

{
    for i in $(seq -w 1 40); do echo "main;run;f$i $((100 + 10#$i))"; done
    echo "main;run;hot;leaf 9000"
    echo "main;run;hot 1000"
} > "$T/wide.folded"
serve_start -q --http 127.0.0.1:0 "$T/wide.folded"
expect_get 200 /api/callgraph
grep -q 'kiln-fn:hot' "$T/body" || skip "no call graph here (graphviz): $(head -c 200 "$T/body")"
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 300 node "$KILN_SRC/tests/browser/cgnav.test.mjs" "$URL" "$SHOTS" ||
    fail "browser checks failed"
serve_stop
exit 0
