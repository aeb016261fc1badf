#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's page in a real browser (headless chromium via
# playwright-core) on a profile of known shape: the canvas draws, hover
# shows the known share, click zooms and the URL says so, search gives
# the known matched share, the sandwich lists the known callers, the top
# table equals kiln top's, a link reproduces the view, no console errors.
# Screenshots are kept in $KILN_SHOTS when it is set.
# See tests/browser/serve.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need node
[ -x /usr/bin/chromium ] || skip "/usr/bin/chromium is not installed"
B=$KILN_SRC/tests/browser
[ -d "$B/node_modules/playwright-core" ] ||
    skip "playwright-core is not installed (run scripts/deps.sh, or npm install in tests/browser)"

cat > "$T/shares.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
IN
"$KILN" top -n 0 "$T/shares.collapsed" > "$T/top.txt" || fail "kiln top"
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
serve_start -q --http 127.0.0.1:0 "$T/shares.collapsed"
HOME=$T timeout 300 node "$B/serve.test.mjs" "$URL" "$T/top.txt" "$SHOTS" || fail "browser checks failed"
serve_stop
exit 0
