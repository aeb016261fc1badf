#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What continuous profilers scrape by default answers: Grafana Alloy asks
# for profile, allocs, mutex and block (and goroutine); mutex and block
# are valid, empty profiles with Go's sample types that go tool pprof
# reads, and ?debug=1 says why they are empty.  With libkiln.so alone (no
# malloc interposer, so no heap profiling) heap and allocs are such
# profiles too, with the heap's sample types, and ?debug=1 says how to get
# data.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0
for p in mutex block; do
    expect_code 200 "debug/pprof/$p"
    cp "$T/body" "$T/$p.pb.gz"
    [ "$(head -c 2 "$T/$p.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] ||
        fail "$p is not gzipped pprof"
    expect_code 200 "debug/pprof/$p?seconds=14"
    expect_code 200 "debug/pprof/$p?debug=1"
    has "$T/body" "^--- $p:"
    has "$T/body" "kiln records no"
    expect_code 400 "debug/pprof/$p?seconds=abc"
    if command -v go >/dev/null; then
        HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/$p.pb.gz" > "$T/raw.txt" 2>&1 ||
            { cat "$T/raw.txt"; fail "go tool pprof cannot read $p"; }
        has "$T/raw.txt" "contentions/count delay/nanoseconds"
    fi
done
# Alloy's other default paths answer in the same run.
expect_code 200 "debug/pprof/profile?seconds=1"
expect_code 200 "debug/pprof/allocs"
expect_code 200 "debug/pprof/"
has "$T/body" "mutex"
stop_serve

# libkiln.so alone: the heap paths answer, empty, and say why.
PRELOAD=$PRELOAD_CPU start_http cpu --http 127.0.0.1:0
for p in heap allocs; do
    expect_code 200 "debug/pprof/$p"
    cp "$T/body" "$T/$p.pb.gz"
    [ "$(head -c 2 "$T/$p.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] ||
        fail "$p without the interposer is not gzipped pprof"
    "$KILN" top "$T/$p.pb.gz" > "$T/top.txt" 2>&1 || { cat "$T/top.txt"; fail "kiln top cannot read $p"; }
    expect_code 200 "debug/pprof/$p?debug=1"
    has "$T/body" "^--- $p:"
    has "$T/body" "libkiln-malloc.so"
    if command -v go >/dev/null; then
        HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/$p.pb.gz" > "$T/raw.txt" 2>&1 ||
            { cat "$T/raw.txt"; fail "go tool pprof cannot read $p"; }
        has "$T/raw.txt" "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes"
    fi
done
has "$T/cpu.err" "heap profiling off"
expect_code 200 "debug/pprof/profile?seconds=1"
stop_serve
echo ok
