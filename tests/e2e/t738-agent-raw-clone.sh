#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A thread made by a raw clone() (no pthread_create: the agent never sees
# it start) in CPU mode: the collector finds it in /proc/self/task within
# half a second and samples it from then on; the CPU it ran before is
# said, not lost silently: the log and the profile's comment give it
# ("not sampled: X s of CPU of 1 thread(s) before kiln could sample
# them").  The
# raw thread burns 0.6 s of CPU: its sampled time plus X is 0.6 s, within
# sampling noise (499 Hz, ±0.2 s).  Before: no word of it (a thread
# created and ended between two scans left no trace at all).
# Also a seccomp filter set by the system call instruction itself (no
# interposer sees it) refusing timer_create (EPERM) on the threads it
# starts: the collector's scan, on a thread the filter does not cover,
# makes their timers; the 2 x 1.2 s they burn are sampled but for what
# ran before, which is said; "could not be made" no longer counts them
# (before: counted again at every scan, and never taken back).
. "$(dirname "$0")/lib.sh"
need_agent

env LD_PRELOAD="$KILN_LIB" KILN_LOG=info KILN_CPU="$T/p.pb.gz" KILN_CPU_HZ=499 \
    "$WL/rawclone" 0.6 > "$T/out" 2> "$T/err" || { cat "$T/err"; fail "rawclone failed under the agent"; }
has "$T/out" '^rawclone: done$'
has "$T/err" 'not sampled: [0-9.]+ s of CPU of 1 thread\(s\) before kiln could sample them \(made by a raw clone'
missed=$(sed -n 's/.*not sampled: \([0-9.]*\) s of CPU of 1 thread.*/\1/p' "$T/err")
# The raw thread's sampled CPU: its samples' periods (its tid is not the
# pid), from the perf script form of the profile.
expect_status 0 "$KILN" convert "$T/p.pb.gz" -o "$T/p.perf" --to perf-script
sampled=$(awk '/cpu-clock:/ { split($2, id, "/"); if (id[1] != id[2]) s += $(NF-1) } END { printf "%.3f", s / 1e9 }' "$T/p.perf")
awk -v a="$missed" -v b="$sampled" 'BEGIN { exit !(a + b >= 0.4 && a + b <= 0.8) }' ||
    fail "the raw thread's 0.6 s: sampled $sampled s + said $missed s"
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/p.pb.gz" > "$T/raw" 2>&1 ||
        fail "go tool pprof cannot read the profile"
    has "$T/raw" "kiln: not sampled: [0-9.]+ s of CPU of 1 thread"
fi
"$WL/seccomphost" raw errno > /dev/null 2>&1 || skip "seccomp filters cannot be installed here"
env LD_PRELOAD="$KILN_LIB" KILN_LOG=info KILN_CPU="$T/s.pb.gz" KILN_CPU_HZ=499 \
    "$WL/seccomphost" raw errno > "$T/out" 2> "$T/err" || { cat "$T/err"; fail "seccomphost failed under the agent"; }
has "$T/out" '^seccomphost: done$'
hasnt "$T/err" 'whose CPU timer could not be made'
has "$T/err" 'not sampled: [0-9.]+ s of CPU of 2 thread\(s\) before kiln could sample them'
missed=$(sed -n 's/.*not sampled: \([0-9.]*\) s of CPU of 2 thread.*/\1/p' "$T/err")
"$KILN" top -n 0 --unit s "$T/s.pb.gz" > "$T/top" 2>/dev/null || "$KILN" top -n 0 "$T/s.pb.gz" > "$T/top"
expect_status 0 "$KILN" convert "$T/s.pb.gz" -o "$T/s.collapsed"
sampled=$(awk '/burn_after/ { s += $NF } END { printf "%.3f", s / 1e9 }' "$T/s.collapsed")
awk -v a="$missed" -v b="$sampled" 'BEGIN { exit !(a + b >= 2.0 && a + b <= 2.8) }' ||
    fail "the threads' 2.4 s: sampled $sampled s + said $missed s"
echo ok
