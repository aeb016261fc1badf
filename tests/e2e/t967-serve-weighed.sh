#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A selection by focus, ignore and time range is first made in kiln serve
# as weights over the input, without a copy of its samples (issue 23 item
# 7): its flame graph, sandwich, top tables and call tree levels equal
# those of the same selection made by a copy (forced here by a hide= that
# hides nothing: hide is made by a copy only); and a request that reads
# more than those (labels, summary, timeline, stack chart, download) has
# the copy made then, its answer equal to the copy's, after which the
# flame graph is still the same.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
. "$(dirname "$0")/lib-serve-load.sh"
need curl
need jq

big_profile 30000 3000
serve_start --http 127.0.0.1:0 "$T/big.pb.gz"
serve_loaded
[ "$STATUS" = 200 ] || fail "profiles: $STATUS"
names
end=$(curl -s "${URL}api/timeline?buckets=10&threads=1" | jq .end)
[ "$end" -gt 0 ] || fail "no time range in the input: $end"
nohide=$(q '^no such function$')

# same PATH SEL: PATH with SEL (weighed) and with SEL&hide=nothing (a
# copy) answer the same JSON.
same() {
    get "$1$2"
    [ "$STATUS" = 200 ] || fail "$1$2: $STATUS $(cat "$T/body")"
    jq -S . "$T/body" > "$T/a"
    get "$1$2&hide=$nohide"
    [ "$STATUS" = 200 ] || fail "$1$2&hide=: $STATUS $(cat "$T/body")"
    jq -S . "$T/body" > "$T/b"
    cmp -s "$T/a" "$T/b" || fail "$1$2 differs from its copy's: $(diff "$T/a" "$T/b" | head -20)"
}
n=0
for k in 3 8 15 40; do
    f=$(q "$(ere "$(sed -n "${k}p" "$T/names")")")
    g=$(q "$(ere "$(sed -n "$((k + 1))p" "$T/names")")")
    fn=$(q "$(sed -n "${k}p" "$T/names")")
    for sel in "focus=$f" "ignore=$g" "focus=$f&ignore=$g" \
               "t0=$((end / 5))&t1=$((end / 2))" "ignore=$g&t0=$((end / 3))&t1=$end"; do
        same "/api/flame?width=1200&" "$sel"
        same "/api/top?n=40&" "$sel"
        same "/api/top?n=40&lines=1&" "$sel"
        same "/api/calltree?open=4&" "$sel"
        same "/api/calltree?reverse=1&" "$sel"
        same "/api/sandwich?width=900&fn=$fn&" "$sel"
        n=$((n + 1))
    done
done
# Made whole when asked for more: each of these after the flame graph of
# a new selection (weighed), equal to the copy's; the flame graph after.
for what in "/api/labels?" "/api/summary?" "/api/timeline?buckets=40&threads=1&" \
            "/api/stackchart?" "/api/download?format=collapsed&"; do
    f=$(q "$(ere "$(sed -n "$((20 + n))p" "$T/names")")")
    n=$((n + 1))
    sel="focus=$f&t0=$((end / 4))&t1=$end"
    expect_get 200 "/api/flame?width=1200&$sel"
    cp "$T/body" "$T/flame1"
    if [ "$what" = "/api/summary?" ]; then
        get "$what$sel"; jq -S 'del(.kiln_version)' "$T/body" > "$T/a"
        get "$what$sel&hide=$nohide"; jq -S 'del(.kiln_version)' "$T/body" > "$T/b"
        cmp -s "$T/a" "$T/b" || fail "$what differs: $(diff "$T/a" "$T/b" | head)"
    elif [ "$what" = "/api/download?format=collapsed&" ]; then
        get "$what$sel"; cp "$T/body" "$T/a"
        get "$what$sel&hide=$nohide"; cp "$T/body" "$T/b"
        [ -s "$T/a" ] || fail "empty download"
        cmp -s "$T/a" "$T/b" || fail "$what differs"
    else
        same "$what" "$sel"
    fi
    expect_get 200 "/api/flame?width=1200&$sel"
    cmp -s "$T/flame1" "$T/body" || fail "the flame graph changed once $what made the view whole"
done
serve_stop
echo "ok ($n selections)"
