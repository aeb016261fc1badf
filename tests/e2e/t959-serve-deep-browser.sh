#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's Flame tab opens on the roots when the stacks are deeper
# than the window is tall (node, Rust and -a profiles showed slivers at the
# empty top until the user scrolled); an empty profile or selection says
# why instead of a blank canvas and "0ns".  See tests/browser/deep.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need node
[ -x /usr/bin/chromium ] || skip "/usr/bin/chromium is not installed"
B=$KILN_SRC/tests/browser
[ -d "$B/node_modules/playwright-core" ] ||
    skip "playwright-core is not installed (run scripts/deps.sh, or npm install in tests/browser)"

# Two stacks 200 frames deep under main.
awk 'BEGIN { s = "main"; for (i = 0; i < 200; i++) s = s ";f" i;
             print s ";leaf_a 70"; print s ";leaf_b 30" }' > "$T/deep.collapsed"
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
# An idle program's profile: no sample.
python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/empty.pb.gz" idle=/x.c:1=0 || fail "mkpprof"
serve_start -q --http 127.0.0.1:0 "$T/deep.collapsed" "$T/empty.pb.gz"
HOME=$T timeout 300 node "$B/deep.test.mjs" "$URL" "$SHOTS" || fail "browser checks failed"
serve_stop
exit 0
