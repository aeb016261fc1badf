#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf.data from `perf record -g` (frame pointers), read directly: kiln's
# sample total equals perf report's, the shares of burn_a/b/c agree within
# a point, the call chains are perf's, fork and exec are followed, and the
# same holds for pipe mode (`perf record -o -`).  kiln flame and convert read it too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

perf_record -q -F 999 -g -o "$T/fp.data" -- "$WL/shares" 1 >/dev/null 2>&1 ||
    fail "perf record failed"
compare_with_perf "$T/fp.data"
# The chain as perf has it: main -> run -> burn_a (run ~100% cum; gcc
# gives the small stage_a no frame, so a frame-pointer walk skips it).
cum=$(cum_pct "$T/kiln.top" run)
within "${cum:-0}" 100 3 || fail "run's cum is ${cum:-none}%, expected about 100%"
has "$T/kiln.top" ' main$'

# Labels and comments as kiln record writes them.
expect_status 0 "$KILN" convert "$T/fp.data" -o "$T/fp.pb.gz"
expect_status 0 "$KILN" convert "$T/fp.pb.gz" -o "$T/fp.collapsed"
has "$T/fp.collapsed" '(^|;)main;run;burn_a [0-9]+$'
if command -v go >/dev/null 2>&1; then
    go tool pprof -raw "$T/fp.pb.gz" > "$T/raw" 2>&1 || fail "go tool pprof cannot read the conversion"
    has "$T/raw" 'thread_name:\[shares\]'
    has "$T/raw" 'pid:\[[0-9]+\]'
    has "$T/raw" 'perf record .*shares 1'
fi
expect_status 0 "$KILN" flame "$T/fp.data" -o "$T/fp.svg"
has "$T/fp.svg" '<title>burn_a \('

# fork and exec: the parent's and the exec'ed child's code, each named
# from its own mappings, thread names from COMM records.
perf_record -q -F 999 -g -o "$T/fe.data" -- "$WL/forkexec" "$WL/shares" 0.5 \
    >/dev/null 2>&1 || fail "perf record of forkexec failed"
compare_with_perf "$T/fe.data" "parent_burn burn_a burn_b"
if command -v go >/dev/null 2>&1; then
    expect_status 0 "$KILN" convert "$T/fe.data" -o "$T/fe.pb.gz"
    go tool pprof -raw "$T/fe.pb.gz" > "$T/raw" 2>&1 || fail "go tool pprof cannot read the conversion"
    has "$T/raw" 'thread_name:\[forkexec\]'
    has "$T/raw" 'thread_name:\[shares\]'
fi

# Pipe mode: the same workload through a pipe.
perf record -q -F 999 -g -o - -- "$WL/shares" 1 2>/dev/null > "$T/pipe.data" ||
    fail "perf record -o - failed"
compare_with_perf "$T/pipe.data"
cat "$T/pipe.data" | "$KILN" top -n 5 - > "$T/stdin.top" 2>&1 || fail "kiln top - (perf.data on stdin) failed"
has "$T/stdin.top" ' burn_a$'
exit 0
