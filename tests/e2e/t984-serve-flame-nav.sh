#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's flame graph navigation: /api/flame's heavy=1 (left-heavy:
# siblings heaviest first, ties by name) and x0/x1 (a window of the zoom
# root: only nodes in it are sent, at the window's resolution); bad
# windows are refused.  Then the page's left-heavy option, wheel zoom and
# minimap in chromium (tests/browser/flamenav.test.mjs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

printf 'main;aaa_light 1\nmain;mmm_mid 2\nmain;zzz_heavy 5\nmain;zzz_heavy;deep 2\nmain;bbb_tie 2\n' > "$T/p.folded"
serve_start -q --http 127.0.0.1:0 "$T/p.folded"
kids() { jq -r '. as $d | [.nodes[] | select(.[1] == 2) | "\($d.names[.[0]])@\(.[2])"] | join(" ")' "$T/body"; }
expect_get 200 '/api/flame?width=1000'
[ "$(kids)" = "aaa_light@0 bbb_tie@1 mmm_mid@3 zzz_heavy@5" ] || fail "by name: $(kids)"
expect_get 200 '/api/flame?width=1000&heavy=1'
[ "$(kids)" = "zzz_heavy@0 bbb_tie@7 mmm_mid@9 aaa_light@11" ] || fail "left-heavy: $(kids)"
# deep stays under zzz_heavy, at its left
[ "$(jq -r '. as $d | [.nodes[] | select(.[1] == 3) | "\($d.names[.[0]])@\(.[2])"] | join(" ")' "$T/body")" = "deep@0" ] ||
    fail "left-heavy grandchildren: $(cat "$T/body")"
# A window: the right twentieth of the root (aaa_light, with heavy=1) alone.
expect_get 200 '/api/flame?width=1000&heavy=1&x0=0.95&x1=1'
[ "$(kids)" = "aaa_light@11" ] || fail "window: $(kids)"
# Resolution: 1 px wide over 12 is not drawn; over a window of 1/12 it is.
expect_get 200 '/api/flame?width=10&min=1'
[ "$(kids)" = "bbb_tie@1 mmm_mid@3 zzz_heavy@5" ] || fail "10 px: $(kids)"
expect_get 200 '/api/flame?width=10&min=1&x0=0&x1=0.25'
[ "$(kids)" = "aaa_light@0 bbb_tie@1" ] || fail "10 px, window: $(kids)"
expect_get 400 '/api/flame?x0=0.5&x1=0.5'
has "$T/body" "bad window"
expect_get 400 '/api/flame?x0=2'

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/flamenav.test.mjs" "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
