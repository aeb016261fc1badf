#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve answers requests side by side with the answers it gives one
# at a time (issue 23 item 7): on a generated profile of 200,000 samples,
# 24 mixed requests (flame, top, calltree, sandwich, timeline with focus,
# ignore, hide and time-range selections, several asking for the same
# selection) are first asked one after another of one server, then all
# at once of a fresh one: each answer is byte-identical to its serial
# one, and each distinct selection was made once (/api/status's
# cache.made), the others waiting for it.  A repeated request is then a
# cache hit (cache.hits grows, cache.made does not) with the same bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
. "$(dirname "$0")/lib-serve-load.sh"
need curl
need jq
need cmp

big_profile 200000 30000
serve_start --http 127.0.0.1:0 "$T/big.pb.gz"
serve_loaded
[ "$STATUS" = 200 ] || fail "profiles: $STATUS"
names
get "/api/timeline?buckets=10&threads=1"
END=$(jq .end "$T/body")
[ "$END" -gt 1000000 ] || fail "timeline end $END"
a=$(q "$(ere "$(sed -n 3p "$T/names")")")
b=$(q "$(ere "$(sed -n 20p "$T/names")")")
c=$(q "$(ere "$(sed -n 60p "$T/names")")")
fn=$(q "$(sed -n 3p "$T/names")")
r="t0=$((END / 4))&t1=$((END / 2))"
# Eight selections (the first the unfiltered one the server warms).
sels=("" "focus=$a" "ignore=$b" "focus=$a&ignore=$c" "hide=$c" "$r" "focus=$b&$r" "ignore=$a&$r")
reqs=()
for i in $(seq 0 23); do
    s=${sels[$((i % 8))]}
    case $((i % 5)) in
    0) reqs+=("api/flame?width=1200&$s") ;;
    1) reqs+=("api/top?n=50&$s") ;;
    2) reqs+=("api/calltree?$s") ;;
    3) reqs+=("api/sandwich?width=800&fn=$fn&$s") ;;
    4) reqs+=("api/timeline?buckets=50&$s") ;;
    esac
done
ask() { curl -s -o "$T/$2.body" -w '%{http_code}' "$URL$1" > "$T/$2.status"; }
for i in "${!reqs[@]}"; do
    ask "${reqs[$i]}" "serial$i" || fail "curl ${reqs[$i]} failed"
done
serve_stop

serve_start --http 127.0.0.1:0 "$T/big.pb.gz"
serve_loaded
pids=()
for i in "${!reqs[@]}"; do
    ask "${reqs[$i]}" "par$i" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent curl failed"; done
for i in "${!reqs[@]}"; do
    s1=$(cat "$T/serial$i.status") s2=$(cat "$T/par$i.status")
    [ "$s1" = "$s2" ] || fail "${reqs[$i]}: $s2 at once, $s1 alone"
    # A sandwich of a function the selection drops is a 404; all else 200.
    case "$s1 ${reqs[$i]}" in 200*|"404 api/sandwich"*) ;; *) fail "${reqs[$i]}: $s1 $(cat "$T/serial$i.body")" ;; esac
    cmp -s "$T/serial$i.body" "$T/par$i.body" ||
        fail "${reqs[$i]}: the concurrent answer differs from the serial one"
done
status
# Nine: the timeline shows the whole run, so its request of "focus=$b&$r"
# selects focus=$b unranged.
jq -e '.cache.made == 9 and .cache.views == 9 and .cache.working == 0' "$T/st" >/dev/null ||
    fail "each selection made once: $(jq -c .cache "$T/st")"
made=$(jq .cache.made "$T/st") hits=$(jq .cache.hits "$T/st")
ask "${reqs[6]}" again
cmp -s "$T/serial6.body" "$T/again.body" || fail "a cache hit differs from the first answer"
status
jq -e ".cache.made == $made and .cache.hits == $((hits + 1))" "$T/st" >/dev/null ||
    fail "the repeat was not a cache hit: $(jq -c .cache "$T/st")"
serve_stop
echo ok
