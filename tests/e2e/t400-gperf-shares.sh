#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gperftools CPU profile (libprofiler, CPUPROFILE) of the shares workload:
# kiln reads it, symbolizes it from the binaries, and shows burn_a/b/c at
# about 60/30/10% with the whole chain main -> run -> stage_X -> burn_X.
. "$(dirname "$0")/lib.sh"

PROFILER=/usr/lib/x86_64-linux-gnu/libprofiler.so
[ -e "$PROFILER" ] || skip "gperftools' libprofiler.so is not installed (libgoogle-perftools-dev)"

# 250 Hz: CONFIG_HZ=250 delivers no more (see FACTS.md).
LD_PRELOAD=$PROFILER CPUPROFILE=$T/prof CPUPROFILE_FREQUENCY=250 \
    "$WL/shares" 4 2>/dev/null
[ -s "$T/prof" ] || fail "libprofiler wrote no profile"

expect_status 0 "$KILN" top -n 20 "$T/prof"
cp "$T/out" "$T/top"
for f in burn_a:60 burn_b:30 burn_c:10; do
    name=${f%:*} want=${f#*:}
    got=$(top_pct "$T/top" "$name")
    [ -n "$got" ] || { cat "$T/top" >&2; fail "$name missing from kiln top"; }
    within "$got" "$want" 5 || { cat "$T/top" >&2; fail "$name: $got%, expected $want% +-5"; }
done
# cum% of the callers: run and main hold everything.
within "$(top_pct "$T/top" main 5)" 100 1 || fail "main is not at 100% cum"
within "$(top_pct "$T/top" run 5)" 100 1 || fail "run is not at 100% cum"
# The header's period: 4 ms per sample at 250 Hz, about 4 s in all.
# libprofiler's ITIMER_PROF loses signals when the machine is loaded
# (3.58 s seen under the parallel ASan suite), and the same work takes
# more CPU time there (5.19 s with two suites running); a misread period
# (1 ms or 10 ms per sample) would give about 1 s or 10 s.
has "$T/top" "of (2\.[5-9][0-9]*|[3-7](\.[0-9]+)?)s total"

# The chain, through the collapsed writer.
expect_status 0 "$KILN" convert "$T/prof" -o "$T/x.collapsed"
has "$T/x.collapsed" "(^|;)main;run;stage_a;burn_a [0-9]+$"
has "$T/x.collapsed" "(^|;)main;run;stage_b;burn_b [0-9]+$"
has "$T/x.collapsed" "(^|;)main;run;stage_c;burn_c [0-9]+$"
hasnt "$T/x.collapsed" "shares\+0x"

# pprof output is self-contained: names, file and line, build ID.
expect_status 0 "$KILN" convert "$T/prof" -o "$T/x.pb.gz"
if command -v go >/dev/null 2>&1; then
    HOME=$T GOCACHE=$T/go go tool pprof -traces "$T/x.pb.gz" >"$T/traces" 2>&1 ||
        { cat "$T/traces" >&2; fail "go tool pprof cannot read kiln's pprof"; }
    has "$T/traces" "burn_a"
    # Leaf first, then the callers in order.
    awk '/burn_a$/ { getline a; getline b; getline c; print a, b, c; exit }' "$T/traces" >"$T/chain"
    has "$T/chain" "stage_a +run +main"
    HOME=$T GOCACHE=$T/go go tool pprof -raw "$T/x.pb.gz" >"$T/raw" 2>&1
    has "$T/raw" "shares.c:[0-9]+"
    has "$T/raw" "\[[0-9a-f]{40}\]|build.?id|[0-9a-f]{40}"
fi
echo ok
