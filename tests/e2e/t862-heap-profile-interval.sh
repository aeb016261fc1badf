#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# HEAP_PROFILE_ALLOCATION_INTERVAL (alias of KILN_HEAP_INTERVAL): a dump
# every so many bytes allocated, numbered on, each with more allocated
# than the one before; then the exit dump.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"

# heapserve churns 200 MB (an amount, not a time: on a loaded machine
# 3 s of its sleepy loop allocate less); a dump every 40 MB
expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" HEAPPROFILE="$T/iv" KILN_HEAP_SAMPLE=0 \
    HEAP_PROFILE_ALLOCATION_INTERVAL=40000000 KILN_LOG=info "$WL/heapserve" --churn 200
has "$T/out" '^done$'
n=$(ls "$T" | grep -c '^iv\.[0-9][0-9][0-9][0-9]\.heap$')
[ "$n" -ge 3 ] || { cat "$T/err"; fail "$n dumps, want 3 or more"; }
grep -q 'heap profile dump 1 (interval)' "$T/err" || fail "the first dump was not for the interval"
prev=0
for i in $(seq "$n"); do
    f=$T/iv.$(printf %04d "$i").heap
    [ -s "$f" ] || fail "dumps not numbered 0001 on: no $f"
    a=$(hval "$f" alloc_space churn)
    # the last is the exit dump: under load the churn may have ended
    # before the interval dump ahead of it was taken (the dumper thread
    # writes it a little after the threshold is crossed)
    if [ "$i" = "$n" ]; then
        [ "$a" -ge "$prev" ] || fail "$f: churn alloc_space $a, below $prev"
    else
        [ "$a" -gt "$prev" ] || fail "$f: churn alloc_space $a, not above $prev"
    fi
    prev=$a
done
# the first interval dump comes after about 40 MB, not before
a=$(hval "$T/iv.0001.heap" alloc_space churn)
[ "$a" -ge 30000000 ] || fail "the first dump came after $a bytes of churn"
# KILN_HEAP_INTERVAL=0: the exit dump only
expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/no" KILN_HEAP_INTERVAL=0 "$WL/heapserve" 1
[ "$(ls "$T" | grep -c '^no\.')" = 1 ] || fail "dumps with KILN_HEAP_INTERVAL=0"
echo ok
