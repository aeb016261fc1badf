#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stack transforms on recorded profiles (kiln record of the callgraph
# workload, whose fib calls itself, under libc's __libc_start_main):
# collapse recursion leaves no fib under fib and keeps fib's cumulative
# time; collapse library turns libc's frames into one libc.so.6 frame and
# keeps every sample; the timeline holds to the list.  Then the page in
# headless chromium (tests/browser/transforms.test.mjs): the flame graph's
# and call tree's menus, breadcrumbs, every view.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need_record

"$KILN" record -q -o "$T/cg.pb.gz" -- "$WL/callgraph" 1 || fail "kiln record callgraph"
serve_start -q --http 127.0.0.1:0 "$T/cg.pb.gz"

expect_get 200 '/api/download?format=collapsed'
cp "$T/body" "$T/whole.collapsed"
grep -q 'fib;fib' "$T/whole.collapsed" || fail "the recording has no recursion: $(head -5 "$T/whole.collapsed")"
grep -q '__libc_start_main' "$T/whole.collapsed" || fail "the recording has no libc frame: $(head -5 "$T/whole.collapsed")"
total=$(awk '{ s += $NF } END { print s }' "$T/whole.collapsed")

# cum VIEW-ARGS FN: FN's cum in /api/top.
cum() {
    expect_get 200 "/api/top?n=0$1"
    jq --arg f "$2" '[.rows[] | select(.name == $f) | .cum] | add // 0' "$T/body"
}
# Collapse recursion.
expect_get 200 '/api/download?format=collapsed&tf=rec:fib'
grep -q 'fib;fib' "$T/body" && fail "rec:fib left fib under fib: $(grep 'fib;fib' "$T/body" | head -3)"
[ "$(awk '{ s += $NF } END { print s }' "$T/body")" = "$total" ] || fail "rec:fib lost samples"
[ "$(cum '' fib)" = "$(cum '&tf=rec:fib' fib)" ] || fail "rec:fib changed fib's cum"
# Collapse libc.
expect_get 200 '/api/download?format=collapsed&tf=cl:libc.so.6'
grep -q '__libc_start' "$T/body" && fail "cl:libc.so.6 left libc functions: $(head -3 "$T/body")"
grep -q '^_start;libc.so.6;main;' "$T/body" || fail "cl:libc.so.6: no _start;libc.so.6;main: $(head -3 "$T/body")"
[ "$(awk '{ s += $NF } END { print s }' "$T/body")" = "$total" ] || fail "cl:libc.so.6 lost samples"
# The full path names the library too.
expect_get 200 '/api/top?n=0&tf=cl:/nonexistent/dir/libc.so.6'
[ "$(jq '[.rows[] | select(.name == "libc.so.6")] | length' "$T/body")" = 1 ] || fail "cl by path: $(cat "$T/body")"
# The timeline holds to the list: dropping fib leaves less.
expect_get 200 '/api/timeline'
all=$(jq '.total | add' "$T/body")
expect_get 200 '/api/timeline?tf=df:fib'
nofib=$(jq '.total | add' "$T/body")
[ "$nofib" -lt "$all" ] && [ "$nofib" -gt 0 ] || fail "timeline with df:fib: $nofib of $all"

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/transforms.test.mjs" "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
