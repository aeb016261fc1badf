#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every sample of `kiln record` carries its time: the numeric label "time"
# in nanoseconds since the profile's start (1 ms buckets), read by
# go tool pprof (-tags, -top still work), kept by kiln convert (pprof to
# pprof, perf script and back), and the reader of perf script text gives
# its records the same label.
. "$(dirname "$0")/lib.sh"
need_record
need go
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local

expect_status 0 "$KILN" record -q -F 499 -o "$T/r.pb.gz" -- "$WL/shares" 1
go tool pprof -top "$T/r.pb.gz" > "$T/top" 2>&1 || fail "go tool pprof -top failed"
has "$T/top" ' burn_a$'
go tool pprof -tags "$T/r.pb.gz" > "$T/tags" 2>&1 || fail "go tool pprof -tags failed"
has "$T/tags" '^ time: Total'
# time labels from 0 to the run's length, in whole milliseconds
times() { go tool pprof -raw "$1" 2>/dev/null | grep -o 'time:\[[0-9]* nanoseconds\]' | tr -dc '0-9\n'; }
times "$T/r.pb.gz" | sort -n > "$T/t1"
[ "$(wc -l < "$T/t1")" -gt 100 ] || fail "only $(wc -l < "$T/t1") samples with a time label"
awk '$1 % 1000000 { exit 1 }' "$T/t1" || fail "time labels are not in 1 ms buckets"
awk 'NR == 1 { a = $1 } END { exit !(a >= 0 && $1 - a >= 800000000 && $1 < 60e9) }' "$T/t1" ||
    fail "time labels $(head -1 "$T/t1")..$(tail -1 "$T/t1") do not span the 1 s run"
# pprof to pprof keeps them
expect_status 0 "$KILN" convert "$T/r.pb.gz" -o "$T/c.pb.gz"
times "$T/c.pb.gz" | sort -n | diff -q - "$T/t1" >/dev/null || fail "pprof to pprof changed the time labels"
# through perf script and back: the same times (1 ms buckets, origin the
# first sample)
expect_status 0 "$KILN" convert "$T/r.pb.gz" -o "$T/r.perf"
expect_status 0 "$KILN" convert "$T/r.perf" -o "$T/p.pb.gz"
times "$T/p.pb.gz" | sort -n > "$T/t2"
awk -v o="$(head -1 "$T/t1")" '{ printf "%.0f\n", $1 + o }' "$T/t2" | sort -un > "$T/t2o"
sort -un "$T/t1" | diff -q - "$T/t2o" >/dev/null ||
    { diff "$T/t1" "$T/t2o" | head; fail "perf script round trip changed the time labels"; }
echo ok
