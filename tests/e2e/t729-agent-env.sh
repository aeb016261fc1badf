#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# libkiln.so's variables are parsed in one place (runtime/env.c) with one
# set of rules: the KILN_ name wins over gperftools' where both are set;
# a bad value is said once, on stderr, and replaced by its default; a
# signal that cannot be caught (9) is refused for the CPU toggle as for
# the heap dumps; a bad KILN_LOG is said too; the program's output and
# status are those of a run without the agent.
. "$(dirname "$0")/lib.sh"
need_agent

"$WL/shares" 1 > "$T/bare.out"
mkdir -p "$T/d"
# KILN_CPU wins over CPUPROFILE; a relative path is the starting folder's.
(cd "$T/d" && LD_PRELOAD=$KILN_LIB KILN_CPU=k.prof CPUPROFILE=g.prof \
    KILN_CPU_SIGNAL=9 KILN_HEAP_SIGNAL=STOP KILN_CPU_HZ=0 KILN_LOG=verbose \
    "$WL/shares" 1 > "$T/a.out" 2> "$T/a.err") || fail "shares failed under the agent"
cmp -s "$T/bare.out" "$T/a.out" || fail "the program's output changed"
[ -s "$T/d/k.prof" ] || { cat "$T/a.err"; fail "no KILN_CPU profile"; }
[ ! -e "$T/d/g.prof" ] || fail "CPUPROFILE written though KILN_CPU was set"
has "$T/a.err" "bad KILN_CPU_SIGNAL/CPUPROFILESIGNAL '9': ignored"
has "$T/a.err" "bad KILN_HEAP_SIGNAL/HEAPPROFILESIGNAL 'STOP': ignored"
has "$T/a.err" "bad KILN_CPU_HZ/CPUPROFILE_FREQUENCY '0': using 99"
has "$T/a.err" "bad KILN_LOG 'verbose'"
n=$(grep -c "bad KILN_CPU_SIGNAL" "$T/a.err")
[ "$n" = 1 ] || fail "the bad signal said $n times"
# Signal 9 was not given a handler: the profile was written at exit, not
# toggled into k.prof.0.
[ ! -e "$T/d/k.prof.0" ] || fail "toggle mode with an uncatchable signal"
# The toggle without a profile's path: said at start (a `kill -12` would
# end the program, as without kiln).
LD_PRELOAD=$KILN_LIB CPUPROFILESIGNAL=12 "$WL/shares" 0.1 > /dev/null 2> "$T/s.err" ||
    fail "shares failed under the agent"
has "$T/s.err" "CPUPROFILESIGNAL 12 set without KILN_CPU/CPUPROFILE"
echo ok
