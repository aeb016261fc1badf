#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# /debug/pprof/heap and /debug/pprof/allocs in a program started with
# KILN_HTTP alone: heap profiling is on in sampling mode, the endpoints
# answer pprof that go tool pprof reads (straight from the URL), ?debug=1
# text, a browser's flame graph, ?seconds=N differences; exact numbers
# with KILN_HEAP_SAMPLE=0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"
need curl

# start NAME ENV...: heapserve with KILN_HTTP on a free port; sets PID, URL
start() {
    local name=$1 i
    shift
    env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HTTP=127.0.0.1:0 KILN_LOG=info "$@" "$WL/heapserve" \
        > "$T/$name.out" 2> "$T/$name.err" &
    PID=$!
    PIDS="$PIDS $PID"
    for i in $(seq 100); do grep -q '^ready' "$T/$name.out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/$name.err")
    [ -n "$port" ] || { cat "$T/$name.err"; fail "no HTTP server"; }
    URL=http://127.0.0.1:$port/debug/pprof
}
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT

start s
has "$T/s.err" 'heap profile: one sample per 524288 bytes allocated'
code=$(curl -s -o "$T/heap.pb.gz" -w '%{http_code}' "$URL/heap?gc=1")
[ "$code" = 200 ] || fail "/heap answered $code"
[ "$(head -c 2 "$T/heap.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "not gzip"
# the cache (64 blocks of 64 KiB) is sampled for sure (P(missed) = e^-8)
v=$(hval "$T/heap.pb.gz" inuse_space hold_cache)
[ "$v" -gt 0 ] || fail "hold_cache in use: $v bytes"
curl -s "$URL/heap?debug=1" > "$T/heap.txt"
has "$T/heap.txt" '^Type: inuse_space$'
has "$T/heap.txt" ' hold_cache$'
curl -s -H 'Accept: text/html,*/*;q=0.8' "$URL/heap" > "$T/heap.html"
has "$T/heap.html" '^<!DOCTYPE html>'
has "$T/heap.html" '<title>kiln: Heap profile \(inuse_space\) of heapserve'
has "$T/heap.html" '^window.KILN_OFFLINE = '
has "$T/heap.html" '"hold_cache"'
curl -s "$URL/allocs?format=svg" > "$T/allocs.svg"
has "$T/allocs.svg" 'Heap Flame Graph \(alloc_space\)'
curl -s "$URL/" > "$T/index.html"
has "$T/index.html" 'href="allocs"'
code=$(curl -s -o "$T/bad.txt" -w '%{http_code}' "$URL/allocs?seconds=-1")
[ "$code" = 400 ] || fail "a bad seconds answered $code"
has "$T/bad.txt" "bad seconds '-1'"
# allocations during the next 2 seconds: the churn, ~100 MB/s
curl -s "$URL/allocs?seconds=2&debug=1" > "$T/allocs.txt"
has "$T/allocs.txt" '^Type: alloc_space$'
has "$T/allocs.txt" '^Duration: 2\.0'
awk '/flat%/ { getline; print $NF; exit }' "$T/allocs.txt" | grep -qx churn ||
    { cat "$T/allocs.txt"; fail "churn is not the first row of allocs?seconds=2"; }
if command -v go >/dev/null 2>&1; then
    gopprof -sample_index=inuse_space -top "$URL/heap"
    has "$T/go.txt" 'Type: inuse_space'
    has "$T/go.txt" ' hold_cache$'
    gopprof -sample_index=alloc_space -top "$URL/allocs?seconds=1"
    has "$T/go.txt" ' churn$'
fi
kill -TERM "$PID"
wait "$PID" || fail "heapserve did not exit 0"

# every allocation: exact numbers, and heap?seconds=N is the change
start x KILN_HEAP_SAMPLE=0
curl -s -o "$T/x.pb.gz" "$URL/heap"
hexpect "$T/x.pb.gz" inuse_space hold_cache 4194304
hexpect "$T/x.pb.gz" inuse_objects hold_cache 64
hexpect "$T/x.pb.gz" alloc_objects hold_cache 64
curl -s -o "$T/d.pb.gz" "$URL/heap?seconds=1"
# the cache did not change; the leak grew by up to ~100 blocks of 4096
# (one per 10 ticks of 1 ms sleeps plus work traced in full: on a loaded
# machine a tick takes several ms, 18 blocks were seen once)
hexpect "$T/d.pb.gz" inuse_space hold_cache 0
d=$(hval "$T/d.pb.gz" inuse_objects grow_leak)
[ "$d" -ge 5 ] && [ "$d" -le 120 ] || fail "grow_leak grew by $d blocks in 1 s, want 5..120"
[ "$(hval "$T/d.pb.gz" inuse_space grow_leak)" = $((d * 4096)) ] || fail "grow_leak bytes"
curl -s -o "$T/a.pb.gz" "$URL/allocs"
hexpect "$T/a.pb.gz" alloc_space hold_cache 4194304
kill -TERM "$PID"
wait "$PID" || fail "heapserve did not exit 0"
echo ok
