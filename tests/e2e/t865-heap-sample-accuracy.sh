#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# Sampling mode (the default, one sample per 524288 bytes): on heapmany,
# 2 GiB allocated in 524288 blocks of 1 to 8 KiB, the heap profile's
# estimates are within 8% of the truth (they scale each sample by
# 1/(1-exp(-size/R))).  About 4096 samples: eight runs gave object counts
# from -3.4% to +1.5% (a standard deviation near 1.5%), and one CI run
# +5.4%; 8% is five standard deviations, while a profile without the
# scaling would be off by half.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"

expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/acc" KILN_HEAP_INTERVAL=0 "$WL/heapmany"
has "$T/out" '^heapmany: done$'
f=$T/acc.0001.heap
bytes=$(hval "$f" alloc_space alloc_many)
objs=$(hval "$f" alloc_objects alloc_many)
within "$bytes" 2147483648 171798692 || fail "alloc_many: $bytes bytes estimated, want 2147483648 ±8%"
within "$objs" 524288 41943 || fail "alloc_many: $objs allocations estimated, want 524288 ±8%"
# nothing of it stays live
hexpect "$f" inuse_space alloc_many 0
# the period is the sampling rate
if command -v go >/dev/null 2>&1; then
    gopprof -raw "$f"
    has "$T/go.txt" '^Period: 524288$'
fi
echo ok
