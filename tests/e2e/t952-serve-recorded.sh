#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve on profiles kiln recorded: a CPU profile of the shares
# workload (60/30/10) in the browser (flame graph drawn, burn_a's share by
# search and by hover, module or file:line on hover, stage_a among burn_a's
# callers), served together with a heap trace of heapbasic (several inputs
# at once, each with its own sample types; the leaked table equals kiln
# top's).  See tests/browser/serve.test.mjs --recorded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need_record

expect_status 0 "$KILN" record -q -F 999 -o "$T/shares.pb.gz" -- "$WL/shares" 2
check_shares "$T/shares.pb.gz" 3
inputs=("$T/shares.pb.gz")
heap=false
if [ "${KILN_SANITIZE:-OFF}" != ON ] && [ -e "$KILN_LIB" ]; then
    # The agent cannot be preloaded into programs built without ASan.
    expect_status 0 "$KILN" heap -q -o "$T/h" -- "$WL/heapbasic"
    inputs+=("$T/h.trace.zst")
    heap=true
fi

# The colours kiln flame draws burn_a (the program's) and the deepest
# library frame in: the page must draw the same (one palette).
"$KILN" flame -o "$T/shares.svg" "$T/shares.pb.gz" || fail "kiln flame"
KILN_FLAME_FILLS=$(grep -o '<title>[^<]*</title><rect [^>]*fill="rgb([0-9,]*)"' "$T/shares.svg" |
    sed -E 's/<title>([^ ]+) \(.*fill="(rgb\([0-9,]+\))"/\1=\2/' |
    grep -E '^(burn_a|main|__libc_start_call_main|_start)=' | sort -u)
[ "$(printf '%s\n' "$KILN_FLAME_FILLS" | grep -c '^burn_a=')" = 1 ] ||
    fail "no single colour of burn_a in kiln flame's SVG: $KILN_FLAME_FILLS"
export KILN_FLAME_FILLS

serve_start --http 127.0.0.1:0 "${inputs[@]}"
expect_get 200 /api/profiles
[ "$(jq -r '.profiles[0].format' "$T/body")" = pprof ] || fail "profiles: $(cat "$T/body")"
expect_get 200 '/api/flame?search=%5Eburn_a%24'
pct=$(jq '100 * .matched / .total' "$T/body")
within "$pct" 60 5 || fail "burn_a matched $pct%, want 60±5"

# The source view: burn_a's cost per line of shares.c, read here, adds
# up to its flat; the costliest line is its loop.
expect_get 200 '/api/source?fn=burn_a'
/usr/bin/python3 - "$T/body" <<'PY' || { head -c 1500 "$T/body"; fail "source of burn_a"; }
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["files"] if x["file"].endswith("tests/workloads/shares.c")]
assert len(f) == 1 and f[0]["text"] and f[0]["why"] is None, d["files"]
lines = f[0]["lines"]
assert sum(l["flat"] for x in d["files"] for l in x["lines"]) == d["flat"], d["flat"]
top = max(lines, key=lambda l: l["flat"])
assert "x = x *" in top["text"] or "for (" in top["text"], top
assert any("burn_a" in l.get("text", "") for l in lines), "the function's own line as context"
PY
expect_get 400 '/api/source'
expect_get 404 '/api/source?fn=no_such_function'
has "$T/body" "no function 'no_such_function'"

if $heap; then
    expect_get 200 /api/profiles
    [ "$(jq -r '.profiles[1].format' "$T/body")" = heap-trace ] || fail "profiles: $(cat "$T/body")"
    jq -e '.profiles[1].types | map(.type) | index("leaked")' "$T/body" >/dev/null ||
        fail "no leaked type: $(cat "$T/body")"
    "$KILN" top -n 0 --sample-type leaked "$T/h.trace.zst" > "$T/top.txt" || fail "kiln top leaked"
    awk 'go { print $1, $2, $3, $4, $5, $NF } $1 == "flat" { go = 1 }' "$T/top.txt" > "$T/top.want"
    expect_get 200 '/api/top?p=1&type=leaked&n=0'
    jq -r '.rows[] | [.flat_str, .flat_pct, .sum_pct, .cum_str, .cum_pct, .name] | join(" ")' "$T/body" > "$T/top.got"
    diff -u "$T/top.want" "$T/top.got" || fail "/api/top?type=leaked differs from kiln top"
    grep -q ' leak_here$' "$T/top.got" || fail "no leak_here row"
    expect_get 200 '/api/sandwich?p=1&type=leaked&fn=leak_here'
    [ "$(jq '.cum' "$T/body")" = 20480 ] || fail "leak_here leaked: $(cat "$T/body")"
fi

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/serve.test.mjs" --recorded "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
