#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# JIT code named through /tmp/perf-PID.map; kernel frames with --kernel;
# SIGTERM and SIGINT stop the recording and still write the profile.
. "$(dirname "$0")/lib.sh"
need_record

if [ "$(uname -m)" = x86_64 ]; then
    expect_status 0 "$KILN" record -q -F 499 -o "$T/jit.pb.gz" -- "$WL/jit" 1 rm
    "$KILN" top "$T/jit.pb.gz" > "$T/jit.txt"
    p=$(top_pct "$T/jit.txt" jit_spin)
    awk -v p="${p:-0}" 'BEGIN { exit !(p > 80) }' || { cat "$T/jit.txt"; fail "jit_spin at ${p:-none}%"; }
fi

if [ "$(id -u)" -eq 0 ]; then
    # getrandom spends its time in the kernel: with --kernel the chain
    # goes from kernel functions through the syscall into rand_loop.
    expect_status 0 "$KILN" record -q -F 999 --kernel -o "$T/k.pb.gz" -- "$WL/getrandom" 1
    "$KILN" convert "$T/k.pb.gz" -o "$T/k.collapsed"
    has "$T/k.collapsed" "rand_loop;(__)?getrandom;.*entry_SYSCALL_64"
    "$KILN" top -n 0 "$T/k.pb.gz" > "$T/k.txt"
    has "$T/k.txt" "get_random|chacha|_copy_to_user|urandom"
    # Without --kernel, no kernel frames.
    expect_status 0 "$KILN" record -q -F 999 -o "$T/u.pb.gz" -- "$WL/getrandom" 0.5
    "$KILN" convert "$T/u.pb.gz" -o "$T/u.collapsed"
    hasnt "$T/u.collapsed" "entry_SYSCALL_64"
fi

# SIGTERM to kiln: the command is stopped, the profile written, and kiln
# exits with the command's status (143 = 128 + SIGTERM).
# The signal comes once the command has run under kiln for 0.5 s of CPU
# time (about 250 samples, 150 in burn_a), however long that takes.
"$KILN" record -q -F 499 -o "$T/term.pb.gz" -- "$WL/shares" 30 & kpid=$!
wait_for "kiln record to run shares" child_running $kpid "$WL/shares" >/dev/null
wait_cpu "$(child_running $kpid "$WL/shares")" 0.5
kill -TERM $kpid
rc=0; wait $kpid || rc=$?
[ $rc -eq 143 ] || fail "exit $rc after SIGTERM, want 143"
"$KILN" top "$T/term.pb.gz" > "$T/term.txt" || fail "no profile after SIGTERM"
has "$T/term.txt" "burn_a"

# SIGINT to kiln recording -p: stops and writes.
# The signal comes once kiln has started its ring reader (it enables the
# events right after) and the target has then run 0.5 s of CPU time.
"$WL/shares" 30 & spid=$!
wait_for "shares to start" runs $spid "$WL/shares"
"$KILN" record -q -p $spid -o "$T/int.pb.gz" & kpid=$!
wait_for "kiln record's reader thread" has_threads $kpid 2
wait_cpu $spid 0.5
kill -INT $kpid
rc=0; wait $kpid || rc=$?
kill $spid; wait $spid 2>/dev/null
[ $rc -eq 0 ] || fail "exit $rc after SIGINT with -p"
"$KILN" top "$T/int.pb.gz" > "$T/int.txt"
has "$T/int.txt" "burn_a"
echo ok
