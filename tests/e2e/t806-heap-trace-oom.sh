#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Under `ulimit -v` the program's allocations fail: it behaves as without
# the agent and the trace stays readable, every block it got freed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

(ulimit -v 400000; same_output "$WL/heapoom") || exit $?
grep -q "ran out" "$T/agent.txt" || fail "heapoom never ran out of memory"
heapcheck "$T/h.trace" "$WL/heapoom"
expect_total end 1
n=$(site grab allocs)
[ "${n:-0}" -gt 50 ] || { cat "$T/check.txt"; fail "only ${n:-0} blocks traced"; }
expect_site grab live 0
echo ok
