#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The flame graph in a real browser (headless chromium via playwright-core):
# hover shows the name and percentage, search shows the matched share
# counting nested matches once, click zooms a frame to the full width,
# Reset Zoom restores it.  See tests/browser/flame.test.mjs.
. "$(dirname "$0")/lib.sh"
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
expect_status 0 "$KILN" flame "$T/shares.collapsed" -o "$T/shares.svg"
HOME=$T timeout 300 node "$B/flame.test.mjs" "$T/shares.svg" || fail "browser checks failed"
exit 0
