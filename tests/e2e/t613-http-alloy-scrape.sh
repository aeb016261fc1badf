#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What Grafana Alloy's pyroscope.scrape does with its default profiles
# (process_cpu as profile?seconds=14 while goroutine, mutex, block and
# allocs are fetched beside it, every 15 s) against a server under load,
# for four rounds: every answer is 200 and a gzipped pprof that kiln and
# go tool pprof read, with the sample types Alloy expects; the server
# answers its own clients throughout and prints nothing it would not
# print alone.  (t610 covers each endpoint's answer on its own.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0 --threads 2
# pprof file $1 is read, its sample types $2 (a regex of go's -raw line)
valid() {
    [ "$(head -c 2 "$1" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "$1 is not gzipped"
    "$KILN" top "$1" > "$1.top" 2>&1 || { cat "$1.top"; fail "kiln cannot read $1"; }
    if command -v go >/dev/null; then
        HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$1" > "$1.raw" 2>&1 ||
            { head "$1.raw"; fail "go tool pprof cannot read $1"; }
        grep -Eq "^$2" "$1.raw" || { head "$1.raw"; fail "$1: sample types not /$2/"; }
    fi
}
last=$(work_count) || fail "the workload's own port does not answer"
for round in 1 2 3 4; do
    # process_cpu: a 14 s CPU profile, in the background.
    curl -s -o "$T/cpu.$round" -w '%{http_code}' --max-time 120 \
        "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=14" > "$T/cpu.$round.code" &
    cpu=$!
    for p in goroutine mutex block allocs; do
        expect_code 200 "debug/pprof/$p"
        cp "$T/body" "$T/$p.$round"
    done
    wait $cpu
    [ "$(cat "$T/cpu.$round.code")" = 200 ] || { head -c 500 "$T/cpu.$round"; fail "round $round: profile answered $(cat "$T/cpu.$round.code")"; }
    valid "$T/cpu.$round" "samples/count cpu/nanoseconds"
    valid "$T/goroutine.$round" "goroutine/count"
    valid "$T/mutex.$round" "contentions/count delay/nanoseconds"
    valid "$T/block.$round" "contentions/count delay/nanoseconds"
    valid "$T/allocs.$round" "alloc_objects/count alloc_space/bytes"
    has "$T/cpu.$round.top" " hash_payload$"
    has "$T/goroutine.$round.top" "handle_request|hash_payload|parse_header"
    now=$(work_count) || fail "round $round: the workload's own port stopped answering"
    [ "$now" -gt "$last" ] || fail "round $round: the workload stopped working ($last -> $now)"
    echo "round $round: all 200, $now requests handled"
    last=$now
done
stop_serve
# Its own output only: the lines it prints at start, nothing of kiln's.
awk '$1 !~ /^(http|work|hash_payload|nanosleep|ready|stopped)$/' "$T/s.out" > "$T/extra"
[ ! -s "$T/extra" ] || { cat "$T/extra"; fail "the server printed more than its own lines"; }
echo ok
