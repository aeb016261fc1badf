#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# The hostile program built with AddressSanitizer, profiled by the agent
# (the ASan runtime preloaded first, as such programs need): same output
# as without the agent, no sanitizer report, a profile written.
. "$(dirname "$0")/lib.sh"
need_agent
need gcc
asan=$(gcc -print-file-name=libasan.so)
[ -e "$asan" ] || skip "gcc has no libasan.so"
gcc -O1 -g -fsanitize=address -o "$T/hostile-asan" "$KILN_SRC/tests/workloads/hostile.c" \
    -ldl -lpthread 2>"$T/gcc.err" || skip "cannot build with -fsanitize=address: $(head -1 "$T/gcc.err")"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
"$T/hostile-asan" "$WL/libplugin.so" > "$T/bare.txt" 2>&1 || fail "the ASan build fails on its own"
LD_PRELOAD="$asan $KILN_LIB" KILN_CPU=$T/h.pb.gz KILN_CPU_HZ=250 \
    "$T/hostile-asan" "$WL/libplugin.so" > "$T/agent.txt" 2> "$T/agent.err" ||
    { cat "$T/agent.err"; fail "the ASan build fails under the agent"; }
diff -u "$T/bare.txt" "$T/agent.txt" || fail "the output changed under the agent"
hasnt "$T/agent.err" "AddressSanitizer|runtime error"
has "$T/agent.err" "steps aside"
"$KILN" top -n 0 "$T/h.pb.gz" > "$T/top.txt"
has "$T/top.txt" "malloc_storm"
echo ok
