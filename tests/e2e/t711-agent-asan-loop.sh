#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# An ASan-built program (ASan runtime preloaded first) that forks while
# its threads and kiln's allocate, under the agent with CPU profiling at
# 999 Hz (the collector thread allocating), 100 times in a row (KILN_ASAN_LOOP_RUNS to change): no
# run hangs (each is bounded by `timeout`: 124 is a hang), every run
# prints what it prints bare, no sanitizer report.  The hang seen when
# issue 4 closed was a fork child inheriting an ASan allocator lock held
# by a kiln thread; t706 runs the whole hostile program once.
. "$(dirname "$0")/lib.sh"
need_agent
need gcc
need timeout
asan=$(gcc -print-file-name=libasan.so)
[ -e "$asan" ] || skip "gcc has no libasan.so"
gcc -O1 -g -fsanitize=address -o "$T/asanfork" "$KILN_SRC/tests/workloads/asanfork.c" \
    -lpthread 2>"$T/gcc.err" || skip "cannot build with -fsanitize=address: $(head -1 "$T/gcc.err")"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
"$T/asanfork" > "$T/bare.txt" 2>&1 || fail "the ASan build fails on its own"
runs=${KILN_ASAN_LOOP_RUNS:-100}
for i in $(seq 1 "$runs"); do
    rc=0
    rm -f "$T"/c.pb.gz* "$T"/h.trace*
    LD_PRELOAD="$asan $KILN_LIB" KILN_CPU=$T/c.pb.gz KILN_CPU_HZ=999 \
        timeout 300 "$T/asanfork" > "$T/agent.txt" 2> "$T/agent.err" || rc=$?
    [ $rc -ne 124 ] || fail "run $i of $runs hung"
    [ $rc -eq 0 ] || { cat "$T/agent.err"; fail "run $i of $runs exited $rc"; }
    diff -u "$T/bare.txt" "$T/agent.txt" || fail "run $i: the output changed under the agent"
    hasnt "$T/agent.err" "AddressSanitizer|runtime error"
    [ -s "$T/c.pb.gz" ] || fail "run $i: no CPU profile"
done
echo "ok ($runs runs)"
