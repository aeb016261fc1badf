#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stack transforms (profile/transform.c) on a hand-made profile of known
# shape: each transform's result through kiln serve's tf= (the selection
# downloaded as collapsed stacks), their order, every view holding to them
# (top, flame, call tree, sandwich, call graph; the cache keyed by them),
# bad lists refused (400), and the same lists through kiln
# top/flame/convert --transform (exit 2 when bad).  Recorded profiles
# (recursion, libc) and the page are t977's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

cat > "$T/s.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
main;fib;fib;fib;leaf 50
main;fib;fib 30
main;fib;g;fib;leaf 5
IN
FIBS='main;fib;fib 30|main;fib;fib;fib;leaf 50|main;fib;g;fib;leaf 5'
serve_start -q --http 127.0.0.1:0 "$T/s.collapsed"

# tf_is LIST WANT: the selection under tf=LIST, downloaded as collapsed
# stacks and sorted, is WANT (lines joined by '|').
tf_is() {
    expect_get 200 "/api/download?format=collapsed&tf=$1"
    local got
    got=$(LC_ALL=C sort "$T/body" | paste -sd'|')
    [ "$got" = "$2" ] || fail "tf=$1: got '$got', want '$2'"
}
# Merge function: run leaves every stack, its time (none of its own) too.
tf_is 'mf:run' "$FIBS|main;stage_a;burn_a 600|main;stage_a;burn_a;burn_b 200|main;stage_b;burn_b 300|main;stage_c;burn_c 100"
# Merge call node: stage_a under main;run only.
tf_is 'mcn:main/run/stage_a' "$FIBS|main;run;burn_a 600|main;run;burn_a;burn_b 200|main;run;stage_b;burn_b 300|main;run;stage_c;burn_c 100"
# Focus on subtree: stage_a becomes the root; the rest goes.
tf_is 'f:main/run/stage_a' 'stage_a;burn_a 600|stage_a;burn_a;burn_b 200'
# Focus on function: burn_b from both callers, one root.
tf_is 'ff:burn_b' 'burn_b 500'
# Drop function.
tf_is 'df:burn_b' "$FIBS|main;run;stage_a;burn_a 600|main;run;stage_c;burn_c 100"
# Collapse recursion (indirect too: g between two fibs goes) and direct
# recursion only (g's fib stays), after focusing on main;fib.
tf_is 'f:main/fib;rec:fib' 'fib 30|fib;leaf 55'
tf_is 'f:main/fib;drec:fib' 'fib 30|fib;g;fib;leaf 5|fib;leaf 50'
# The list applies in order.
tf_is 'mf:stage_a;f:main/run/burn_a' 'burn_a 600|burn_a;burn_b 200'
tf_is 'f:main/run/burn_a;mf:stage_a' ''
# URL-encoded separators and escapes read as the page writes them (\_ is _).
tf_is 'f%3Amain%2Frun%2Fstage_a%3Bdf%3Aburn%5C_b' 'stage_a;burn_a 600'

# Every view holds to the list.
expect_get 200 '/api/top?n=0&tf=mf:stage_a'
[ "$(jq '[.rows[] | select(.name == "stage_a")] | length' "$T/body")" = 0 ] || fail "top lists a merged function: $(cat "$T/body")"
[ "$(jq '.total' "$T/body")" = 1285 ] || fail "top total: $(cat "$T/body")"
expect_get 200 '/api/flame?width=800&tf=df:burn_b'
[ "$(jq '.total' "$T/body")" = 785 ] || fail "flame total with df:burn_b: $(jq .total "$T/body")"
expect_get 200 '/api/calltree?tf=f:main/run/stage_a'
[ "$(jq -r '"\(.total) \(.names[.levels[0].children[0][0]])"' "$T/body")" = "800 stage_a" ] ||
    fail "call tree focused on a subtree: $(cat "$T/body")"
expect_get 200 '/api/sandwich?fn=burn_b&width=800&tf=df:burn_a'
[ "$(jq '.cum' "$T/body")" = 300 ] || fail "sandwich with df:burn_a: $(cat "$T/body")"
if get '/api/callgraph?tf=mf:run' && [ "$STATUS" = 200 ]; then
    has "$T/body" 'kiln-fn:stage_a'
    hasnt "$T/body" 'kiln-fn:run"'
fi
# The cache is keyed by the list: the same view without it is whole.
expect_get 200 '/api/flame?width=800'
[ "$(jq '.total' "$T/body")" = 1285 ] || fail "flame without tf after one with it: $(jq .total "$T/body")"
# The saved page keeps the list with its selection.
expect_get 200 '/api/download?format=html&tf=mf:run'
has "$T/body" '"tf":"mf:run"'
# Bad lists.
expect_get 400 '/api/top?tf=zz:main'
has "$T/body" "bad transform 'zz:main'"
expect_get 400 '/api/flame?tf=mf:'
expect_get 400 '/api/calltree?tf=main'
serve_stop

# The CLI: the same lists.
"$KILN" convert "$T/s.collapsed" --transform 'f:main/fib;rec:fib' -o "$T/rec.collapsed" 2>/dev/null ||
    fail "kiln convert --transform"
[ "$(LC_ALL=C sort "$T/rec.collapsed" | paste -sd'|')" = 'fib 30|fib;leaf 55' ] ||
    fail "convert --transform: $(cat "$T/rec.collapsed")"
"$KILN" top -n 0 --transform 'ff:burn_b' "$T/s.collapsed" > "$T/top.txt" || fail "kiln top --transform"
has "$T/top.txt" 'of 500 total'
hasnt "$T/top.txt" ' main$'
"$KILN" flame --transform 'mf:run' "$T/s.collapsed" -o "$T/f.svg" 2>/dev/null || fail "kiln flame --transform"
has "$T/f.svg" '<title>stage_a '
hasnt "$T/f.svg" '<title>run '
expect_status 2 "$KILN" top --transform 'zz:x' "$T/s.collapsed"
has "$T/err" "bad transform 'zz:x'"
expect_status 2 "$KILN" convert "$T/s.collapsed" --transform 'mf' -o "$T/x.collapsed"
exit 0
