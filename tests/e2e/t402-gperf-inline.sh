#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inline frames: a gperftools profile of tests/workloads/inlined.c shows
# the code inlined into outer_loop as frames of their own, innermost
# first, with their lines.
. "$(dirname "$0")/lib.sh"

PROFILER=/usr/lib/x86_64-linux-gnu/libprofiler.so
[ -e "$PROFILER" ] || skip "gperftools' libprofiler.so is not installed (libgoogle-perftools-dev)"

LD_PRELOAD=$PROFILER CPUPROFILE=$T/prof CPUPROFILE_FREQUENCY=250 \
    "$WL/inlined" 1 2>/dev/null
[ -s "$T/prof" ] || fail "libprofiler wrote no profile"

expect_status 0 "$KILN" top "$T/prof"
cp "$T/out" "$T/top"
# Nearly all the time is in the inlined loop: mix_middle (its loop) and
# mix_inner (the multiply) hold it, outer_loop only by inclusion.
within "$(top_pct "$T/top" outer_loop 5)" 100 5 || { cat "$T/top" >&2; fail "outer_loop cum is not ~100%"; }
within "$(top_pct "$T/top" mix_middle 5)" 100 5 || { cat "$T/top" >&2; fail "mix_middle cum is not ~100%"; }
[ -n "$(top_pct "$T/top" mix_inner)" ] || { cat "$T/top" >&2; fail "mix_inner missing"; }

expect_status 0 "$KILN" convert "$T/prof" -o "$T/x.collapsed"
has "$T/x.collapsed" "(^|;)main;outer_loop;mix_middle;mix_inner [0-9]+$"
echo ok
