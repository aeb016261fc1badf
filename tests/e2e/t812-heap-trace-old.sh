#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HEAP_TRACE over a file an earlier run left: it is kept as
# PATH.old (an older PATH.old replaced), as perf keeps perf.data.old;
# before, the trace was opened with O_TRUNC over it.
. "$(dirname "$0")/lib.sh"
need_agent

echo "an earlier run's file" > "$T/h.zst"
env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP_TRACE="$T/h.zst" "$WL/heapbasic" > /dev/null ||
    fail "heapbasic failed under the agent"
[ "$(cat "$T/h.zst.old")" = "an earlier run's file" ] || fail "the earlier file was not kept as .old"
"$KILN" top "$T/h.zst" > "$T/top" || fail "the new trace does not read"
cp "$T/h.zst" "$T/first.zst"
env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP_TRACE="$T/h.zst" "$WL/heapbasic" > /dev/null ||
    fail "heapbasic failed under the agent (second run)"
cmp -s "$T/first.zst" "$T/h.zst.old" || fail "the first run's trace is not the .old of the second"
"$KILN" top "$T/h.zst" > "$T/top" || fail "the second trace does not read"
echo ok
