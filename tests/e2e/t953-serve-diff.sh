#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve NEW --diff BASE: the API gives each flame graph node the
# base's value scaled to the new total, and the page draws the grown
# function red, the shrunk one blue, and says so on hover.  A bad base is
# refused before serving; diff=1 without a base is a 400; --diff-by
# function matches the base by function (a renamed caller).
# See tests/browser/serve.test.mjs --diff.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

cat > "$T/base.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
IN
# Twice the samples: shares are compared, so burn_c (10% in both) is unchanged.
cat > "$T/new.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_b;burn_b 1200
main;run;stage_c;burn_c 200
IN
printf 'main;run\n' > "$T/bad.collapsed"
expect_status 2 "$KILN" serve --http 127.0.0.1:0 "$T/new.collapsed" --diff "$T/bad.collapsed"
has "$T/err" "bad.collapsed"

serve_start -q --http 127.0.0.1:0 "$T/new.collapsed" --diff "$T/base.collapsed"
expect_get 200 /api/profiles
[ "$(jq -r '.base.name' "$T/body")" = "$T/base.collapsed" ] || fail "base: $(cat "$T/body")"
expect_get 200 '/api/flame?diff=1'
[ "$(jq -c '. as $d | [.nodes[] | select(.[1] == 4) | [$d.names[.[0]], .[3], .[11]]]' "$T/body")" = \
  '[["burn_a",600,1200],["burn_b",1200,600],["burn_c",200,200]]' ] || fail "diff values: $(cat "$T/body")"
[ "$(jq .base_total "$T/body")" = 1000 ] || fail "base_total: $(cat "$T/body")"
expect_get 200 '/api/flame?diff=1&focus=stage_b'
[ "$(jq -c '[.nodes[0][3], .nodes[0][11]]' "$T/body")" = '[1200,1200]' ] || fail "diff with focus: $(cat "$T/body")"
# The top table with deltas: the base's flat scaled to this total (x2),
# sorted by the change; absolute: the base's own values.
expect_get 200 '/api/top?diff=1&sort=delta'
[ "$(jq -c '[.rows[] | select(.flat > 0 or .base_flat > 0) | [.name, .flat, .base_flat, .delta, .delta_pct]]' "$T/body")" = \
  '[["burn_b",1200,600,600,"+100.00%"],["burn_c",200,200,0,"+0.00%"],["burn_a",600,1200,-600,"-50.00%"]]' ] ||
    fail "top diff: $(cat "$T/body")"
[ "$(jq -c '[.base_total, .absolute]' "$T/body")" = '[1000,false]' ] || fail "top diff totals: $(cat "$T/body")"
expect_get 200 '/api/top?diff=1&absolute=1&sort=delta&order=asc'
[ "$(jq -c '[.rows[-1].name, (.rows[] | select(.name == "burn_a") | .base_flat, .delta, .delta_cum_pct)]' "$T/body")" = '["burn_b",600,0,"+0.00%"]' ] ||
    fail "top diff absolute: $(cat "$T/body")"
[ "$(jq -c '[.rows[] | select(.name == "burn_b") | .base_flat, .delta, .delta_pct]' "$T/body")" = '[300,900,"+300.00%"]' ] ||
    fail "top diff absolute burn_b: $(cat "$T/body")"
expect_get 400 '/api/top?sort=delta';  has "$T/body" 'delta with diff=1'
# The call graph against the base: its legend says so.
expect_get 200 '/api/callgraph?diff=1'
has "$T/body" 'Diff: colour by change'

# --diff-by function: a caller renamed since the base (grow -> run) does
# not make work new: it gets its function's base total.
serve_stop
printf 'main;grow;work 100\nmain;other 100\n' > "$T/fb.collapsed"
printf 'main;run;work 150\nmain;other 50\n' > "$T/fn.collapsed"
serve_start -q --http 127.0.0.1:0 "$T/fn.collapsed" --diff "$T/fb.collapsed" --diff-by function
expect_get 200 '/api/flame?diff=1'
[ "$(jq -c '. as $d | [.nodes[] | select(.[0] >= 0) | [$d.names[.[0]], .[11]] | select(.[0] == "work" or .[0] == "run")]' "$T/body")" = \
  '[["run",0],["work",100]]' ] || fail "diff by function: $(cat "$T/body")"
