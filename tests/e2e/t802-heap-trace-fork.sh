#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A child after fork writes PATH.PID with its own events (and its parent's
# pid); the parent's trace never has the child's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

same_output "$WL/heapfork"
heapcheck "$T/h.trace" "$WL/heapfork"
expect_site parent_work allocs 100
expect_site parent_work live 0
[ -z "$(site child_work allocs)" ] || fail "the parent's trace has the child's events"
ppid=$(sed -n 's/^header pid=\([0-9]*\) .*/\1/p' "$T/check.txt")
kids=$(ls "$T" | grep -c '^h\.trace\.[0-9]*$')
[ "$kids" -eq 1 ] || { ls "$T"; fail "$kids child traces, want 1"; }
heapcheck "$T"/h.trace.[0-9]* "$WL/heapfork"
expect_total end 1
expect_site child_work allocs 300
expect_site child_work live 7
expect_site child_work live_bytes 2100
[ -z "$(site parent_work allocs)" ] || fail "the child's trace has the parent's events"
grep -q "^header pid=[0-9]* ppid=$ppid " "$T/check.txt" || { cat "$T/check.txt"; fail "child header without the parent's pid"; }
echo ok
