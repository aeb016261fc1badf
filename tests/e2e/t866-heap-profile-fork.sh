#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HEAP across fork: the parent dumps PREFIX.0001.heap with its own
# allocations only; the child dumps PREFIX.PID.0001.heap with its own
# (300 allocations, 7 leaked), never over the parent's file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"

expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/f" KILN_HEAP_SAMPLE=0 "$WL/heapfork"
has "$T/out" '^heapfork: parent done, child 0$'
p=$T/f.0001.heap
c=$(ls "$T"/f.[0-9]*.0001.heap 2>/dev/null | grep -v "^$p$" | head -1)
[ -s "$p" ] || fail "no parent dump"
[ -n "$c" ] && [ -s "$c" ] || { ls "$T"; fail "no child dump f.PID.0001.heap"; }
hexpect "$p" alloc_objects parent_work 100
hexpect "$p" alloc_objects child_work 0
hexpect "$c" alloc_objects child_work 300
hexpect "$c" inuse_objects child_work 7
hexpect "$c" alloc_objects parent_work 0
echo ok
