#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's JSON API on a profile of known shape: the flame graph nodes
# (only those a pixel wide or more, under a zoom root), the search's
# matched share, the top table (kiln top's numbers), the sandwich of a
# function; bad requests 400/404 with a message, unknown paths and path
# traversal refused, only GET/HEAD; bad input refused with kiln top's
# message and status 2 (the URL is printed first: the server answers while
# the inputs are read, t961); loopback by default; SIGINT stops it with
# status 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

cat > "$T/shares.collapsed" <<'IN'
main;run;stage_a;burn_a 600
main;run;stage_a;burn_a;burn_b 200
main;run;stage_b;burn_b 300
main;run;stage_c;burn_c 100
main;tiny 1
IN

# Bad input is refused with kiln top's message and status (after the URL:
# the server answers while it reads, and stops when an input is bad).
printf 'main;run 12\nthis line has no count\n' > "$T/bad.collapsed"
expect_status 2 "$KILN" top "$T/bad.collapsed"
cp "$T/err" "$T/top.err"
expect_status 2 "$KILN" serve --http 127.0.0.1:0 "$T/shares.collapsed" "$T/bad.collapsed"
grep -F "$(cat "$T/top.err")" "$T/err" >/dev/null || { cat "$T/err"; fail "serve's message differs from top's: $(cat "$T/top.err")"; }
has "$T/err" "reading '.*bad.collapsed' \(2 of 2\)"
expect_status 2 "$KILN" serve --http 127.0.0.1:0 "$T/missing.pb.gz"
has "$T/err" "missing.pb.gz"
expect_status 2 "$KILN" serve
expect_status 2 "$KILN" serve --http 'no-port' "$T/shares.collapsed"
has "$T/err" "bad address 'no-port'"

serve_start --http 127.0.0.1:0 "$T/shares.collapsed"
case $URL in http://127.0.0.1:[0-9]*/) ;; *) fail "URL $URL";; esac
serve_loaded
has "$T/serve.err" "reading '.*shares.collapsed' \(1 of 1\)"

# The page and its files, compiled in.
expect_get 200 /
has "$T/body" '<canvas id="flame"'
expect_get 200 /app.js
expect_get 200 /style.css

expect_get 200 /api/profiles
[ "$(jq -r '.profiles[0].format + " " + (.profiles[0].types[0].total|tostring)' "$T/body")" = "collapsed 1201" ] ||
    fail "profiles: $(cat "$T/body")"

# Flame graph: at 1201 px every frame is a pixel wide or more (11 with the
# root); at 100 px "tiny" (1 of 1201) is not sent.
expect_get 200 '/api/flame?width=1201'
[ "$(jq '.nodes|length' "$T/body")" = 11 ] || fail "flame nodes: $(cat "$T/body")"
jq -e '.names|index("tiny")' "$T/body" >/dev/null || fail "tiny missing at 1201 px"
expect_get 200 '/api/flame?width=100'
[ "$(jq '.nodes|length' "$T/body")" = 10 ] || fail "flame nodes at 100 px: $(cat "$T/body")"
! jq -e '.names|index("tiny")' "$T/body" >/dev/null || fail "tiny sent at 100 px"
[ "$(jq '.dropped' "$T/body")" = 1 ] || fail "dropped: $(cat "$T/body")"
# Node geometry: stage_b starts after stage_a's 800 and is 300 wide.
[ "$(jq -c '. as $d | .nodes[] | select($d.names[.[0]] == "stage_b") | [.[1], .[2], .[3]]' "$T/body")" = "[3,800,300]" ] ||
    fail "stage_b geometry: $(cat "$T/body")"

# Zoom root: the path's frames, the subtree only, x from the root.
expect_get 200 '/api/flame?root=main;run;stage_b&width=50'
[ "$(jq -c '[.path[].name]' "$T/body")" = '["main","run","stage_b"]' ] || fail "path: $(cat "$T/body")"
[ "$(jq -c '. as $d | [.nodes[] | [$d.names[.[0]], .[1], .[2], .[3]]]' "$T/body")" = '[["stage_b",0,0,300],["burn_b",1,0,300]]' ] ||
    fail "zoomed nodes: $(cat "$T/body")"
expect_get 404 '/api/flame?root=main;nope'
has "$T/body" "no frame 'nope'"

# Search: burn_a or burn_b, a nested match counted once: 1100 of 1201.
expect_get 200 '/api/flame?search=burn_%5Bab%5D'
[ "$(jq -c '[.matched, .matched_root]' "$T/body")" = '[1100,1100]' ] || fail "matched: $(cat "$T/body")"
[ "$(jq '[.nodes[] | select(.[9] == 1)] | length' "$T/body")" = 3 ] || fail "match flags: $(cat "$T/body")"
expect_get 200 '/api/flame?search=(%3Fi)%5EBURN_C%24&root=main;run;stage_a'
[ "$(jq -c '[.matched, .matched_root]' "$T/body")" = '[100,0]' ] || fail "case-insensitive search: $(cat "$T/body")"

