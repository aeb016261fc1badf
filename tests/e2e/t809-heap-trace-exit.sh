#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A process that ends with _exit() (no destructor runs) keeps its heap
# trace: all 1000 allocations, and the end record; so does a forked child
# that does so (a snapshot child), in PATH.PID.  Before: 0 recorded.
# Also: a relative KILN_HEAP_TRACE is resolved against the directory the
# program started in, for it and its children.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

same_output "$WL/heapexit"
heapcheck "$T/h.trace" "$WL/heapexit"
expect_site exit_work allocs 1000
expect_site exit_work live 1000
expect_total end 1

rm -f "$T"/h.trace*
same_output "$WL/heapexit" fork
kids=$(ls "$T" | grep -c '^h\.trace\.[0-9]*$')
[ "$kids" -eq 1 ] || { ls "$T"; fail "$kids child traces, want 1"; }
heapcheck "$T"/h.trace.[0-9]* "$WL/heapexit"
expect_site exit_work allocs 1000
expect_total end 1

# Relative path, and a child that changes directory before it starts its
# own program: PATH.PID lands beside PATH, in the starting directory.
rm -f "$T"/h.trace*
mkdir -p "$T/elsewhere"
(cd "$T" && LD_PRELOAD=$KILN_HEAP_PRELOAD KILN_HEAP_TRACE=h.trace \
    sh -c "cd elsewhere && '$WL/heapexit'; true" > /dev/null 2> "$T/rel.err") ||
    fail "the relative-path run failed: $(cat "$T/rel.err")"
[ -s "$T/h.trace" ] || { ls -R "$T"; fail "no trace in the starting directory"; }
[ -z "$(ls "$T/elsewhere")" ] || { ls "$T/elsewhere"; fail "a trace written in the child's directory"; }
kids=$(ls "$T" | grep -c '^h\.trace\.[0-9]*$')
[ "$kids" -ge 1 ] || { ls "$T"; fail "the exec'd child's PATH.PID is not in the starting directory"; }
echo ok
