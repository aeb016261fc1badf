#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan serial
# Where perf_event_open is denied (a seccomp filter): the agent still
# profiles, and kiln record falls back to the in-process sampler by itself,
# saying why.
. "$(dirname "$0")/lib.sh"
need_agent

"$WL/noperf" true || skip "seccomp filters are not available here"
# cpuserver's requests vary in length: a program whose work repeats in
# lock-step with the scheduler tick aliases with tick-driven CPU timers
# (docs/agent.md), which is the timers' limit, not what is tested here.
# The splits are checked within 7 points: with two copies of the suite
# loading both CPUs, burn_c (qsort, memory-bound) measured 15.6% of 648
# samples, a bias of the tick-driven timers under load, not noise; this
# test is about the fallback working at all (t700 and t701 check the
# agent's accuracy, serially).
"$WL/noperf" env LD_PRELOAD="$KILN_LIB" KILN_CPU="$T/a.pb.gz" KILN_CPU_HZ=250 "$WL/cpuserver" 2 4 >/dev/null ||
    fail "the program failed under the agent"
check_server_split "$T/a.pb.gz" 7

# CPU-time timers tick at CONFIG_HZ (250 here): -F 250 is their best.
expect_status 0 "$WL/noperf" "$KILN" record -F 250 -o "$T/r.pb.gz" -- "$WL/cpuserver" 2 4
has "$T/err" "perf_event_open was refused"
has "$T/err" "falling back to --mode inject"
check_server_split "$T/r.pb.gz" 7
"$KILN" convert "$T/r.pb.gz" -o "$T/r.collapsed"
has "$T/r.collapsed" "worker;serve_a;burn_a "
# Explicit --mode inject, exit status passed through.
expect_status 0 "$KILN" record -q --mode inject -o "$T/i.pb.gz" -- "$WL/threads" 1
"$KILN" top "$T/i.pb.gz" > "$T/i.txt"
has "$T/i.txt" "spin_a"
has "$T/i.txt" "spin_b"
expect_status 3 "$KILN" record -q --mode inject -o "$T/x.pb.gz" -- sh -c 'exit 3'
expect_status 2 "$KILN" record --mode inject -p 1
echo ok