# Leaf-rooted tree: burn_b is a root child with 500.
expect_get 200 '/api/flame?reverse=1'
[ "$(jq -c '. as $d | [.nodes[] | select(.[1] == 1 and $d.names[.[0]] == "burn_b") | .[3]]' "$T/body")" = '[500]' ] ||
    fail "reverse: $(cat "$T/body")"

# Top: the numbers kiln top prints, row for row.
"$KILN" top -n 0 "$T/shares.collapsed" > "$T/top.txt" || fail "kiln top"
awk 'go { print $1, $2, $3, $4, $5, $6 } $1 == "flat" { go = 1 }' "$T/top.txt" > "$T/top.want"
expect_get 200 '/api/top?n=0'
jq -r '.rows[] | [.flat_str, .flat_pct, .sum_pct, .cum_str, .cum_pct, .name] | join(" ")' "$T/body" > "$T/top.got"
diff -u "$T/top.want" "$T/top.got" || fail "/api/top differs from kiln top"
# ... also with focus/ignore, and with sorting and filtering done here.
"$KILN" top -n 0 --focus stage --ignore burn_c "$T/shares.collapsed" > "$T/top.txt" || fail "kiln top --focus"
awk 'go { print $1, $2, $3, $4, $5, $6 } $1 == "flat" { go = 1 }' "$T/top.txt" > "$T/top.want"
expect_get 200 '/api/top?n=0&focus=stage&ignore=burn_c'
jq -r '.rows[] | [.flat_str, .flat_pct, .sum_pct, .cum_str, .cum_pct, .name] | join(" ")' "$T/body" > "$T/top.got"
diff -u "$T/top.want" "$T/top.got" || fail "/api/top?focus differs from kiln top --focus"
expect_get 200 '/api/top?sort=cum&filter=%5Estage'
[ "$(jq -c '[.rows[].name]' "$T/body")" = '["stage_a","stage_b","stage_c"]' ] || fail "sort=cum: $(cat "$T/body")"
expect_get 200 '/api/top?sort=name&order=desc&n=2'
[ "$(jq -c '[.count, [.rows[].name]]' "$T/body")" = '[9,["tiny","stage_c"]]' ] || fail "sort=name: $(cat "$T/body")"

# Sandwich of burn_b: called by burn_a (200) and stage_b (300).
expect_get 200 '/api/sandwich?fn=burn_b'
[ "$(jq -c '[.cum, .self]' "$T/body")" = '[500,500]' ] || fail "sandwich totals: $(cat "$T/body")"
[ "$(jq -c '. as $d | [.callers.nodes[] | select(.[1] == 1) | [$d.names[.[0]], .[3]]]' "$T/body")" = '[["burn_a",200],["stage_b",300]]' ] ||
    fail "callers of burn_b: $(cat "$T/body")"
expect_get 200 '/api/sandwich?fn=stage_a'
[ "$(jq -c '. as $d | [.callees.nodes[] | [$d.names[.[0]], .[1], .[3]]]' "$T/body")" = '[["stage_a",0,800],["burn_a",1,800],["burn_b",2,200]]' ] ||
    fail "callees of stage_a: $(cat "$T/body")"
expect_get 404 '/api/sandwich?fn=no_such_function'
has "$T/body" "no function 'no_such_function'"

# The call graph: kiln callgraph's SVG for the selection, each function
# linked to kiln-fn:NAME (the page's sandwich links).
hdr=$(curl -s -D - -o "$T/cg.svg" "${URL}api/callgraph") || fail "callgraph"
echo "$hdr" | grep -qi '^content-type: image/svg+xml' || fail "callgraph type: $hdr"
! echo "$hdr" | grep -qi '^content-disposition' || fail "callgraph is shown, not saved: $hdr"
has "$T/cg.svg" '<svg'
for f in main run stage_a stage_b stage_c burn_a burn_b burn_c; do
    has "$T/cg.svg" "xlink:href=\"kiln-fn:$f\""
done
has "$T/cg.svg" 'Total: 1201'
# The same graph as kiln callgraph draws (its legend names the input).
"$KILN" callgraph -q --format dot -o "$T/cg.dot" "$T/shares.collapsed" || fail "kiln callgraph"
[ "$(grep -c 'kiln-fn:' "$T/cg.svg")" -eq "$(grep -c '^ *N[0-9]* \[' "$T/cg.dot")" ] ||
    fail "callgraph: $(grep -c 'kiln-fn:' "$T/cg.svg") linked nodes, kiln callgraph has $(grep -c '^ *N[0-9]* \[' "$T/cg.dot")"
# Pruning and filtering apply: 3 nodes at most; focus keeps stage_b's stacks.
expect_get 200 '/api/callgraph?nodes=3'
[ "$(grep -c 'kiln-fn:' "$T/body")" -le 3 ] || fail "nodes=3: $(grep -c 'kiln-fn:' "$T/body") nodes"
expect_get 200 '/api/callgraph?focus=stage_b'
has "$T/body" 'kiln-fn:burn_b'
hasnt "$T/body" 'kiln-fn:stage_a'
expect_get 200 '/api/callgraph?lines=1'
expect_get 400 '/api/callgraph?nodes=x';          has "$T/body" 'bad nodes'
expect_get 400 '/api/callgraph?node_fraction=2';  has "$T/body" 'bad node_fraction'
expect_get 400 '/api/callgraph?diff=1';           has "$T/body" 'no diff base'

