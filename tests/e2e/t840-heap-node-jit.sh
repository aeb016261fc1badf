#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln heap of node: the allocations a JIT-compiled JS function makes
# (Buffer.alloc) have stacks through its JIT frame, named from the
# /tmp/perf-PID.map node writes (--perf-basic-prof), and through V8's
# builtins, which node runs from a second mapping of its own file made
# after the trace's first maps (the writer writes the maps again when a
# new stack has an address they do not cover).  Before: the walk ended
# at the first JIT caller; then, walking on, 70 of the 120 stacks
# through the JIT function had two [unknown] frames (the builtins').
# ctest-labels: noasan
. "$(dirname "$0")/lib.sh"
need_agent
need_node_perfmap
JS=$KILN_SRC/tests/workloads/js/allocjit.js

trap '[ ! -s "$T/pid" ] || rm -f "/tmp/perf-$(cat "$T/pid").map"; rm -rf "$T"' EXIT
expect_status 0 "$KILN" heap -o "$T/h" -- node --perf-basic-prof "$JS" 300 "$T/pid"
expect_status 0 "$KILN" convert --to perf-script "$T/h.trace.zst" -o "$T/h.txt"
# The JIT function, by its map's name, calls into the builtins and down
# to node's allocator.
awk '/^\t/ { s = s "|" $0; next } { if (s != "") print s; s = "" } END { if (s != "") print s }' \
    "$T/h.txt" > "$T/stacks"
grep 'NodeArrayBufferAllocator::Allocate' "$T/stacks" | grep -q 'JS:.kilnMakeBuffers ' ||
    { head -c 3000 "$T/h.txt" >&2; fail "no allocation's stack runs through JS kilnMakeBuffers"; }
grep 'JS:.kilnMakeBuffers ' "$T/stacks" | grep -q 'Builtins_' ||
    fail "no stack through kilnMakeBuffers names a builtin"
# Of the stacks through it (each a distinct stack of the trace), none
# with an unnamed frame but by chance (before: 70 of 120 had two).
jit=$(grep -c 'JS:.kilnMakeBuffers ' "$T/stacks")
unknown=$(grep 'JS:.kilnMakeBuffers ' "$T/stacks" | grep -c '\[unknown\] (' || true)
echo "$unknown of $jit stacks through kilnMakeBuffers have an unnamed frame"
[ $((unknown * 20)) -le "$jit" ] ||
    { grep 'JS:.kilnMakeBuffers ' "$T/stacks" | grep '\[unknown\] (' | head -3 | tr '|' '\n' >&2
      fail "$unknown of $jit stacks through kilnMakeBuffers have an [unknown] frame"; }
echo ok
