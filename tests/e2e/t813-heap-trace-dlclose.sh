#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A library dlopen()ed, allocating and dlclose()d at once (tests/workloads/
# heapdl.c with plugins/heapplug.c): its allocations are unwound through
# the library from the first one (the unwinder's table set learns of an
# object loaded since its last refresh), and named by the library's own
# functions and lines although the library is gone long before the trace
# is read, its first ones made by libc's strdup() for it (the dlclose() interposer writes the maps, library included,
# and the stacks so far first; heap profile dumps name them from the
# modules noted then).  Before: one frame, "[unknown]".
. "$(dirname "$0")/lib.sh"
need_agent

# (The summary is on stderr.)
"$KILN" heap -o "$T/k" -- "$WL/heapdl" "$WL/libheapplug.so" > "$T/out" 2>&1 ||
    { cat "$T/out"; fail "kiln heap heapdl failed"; }
sed -n '/most memory leaked/,/^$/p' "$T/out" > "$T/leaked"
has "$T/leaked" "256 KiB .* 64 blocks  plugin_alloc \(heapplug\.c:[0-9]+\) <- plugin_leak <- main"
has "$T/leaked" "16\.0 KiB .* 16 blocks  host_leak \(heapdl\.c:[0-9]+\) <- main"

# The agent alone, read by kiln convert: the same stacks.
env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP_TRACE="$T/h.zst" \
    "$WL/heapdl" "$WL/libheapplug.so" || fail "heapdl failed under the agent"
"$KILN" convert --sample-type leaked "$T/h.zst" -o "$T/h.collapsed" 2>"$T/err" ||
    { cat "$T/err"; fail "kiln convert of the trace failed"; }
has "$T/h.collapsed" "main;plugin_leak;plugin_alloc 262144$"
# The first allocations from the library go through libc: the walk stops
# in libc's caller, not in the leaf, and the set still learns of it.
has "$T/h.collapsed" "main;plugin_leak;plugin_dup;(__)?strdup 800$"
hasnt "$T/h.collapsed" "unknown"

# A heap profile dump at exit (HEAPPROFILE, every allocation sampled):
# the library's modules were noted at its dlclose(), as for CPU profiles.
env LD_PRELOAD="$KILN_HEAP_PRELOAD" HEAPPROFILE="$T/hp" KILN_HEAP_SAMPLE=1 \
    "$WL/heapdl" "$WL/libheapplug.so" || fail "heapdl failed under HEAPPROFILE"
"$KILN" convert --sample-type inuse_space "$T/hp.0001.heap" -o "$T/hp.collapsed" 2>"$T/err" ||
    { cat "$T/err"; fail "kiln convert of the heap dump failed"; }
has "$T/hp.collapsed" ";main;plugin_leak;plugin_alloc 262144$"
echo ok
