#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A newer request of the same page stops an older one's computation in
# kiln serve (issue 23 item 7; the page sends page=ID&seq=N with each
# request): on a generated profile of 400,000 samples,
#  - a slow flame graph (ignore one function and hide another: a
#    filtered copy of nearly every sample, each added again without the
#    hidden frames) asked with page=t&seq=N is in flight ("filtering" in
#    /api/status); the unfiltered flame graph asked with page=t&seq=N+1
#    is answered 200, and the slow one ends 409 "cancelled: a newer
#    request of page 't' came meanwhile", its making dropped (not in the
#    cache: asked again without a page it is made anew and answered);
#  - a request of another page is not stopped by it, and a request whose
#    seq is older than its page's newest is refused at once (409).
# A try whose making ended before the newer request came is tried again
# with another function (no time bound).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
. "$(dirname "$0")/lib-serve-load.sh"
need curl
need jq

big_profile 400000 100000
serve_start --http 127.0.0.1:0 "$T/big.pb.gz"
serve_loaded
[ "$STATUS" = 200 ] || fail "profiles: $STATUS"
names

job() { status; jq -r '[.jobs[] | select(.what == "filtering")][0].id // empty' "$T/st"; }
ok=
seq=0
for try in $(seq 1 8); do
    fn=$(q "$(ere "$(sed -n "$((100 + try))p" "$T/names")")")
    hfn=$(q "$(ere "$(sed -n "$((50 + try))p" "$T/names")")")
    seq=$((seq + 2))
    # The views kept before this try (an earlier try's slow view, made
    # before its newer request came, stays; the unfiltered one may be
    # there already): at most one more after it, the unfiltered one.
    status
    views=$(jq .cache.views "$T/st")
    curl -s -o "$T/slow.body" -w '%{http_code}' \
        "${URL}api/flame?width=1200&ignore=$fn&hide=$hfn&page=t&seq=$seq" > "$T/slow.status" &
    slow=$!
    running=
    while kill -0 "$slow" 2>/dev/null; do
        running=$(job)
        [ -n "$running" ] && break
    done
    if [ -n "$running" ]; then
        expect_get 200 "/api/flame?width=1200&page=t&seq=$((seq + 1))"
    fi
    wait "$slow" || fail "curl of the slow request failed"
    st=$(cat "$T/slow.status")
    if [ "$st" = 409 ]; then
        jq -e '.error == "cancelled: a newer request of page '"'t'"' came meanwhile"' "$T/slow.body" \
            >/dev/null || fail "409 says: $(cat "$T/slow.body")"
        status
        jq -e ".jobs == [] and .cache.working == 0 and .cache.views <= $views + 1" "$T/st" >/dev/null ||
            fail "the cancelled view stayed: $(cat "$T/st")"
        # Asked again (no page): made anew, answered.
        made=$(jq .cache.made "$T/st")
        expect_get 200 "/api/flame?width=1200&ignore=$fn&hide=$hfn"
        status
        jq -e ".cache.made == $((made + 1))" "$T/st" >/dev/null || fail "not made anew: $(cat "$T/st")"
        ok=1
        break
    fi
    [ "$st" = 200 ] || fail "the slow request: $st $(cat "$T/slow.body")"
done
[ -n "$ok" ] || fail "the slow request was never cancelled in flight (8 tries)"

# An older seq of a page is refused at once; another page is not.
seq=$((seq + 10))
expect_get 200 "/api/top?n=5&page=t&seq=$seq"
expect_get 409 "/api/top?n=5&page=t&seq=$((seq - 1))"
jq -e '.error | test("newer request of page")' "$T/body" >/dev/null || fail "409 says: $(cat "$T/body")"
expect_get 200 "/api/top?n=5&page=u&seq=1"
expect_get 400 "/api/top?n=5&page=t&seq=x"
serve_stop
echo ok
