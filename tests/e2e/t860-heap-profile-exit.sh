#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# HEAPPROFILE=PREFIX (alias of KILN_HEAP): one pprof heap profile,
# PREFIX.0001.heap, written at exit; with KILN_HEAP_SAMPLE=0 its numbers
# are exact: heapbasic's known allocations and its leak.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"

expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" HEAPPROFILE="$T/hp" KILN_HEAP_SAMPLE=0 \
    KILN_LOG=info "$WL/heapbasic"
has "$T/out" '^heapbasic: 6 aligned blocks, done$'
has "$T/err" "wrote the heap profile '$T/hp.0001.heap'"
[ -s "$T/hp.0001.heap" ] || fail "no $T/hp.0001.heap"
[ ! -e "$T/hp.0002.heap" ] || fail "more than one dump"
ls "$T" | grep -q '\.tmp' && fail "a temporary file was left"
# gzipped pprof
[ "$(head -c 2 "$T/hp.0001.heap" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "not gzip"
f=$T/hp.0001.heap
hexpect "$f" alloc_space alloc_small 100000
hexpect "$f" alloc_objects alloc_small 1000
hexpect "$f" inuse_space alloc_small 0
hexpect "$f" alloc_space alloc_calloc 32000
hexpect "$f" alloc_objects alloc_grow 30
hexpect "$f" alloc_space alloc_grow 4480
hexpect "$f" alloc_objects alloc_aligned 6
hexpect "$f" alloc_space leak_here 20480
hexpect "$f" inuse_space leak_here 20480
hexpect "$f" inuse_objects leak_here 5
hexpect "$f" alloc_space peak_big 8388608
hexpect "$f" inuse_space peak_big 0

# kiln top reads it; the default sample type is inuse_space
expect_status 0 "$KILN" top "$f"
has "$T/out" '^Type: inuse_space$'
has "$T/out" ' leak_here$'
expect_status 0 "$KILN" top --sample-type alloc_space -n 1 "$f"
has "$T/out" '^ +8MB .* peak_big$'

# go tool pprof reads the sample types and names
if command -v go >/dev/null 2>&1; then
    gopprof -sample_index=alloc_space -unit=B -top "$f"
    has "$T/go.txt" '^ +8388608B .* peak_big$'
    has "$T/go.txt" '^ +100000B .* alloc_small$'
    gopprof -sample_index=inuse_space -unit=B -top "$f"
    has "$T/go.txt" '^ +20480B .* leak_here$'
    gopprof -sample_index=alloc_objects -top "$f"
    has "$T/go.txt" '^ +1000 .* alloc_small$'
    gopprof -raw "$f"
    has "$T/go.txt" 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes'
    has "$T/go.txt" '^PeriodType: space bytes$'
fi

# KILN_HEAP is the same; without KILN_HEAP_SAMPLE it samples (524288)
expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/kh" KILN_LOG=info "$WL/heapbasic"
has "$T/err" 'heap profile: one sample per 524288 bytes allocated'
[ -s "$T/kh.0001.heap" ] || fail "no $T/kh.0001.heap"
# an 8 MiB block is always sampled, counted as 1/(1-exp(-16)) blocks
hexpect "$T/kh.0001.heap" alloc_objects peak_big 1
v=$(hval "$T/kh.0001.heap" alloc_space peak_big)
within "$v" 8388608 2 || fail "peak_big: $v bytes, want 8388608 (+1 for the scaling)"
# the program's behaviour is the same without the agent
expect_status 0 "$WL/heapbasic"
has "$T/out" '^heapbasic: 6 aligned blocks, done$'
# bad variables are said and ignored
expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/bad" KILN_HEAP_SIGNAL=nine \
    KILN_HEAP_INTERVAL=-5 "$WL/heapbasic"
has "$T/err" "bad KILN_HEAP_SIGNAL/HEAPPROFILESIGNAL 'nine': ignored"
has "$T/err" "bad KILN_HEAP_INTERVAL/HEAP_PROFILE_ALLOCATION_INTERVAL '-5'"
[ -s "$T/bad.0001.heap" ] || fail "no dump with bad variables"
echo ok
