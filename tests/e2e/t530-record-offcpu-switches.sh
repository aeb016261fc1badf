#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record --off-cpu at many context switches (issue 27 item 6), on
# tests/workloads/switches (two threads handing a turn to each other
# through a condition variable, then snooze's nanosleep, all 24 frames of
# about 256 bytes deep).
#   Stacks: the default copies 2 KiB of stack per switch; the frames near
#     the leaf come from its CFI and the rest from the frame-pointer chain,
#     so snooze (the caller of libc's nanosleep -> clock_nanosleep, which
#     a frame-pointer walk skips) sits between deep and nanosleep, under
#     main.
#   Memory: kiln's peak RSS (ru_maxrss, its whole life) when recording
#     ROUNDS and 2 x ROUNDS rounds (over 1M switches): twice the switches
#     must not mean twice the memory.  Where kiln cannot keep up, the
#     records wait in the rings and the kernel counts what it drops; kiln
#     does not buffer them without bound (388 MB against 25 MB before).
. "$(dirname "$0")/lib.sh"
need_record
need python3
if ! "$KILN" record -q --off-cpu -o "$T/probe.pb.gz" -- true >/dev/null 2>"$T/probe.err"; then
    grep -q 'sched:sched_switch' "$T/probe.err" || { cat "$T/probe.err"; fail "kiln record --off-cpu failed"; }
    skip "kiln record --off-cpu cannot trace here: $(head -1 "$T/probe.err")"
fi

# Stacks.
"$KILN" record -q --off-cpu -o "$T/s.pb.gz" -- "$WL/switches" 2000 > "$T/m" 2>"$T/err" ||
    { cat "$T/err"; fail "kiln record --off-cpu failed"; }
"$KILN" convert -q "$T/s.pb.gz" -o "$T/s.folded" || fail "kiln convert failed"
has "$T/s.folded" '(^|;)main;(deep;)+snooze;[^;]*nanosleep'
has "$T/s.folded" '(^|;)(deep;)+play;ping_wait;'
has "$T/s.folded" '(^|;)(deep;)+play;pong_wait;'

# Memory: kiln's ru_maxrss, in KiB, recording ROUNDS rounds.  Under ASan
# its quarantine (256 MB) keeps each freed block a while, so that the
# peak grows with the frees whatever kiln holds (168 then 368 MB in a CI
# run): off for these runs (the stacks above ran with it).
if [ "${KILN_SANITIZE:-OFF}" = ON ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
fi
maxrss() {
    python3 - "$KILN" record -q --off-cpu -o "$T/m.pb.gz" -- "$WL/switches" "$1" <<'PY'
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if r.returncode:
    sys.stderr.write(r.stderr.decode())
    sys.exit(1)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
m1=$(maxrss 250000) || fail "kiln record --off-cpu of 250000 rounds failed"
m2=$(maxrss 500000) || fail "kiln record --off-cpu of 500000 rounds failed"
echo "kiln's peak RSS: ${m1} KiB for 250000 rounds, ${m2} KiB for 500000"
awk -v a="$m1" -v b="$m2" 'BEGIN { exit !(b < 2 * a) }' ||
    fail "twice the switches took ${m2} KiB against ${m1} KiB: memory grows with the switches"
echo ok