serve_stop
serve_start -q --http 127.0.0.1:0 "$T/fn.collapsed" --diff "$T/fb.collapsed"
expect_get 200 '/api/flame?diff=1'
[ "$(jq -c '. as $d | [.nodes[] | select(.[0] >= 0) | [$d.names[.[0]], .[11]] | select(.[0] == "work")]' "$T/body")" = \
  '[["work",0]]' ] || fail "diff by path: $(cat "$T/body")"
# A heap that shrank: sizes are subtracted by default, as pprof's -base
# does (scaled to the new total, site_a would read as growth); times and
# samples (above) compare shares.  absolute=0 asks for the shares.
serve_stop
MKPPROF_TYPE=inuse_space/bytes python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/hb.pb.gz" \
    site_a=a.c:1=1000 site_b=b.c:2=1000
MKPPROF_TYPE=inuse_space/bytes python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$T/hn.pb.gz" \
    site_a=a.c:1=900 site_b=b.c:2=100
serve_start -q --http 127.0.0.1:0 "$T/hn.pb.gz" --diff "$T/hb.pb.gz"
expect_get 200 '/api/top?diff=1'
[ "$(jq -c '[.absolute, (.rows[] | select(.name == "site_a") | .base_flat, .delta)]' "$T/body")" = \
  '[true,1000,-100]' ] || fail "heap diff absolute by default: $(cat "$T/body")"
expect_get 200 '/api/top?diff=1&absolute=0'
[ "$(jq -c '[.absolute, (.rows[] | select(.name == "site_a") | .base_flat, .delta)]' "$T/body")" = \
  '[false,500,400]' ] || fail "heap diff scaled on request: $(cat "$T/body")"
# The flame graph compares the same way: site_a's base as it is (1000)
# and blue (it lost 100 B); asked for shares, its base scaled (500), red.
expect_get 200 '/api/flame?diff=1'
[ "$(jq -c '. as $d | [.absolute, (.nodes[] | select(.[0] >= 0 and $d.names[.[0]] == "site_a") |
    .[11], ((.[10] % 256) > (.[10] / 65536 | floor)))]' "$T/body")" = '[true,1000,true]' ] ||
    fail "heap flame diff by value by default: $(cat "$T/body")"
expect_get 200 '/api/flame?diff=1&absolute=0'
[ "$(jq -c '. as $d | [.absolute, (.nodes[] | select(.[0] >= 0 and $d.names[.[0]] == "site_a") |
    .[11], ((.[10] % 256) > (.[10] / 65536 | floor)))]' "$T/body")" = '[false,500,false]' ] ||
    fail "heap flame diff by share on request: $(cat "$T/body")"
expect_status 2 "$KILN" serve --http 127.0.0.1:0 "$T/fn.collapsed" --diff-by name
has "$T/err" "bad --diff-by 'name'"

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    # The page's test uses 300/600/100 against 600/300/100: restart on those.
    serve_stop
    printf 'main;run;stage_a;burn_a 300\nmain;run;stage_b;burn_b 600\nmain;run;stage_c;burn_c 100\n' > "$T/new.collapsed"
    serve_start -q --http 127.0.0.1:0 "$T/new.collapsed" --diff "$T/base.collapsed"
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/serve.test.mjs" --diff "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop

# A function only the base has: a row at 0, shrunk by all of it.
printf 'main;run;stage_d;gone 100\n' | cat "$T/base.collapsed" - > "$T/base2.collapsed"
serve_start -q --http 127.0.0.1:0 "$T/new.collapsed" --diff "$T/base2.collapsed"
expect_get 200 '/api/top?diff=1&absolute=1&filter=gone'
[ "$(jq -c '[.count, (.rows[0] | .flat, .cum, .base_flat, .delta, .delta_pct)]' "$T/body")" = '[1,0,0,100,-100,"-100.00%"]' ] ||
    fail "base-only function: $(cat "$T/body")"
serve_stop

serve_start -q --http 127.0.0.1:0 "$T/new.collapsed"
expect_get 400 '/api/top?diff=1';  has "$T/body" 'no diff base'
expect_get 400 '/api/flame?diff=1'
has "$T/body" 'no diff base'
expect_get 200 /api/profiles
[ "$(jq -c '.base' "$T/body")" = null ] || fail "base without --diff: $(cat "$T/body")"
serve_stop
exit 0
