#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The call graph SVG, drawn in process by graphviz's library, opened in a
# real browser (headless chromium via playwright-core): every known
# function name shown in its own box with its total and self
# percentages, edges labelled with percentages, the residual edge dashed,
# the legend shown.  See tests/browser/callgraph.test.mjs.
. "$(dirname "$0")/lib.sh"
need node
[ -x /usr/bin/chromium ] || skip "/usr/bin/chromium is not installed"
B=$KILN_SRC/tests/browser
[ -d "$B/node_modules/playwright-core" ] ||
    skip "playwright-core is not installed (run scripts/deps.sh, or npm install in tests/browser)"

cat > "$T/known.collapsed" <<'IN'
main;parse;lex 100
main;parse 50
main;compute;fib;fib;fib 300
main;compute;fib 100
main;compute;helper 200
main;render;helper 150
main;render 100
IN
expect_status 0 "$KILN" callgraph "$T/known.collapsed" -o "$T/k.svg"
HOME=$T timeout 300 node "$B/callgraph.test.mjs" "$T/k.svg" \
    main compute fib helper render parse lex || fail "browser checks failed"
# --nodes 6 removes parse: main reaches lex through a dashed edge.
expect_status 0 "$KILN" callgraph "$T/known.collapsed" --nodes 6 -o "$T/n6.svg"
HOME=$T timeout 300 node "$B/callgraph.test.mjs" "$T/n6.svg" \
    main compute fib helper render lex --dashed || fail "browser checks failed (--nodes 6)"
exit 0
