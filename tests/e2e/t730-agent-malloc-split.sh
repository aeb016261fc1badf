#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# With heap profiling off, no allocation passes through kiln (SPEC 3): the
# malloc interposer is libkiln-malloc.so, a library of its own, and
# libkiln.so preloaded for a CPU profile leaves every malloc, free and
# operator new of the program bound to the C library (before the split,
# each went through kiln's hook: 0.9% of a malloc-heavy server's CPU).
# Heap variables with libkiln.so alone change nothing in the program and
# say how to fix it; both preloaded do everything; the interposer alone
# (libkiln.so then loaded behind the C library, its own hooks of _exit,
# exec and fork unreached) is said, with the fix.
. "$(dirname "$0")/lib.sh"
need_agent

family="malloc free calloc realloc posix_memalign aligned_alloc memalign _Znwm _ZdlPv"
nm -D --defined-only "$KILN_LIB" | awk '{ print $3 }' > "$T/core.syms"
nm -D --defined-only "$KILN_MALLOC_LIB" | awk '{ print $3 }' > "$T/malloc.syms"
for f in $family; do
    grep -qx "$f" "$T/core.syms" && fail "libkiln.so defines $f"
    grep -qx "$f" "$T/malloc.syms" || fail "libkiln-malloc.so does not define $f"
done
readelf -d "$KILN_MALLOC_LIB" | grep -q 'NEEDED.*\[libkiln\.so\]' ||
    fail "libkiln-malloc.so does not load libkiln.so"

# What the dynamic loader binds: nothing of the malloc family to kiln.
LD_DEBUG=bindings LD_DEBUG_OUTPUT=$T/ld LD_PRELOAD=$KILN_LIB KILN_CPU=$T/c.pb.gz \
    "$WL/heapcxx" > "$T/cpu.out" 2> "$T/cpu.err" || fail "heapcxx failed under libkiln.so"
[ -s "$T/c.pb.gz" ] || fail "no CPU profile"
cat "$T"/ld.* > "$T/bindings.txt"
grep -Eq "normal symbol \`(malloc|_Znwm)'" "$T/bindings.txt" ||
    fail "LD_DEBUG=bindings shows no malloc binding at all"
grep -E "to [^ ]*libkiln[^ ]* \[0\]: normal symbol \`(malloc|free|calloc|realloc|_Znwm|_ZdlPv)'" \
    "$T/bindings.txt" && fail "an allocation function is bound to kiln with heap profiling off"
# With the interposer, they are (the test can see a binding to kiln).
LD_DEBUG=bindings LD_DEBUG_OUTPUT=$T/ldm LD_PRELOAD=$KILN_HEAP_PRELOAD KILN_CPU=$T/m.pb.gz \
    "$WL/heapcxx" > /dev/null 2>&1 || fail "heapcxx failed under libkiln-malloc.so and libkiln.so"
cat "$T"/ldm.* | grep -Eq "to [^ ]*libkiln-malloc\.so \[0\]: normal symbol \`malloc'" ||
    fail "with libkiln-malloc.so, malloc is not bound to it"
[ -s "$T/m.pb.gz" ] || fail "no CPU profile under libkiln-malloc.so and libkiln.so"

# Heap variables, libkiln.so alone: the same output and status as bare, no
# file, and the fix said.
"$WL/heapbasic" > "$T/bare.out" 2>/dev/null || fail "heapbasic failed bare"
for v in "HEAPPROFILE=$T/hp" "KILN_HEAP=$T/kh" "KILN_HEAP_TRACE=$T/h.trace"; do
    env LD_PRELOAD="$KILN_LIB" "$v" "$WL/heapbasic" > "$T/alone.out" 2> "$T/alone.err" ||
        fail "heapbasic failed with $v and libkiln.so alone"
    diff -u "$T/bare.out" "$T/alone.out" || fail "$v changed the program's output"
    has "$T/alone.err" "needs kiln's malloc interposer.*LD_PRELOAD='.*/libkiln-malloc\.so .*/libkiln\.so'"
done
ls "$T"/hp* "$T"/kh* "$T"/h.trace* 2>/dev/null && fail "a heap file was written without the interposer"

# Both: heap and CPU profiles.
env LD_PRELOAD="$KILN_HEAP_PRELOAD" HEAPPROFILE="$T/hp" KILN_HEAP_SAMPLE=0 \
    KILN_CPU="$T/both.pb.gz" "$WL/heapbasic" > /dev/null 2> "$T/both.err" ||
    fail "heapbasic failed under libkiln-malloc.so and libkiln.so"
[ -s "$T/hp.0001.heap" ] || fail "no heap profile under libkiln-malloc.so and libkiln.so"
[ -s "$T/both.pb.gz" ] || fail "no CPU profile under libkiln-malloc.so and libkiln.so"
"$KILN" top --sample-type inuse_space "$T/hp.0001.heap" > "$T/top.txt" || fail "kiln top of the heap profile"
has "$T/top.txt" " leak_here$"
hasnt "$T/both.err" "behind the C library"

# The interposer alone: its dependency libkiln.so comes after the C
# library, so _exit is not kiln's: said, with the fix.
env LD_PRELOAD="$KILN_MALLOC_LIB" KILN_HEAP_TRACE="$T/x.trace" "$WL/heapexit" \
    > /dev/null 2> "$T/behind.err" || fail "heapexit failed under libkiln-malloc.so alone"
has "$T/behind.err" "libkiln.so is loaded behind the C library.*LD_PRELOAD='.*/libkiln-malloc\.so .*/libkiln\.so'"
echo ok
