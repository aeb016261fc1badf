#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's label filters: /api/labels lists a perf script's pid,
# thread and thread_name with their values by total (not time); labels=
# keeps (any of a key's values) and drops samples in every view; group=
# roots the tree at one frame per value; a bad condition is refused.  Then
# the filter bar in headless chromium (tests/browser/labels.test.mjs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

cat > "$T/two.perf" <<'IN'
server 100/101 [000] 1.000000: 1000000 cpu-clock:
	    401000 burn_a (/bin/prog)
	    402000 main (/bin/prog)

server 100/102 [001] 1.001000: 1000000 cpu-clock:
	    403000 burn_b (/bin/prog)
	    402000 main (/bin/prog)

server 100/102 [001] 1.002000: 1000000 cpu-clock:
	    403000 burn_b (/bin/prog)
	    402000 main (/bin/prog)

batch 200/200 [000] 1.003000: 1000000 cpu-clock:
	    404000 burn_c (/bin/other)
	    405000 main (/bin/other)

IN
serve_start -q --http 127.0.0.1:0 "$T/two.perf"

expect_get 200 /api/labels
[ "$(jq -c '[.keys[] | [.key, (.values | map("\(.[0])=\(.[1])") | join(" "))]]' "$T/body")" = \
  '[["pid","100=3000000 200=1000000"],["thread","102=2000000 101=1000000 200=1000000"],["thread_name","server=3000000 batch=1000000"]]' ] ||
    fail "labels: $(cat "$T/body")"
expect_get 200 '/api/labels?n=1'
[ "$(jq -c '[.keys[] | .more]' "$T/body")" = '[1,2,1]' ] || fail "labels n=1: $(cat "$T/body")"

# keep: one value; two values of one key are either; two keys are both.
expect_get 200 '/api/top?labels=pid%3D200'
[ "$(jq -r '[.total, (.rows | map(.name) | join(" "))] | join(" ")' "$T/body")" = "1000000 burn_c main" ] ||
    fail "pid=200: $(cat "$T/body")"
expect_get 200 '/api/top?labels=thread%3D101%3Bthread%3D200'
[ "$(jq .total "$T/body")" = 2000000 ] || fail "thread 101 or 200: $(cat "$T/body")"
expect_get 200 '/api/top?labels=pid%3D100%3Bthread%3D200'
[ "$(jq .total "$T/body")" = 0 ] || fail "pid 100 and thread 200: $(cat "$T/body")"
# drop, and a value holding ';' escaped (no such thread: nothing dropped)
expect_get 200 '/api/top?labels=thread!%3D102'
[ "$(jq .total "$T/body")" = 2000000 ] || fail "thread!=102: $(cat "$T/body")"
expect_get 200 '/api/top?labels=thread_name!%3Da%5C%3Bb'
[ "$(jq .total "$T/body")" = 4000000 ] || fail "escaped value: $(cat "$T/body")"
# group: the flame graph and the call tree start at the label's values.
expect_get 200 '/api/calltree?group=thread_name'
[ "$(jq -r '. as $d | .levels[0].children | map("\($d.names[.[0]])=\(.[1])") | join(" ")' "$T/body")" = \
  "thread_name=server=3000000 thread_name=batch=1000000" ] || fail "group: $(cat "$T/body")"
expect_get 200 '/api/flame?group=pid&labels=pid!%3D200&root=pid%3D100'
[ "$(jq '.path[0].total' "$T/body")" = 3000000 ] || fail "flame group root: $(cat "$T/body")"
expect_get 200 '/api/calltree?group=nosuch'
[ "$(jq -r '.names[0]' "$T/body")" = "nosuch=(none)" ] || fail "group by a missing label: $(cat "$T/body")"
# Downloads and the saved page hold to them too.
expect_get 200 '/api/download?format=collapsed&labels=pid%3D200&group=pid'
[ "$(cat "$T/body")" = "pid=200;main;burn_c 1000000" ] || fail "download: $(cat "$T/body")"
expect_get 200 '/api/download?format=html&labels=pid%3D200'
has "$T/body" '"labels":"pid=200"'
grep -q 'burn_b' "$T/body" && fail "the saved page holds a dropped sample"
expect_get 400 '/api/top?labels=pid'
has "$T/body" "bad label condition 'pid'"
expect_get 400 '/api/top?labels=%3D1'

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/labels.test.mjs" "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
