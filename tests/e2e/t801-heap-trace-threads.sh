#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Four producer threads allocate, a consumer thread frees (cross-thread
# frees): every block is freed, the counts are exact, the threads are named.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

same_output "$WL/heapthreads"
heapcheck "$T/h.trace" "$WL/heapthreads"
expect_total end 1
expect_total lost 0
expect_site produce allocs 20000
expect_site produce bytes 960000
expect_site produce live 0
expect_site main_leak allocs 3
expect_site main_leak live_bytes 2331
for n in producer-0 producer-1 producer-2 producer-3 consumer; do
    grep -q "^thread [0-9]* $n$" "$T/check.txt" || { cat "$T/check.txt"; fail "thread $n not named"; }
done
# The threads' stacks start at start_thread, with no frame of the agent's
# (its pthread_create trampoline) in between.
"$KILN" convert "$T/h.trace" -o "$T/h.collapsed"
has "$T/h.collapsed" "^(__)?clone3;start_thread;produce "
hasnt "$T/h.collapsed" "trampoline"
echo ok
