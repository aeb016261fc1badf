#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# CPUPROFILESIGNAL's stop followed at once by the program's exit: the
# stop's PATH.0 is written whole every time (the relay's write was cut by
# the process's end, or its temporary taken by the exit's own write, in 5
# runs of 6: the exit now waits for a toggle under way), and no other
# file or temporary is left.  As libprofiler, which writes it 5/5.
. "$(dirname "$0")/lib.sh"
need_agent

seen=0
for i in $(seq 10); do
    rm -rf "$T/d"; mkdir "$T/d"
    LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/d/te.prof CPUPROFILESIGNAL=12 \
        "$WL/toggleexit" 12 > "$T/out" 2> "$T/err" || { cat "$T/err"; fail "run $i failed"; }
    has "$T/out" "^toggleexit: done$"
    [ -s "$T/d/te.prof.0" ] || { ls -la "$T/d"; fail "run $i: no te.prof.0"; }
    [ "$(ls "$T/d")" = te.prof.0 ] || { ls -la "$T/d"; fail "run $i: files beside te.prof.0"; }
    "$KILN" top "$T/d/te.prof.0" > "$T/top" || fail "run $i: te.prof.0 does not read"
    grep -q " burn_toggle$" "$T/top" && seen=$((seen + 1))
done
# The start is asynchronous too (the relay's): on a loaded machine a
# run's window may miss the burn, not all ten.
[ "$seen" -gt 0 ] || fail "burn_toggle in no profile of ten"
echo ok
