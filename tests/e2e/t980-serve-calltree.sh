#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's call tree: /api/calltree on a profile of known shape (the
# hot path opened in one answer, children heaviest first and cut at n,
# the inverted tree's first level equal to kiln top's flat, bad paths and
# arguments refused), then the page in headless chromium: the tree's
# numbers equal kiln top --cum's, inverted equals leaf-rooted, keyboard,
# URL state, focus.  See tests/browser/calltree.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

cat > "$T/shares.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
IN
"$KILN" top -n 0 --cum "$T/shares.collapsed" > "$T/top.txt" || fail "kiln top"
serve_start -q --http 127.0.0.1:0 "$T/shares.collapsed"

# The hot path: main, run, stage_a, burn_a, then burn_b (a leaf: no level).
expect_get 200 '/api/calltree?open=64'
[ "$(jq -r '[.levels[].path] | join("|")' "$T/body")" = "|main|main;run|main;run;stage_a|main;run;stage_a;burn_a" ] ||
    fail "hot path levels: $(cat "$T/body")"
# run's children, heaviest first, with totals, selves and child counts.
[ "$(jq -r '.levels[2].children | map("\(.[1]) \(.[2]) \(.[3])") | join(",")' "$T/body")" = "800 0 1,300 0 1,100 0 1" ] ||
    fail "run's children: $(cat "$T/body")"
[ "$(jq -r '. as $d | .levels[2].children | map($d.names[.[0]]) | join(" ")' "$T/body")" = "stage_a stage_b stage_c" ] ||
    fail "run's children names: $(cat "$T/body")"
# One node's children only, cut at n: the rest counted.
expect_get 200 '/api/calltree?path=main;run&n=1'
[ "$(jq -c '[(.levels | length), (.levels[0].children | length), .levels[0].more, .levels[0].more_total]' "$T/body")" = "[1,1,2,400]" ] ||
    fail "n=1: $(cat "$T/body")"
# Inverted: the first level is kiln top's flat, heaviest first.
expect_get 200 '/api/calltree?reverse=1'
got=$(jq -r '. as $d | .levels[0].children | map("\($d.names[.[0]])=\(.[1])/\(.[2])") | join(" ")' "$T/body")
want=$(awk 'go && $1 > 0 { printf "%s%s=%s/%s", sep, $NF, $1, $1; sep = " " } $1 == "flat" { go = 1 }' "$T/top.txt")
[ "$got" = "$want" ] || fail "inverted first level: $got, kiln top flat: $want"
expect_get 200 '/api/calltree?reverse=1&path=burn_b'
[ "$(jq -r '. as $d | .levels[0].children | map("\($d.names[.[0]])=\(.[1])") | join(" ")' "$T/body")" = "stage_b=300 burn_a=200" ] ||
    fail "burn_b's callers: $(cat "$T/body")"
# The selection's filters hold.
expect_get 200 '/api/calltree?focus=stage_c'
[ "$(jq '.total' "$T/body")" = 100 ] || fail "focus: $(cat "$T/body")"
expect_get 404 '/api/calltree?path=main;nope'
has "$T/body" "no frame 'nope'"
expect_get 400 '/api/calltree?n=0'
expect_get 400 '/api/calltree?open=x'

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/calltree.test.mjs" "$URL" "$T/top.txt" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