# Downloads of the selection, in every export format: kiln reads each
# back with the selection's numbers.
"$KILN" top -n 0 --focus stage_b "$T/shares.collapsed" | tail -n +2 > "$T/top.want"
for f in pprof collapsed speedscope perf-script svg; do
    hdr=$(curl -s -D - -o "$T/dl" "${URL}api/download?format=$f&focus=stage_b") || fail "download $f"
    echo "$hdr" | grep -qi '^content-disposition: attachment; filename="shares.collapsed\.' ||
        fail "download $f: $hdr"
    if [ $f = speedscope ]; then    # kiln does not read speedscope back
        jq -e '.["$schema"] | test("speedscope")' "$T/dl" >/dev/null || fail "speedscope download: $(head -c 300 "$T/dl")"
        [ "$(jq -c '[.shared.frames[].name] | sort' "$T/dl")" = '["burn_b","main","run","stage_b"]' ] ||
            fail "speedscope frames: $(head -c 300 "$T/dl")"
    elif [ $f = svg ]; then
        has "$T/dl" '<svg'
        has "$T/dl" 'stage_b'
        hasnt "$T/dl" 'stage_a'
    else
        "$KILN" top -n 0 "$T/dl" | tail -n +2 > "$T/top.got" || fail "kiln top on the $f download"
        diff -u "$T/top.want" "$T/top.got" || fail "the $f download differs"
    fi
done
expect_get 400 '/api/download?format=zip';  has "$T/body" "bad format 'zip'"

# Bad requests: 400 with a message.
expect_get 400 '/api/flame?width=0';        has "$T/body" '"error":"bad width'
expect_get 400 '/api/flame?width=12px';     has "$T/body" '"error":"bad width'
expect_get 400 '/api/flame?p=7';            has "$T/body" '"error":"bad p'
expect_get 400 '/api/flame?type=bogus';     has "$T/body" '"error":"bad type'
expect_get 400 '/api/flame?focus=%28';      has "$T/body" 'bad focus regular expression'
expect_get 400 '/api/flame?search=%5B';     has "$T/body" 'bad search regular expression'
expect_get 400 '/api/top?sort=size';        has "$T/body" "bad sort 'size'"
expect_get 400 '/api/sandwich';             has "$T/body" 'no fn'
expect_get 404 '/api/nothing';              has "$T/body" "no API '/api/nothing'"
# Unknown paths and traversal: nothing outside the inputs.
for p in /etc/passwd /../../../../etc/passwd /%2e%2e/%2e%2e/etc/passwd \
         /api/../../etc/passwd /index.html /app.js/../../etc/passwd "$T/shares.collapsed"; do
    expect_get 404 "$p"
    hasnt "$T/body" 'root:'
    hasnt "$T/body" 'stage_a'
done
STATUS=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data x "$URL") || fail "POST"
[ "$STATUS" = 405 ] || [ "$STATUS" = 400 ] || fail "POST answered $STATUS"
STATUS=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "${URL}api/profiles") || fail "DELETE"
[ "$STATUS" = 405 ] || fail "DELETE answered $STATUS"

# A burst of requests (bounded) leaves it responsive.
for i in $(seq 1 100); do
    curl -s -o /dev/null "${URL}api/flame?width=$((i * 10))" &
done
wait_curls=$(jobs -p | grep -v "^$SERVE_PID\$" || true)
for j in $wait_curls; do wait "$j" || true; done
expect_get 200 /api/profiles
serve_stop
has "$T/serve.err" 'stopped by signal 2'

# Loopback by default: 127.0.0.1:8080 (when that port is free here).
if "$KILN" serve -q "$T/shares.collapsed" > "$T/def.out" 2> "$T/def.err" & DEF=$!; then :; fi
for i in $(seq 1 600); do
    grep -q http "$T/def.out" 2>/dev/null && break
    kill -0 "$DEF" 2>/dev/null || break
    sleep 0.1
done
if grep -q http "$T/def.out"; then
    has "$T/def.out" '^kiln serve: http://127\.0\.0\.1:8080/$'
    ss -ltn 2>/dev/null | grep -q '127\.0\.0\.1:8080 ' || fail "not listening on 127.0.0.1:8080"
    ! ss -ltn 2>/dev/null | grep -Eq '(0\.0\.0\.0|\*|\[::\]):8080 ' || fail "listening on every address"
    kill -INT "$DEF"; wait "$DEF" || fail "default server exit status"
else
    wait "$DEF" || true
    has "$T/def.err" "cannot listen on '127.0.0.1:8080'"
    echo "note: 127.0.0.1:8080 is busy here; the default address was not checked" >&2
fi
exit 0
