#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# exec keeps the pid: nothing an image recorded is lost.  The image
# before writes its last events first; the new image keeps that trace as
# PATH.old (PATH.old.2, ... after more execs, in the order the images ran)
# and writes its own to PATH, as the CPU profile's rule.  Before: the new
# image truncated PATH (first_image's 300 allocations gone).  Also through
# execl (glibc's bypasses execve's interposer), in a forked child
# (PATH.PID.old), and kiln heap follows the program into its new image;
# a FIFO as PATH still works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

exe=$WL/heapexec
for mode in execv execl; do
    rm -f "$T"/h.trace*
    same_output "$exe" "$mode"
    [ -s "$T/h.trace.old" ] || { ls "$T"; fail "$mode: no h.trace.old"; }
    heapcheck "$T/h.trace.old" "$exe"
    pid=$(sed -n 's/^header pid=\([0-9]*\) .*/\1/p' "$T/check.txt")
    expect_site first_image allocs 300
    expect_site first_image live_bytes 30000
    expect_total end 0
    [ -z "$(site second_image allocs)" ] || fail "$mode: the image before has the new one's events"
    heapcheck "$T/h.trace" "$exe"
    grep -q "^header pid=$pid " "$T/check.txt" || { cat "$T/check.txt"; fail "$mode: not the same pid"; }
    expect_site second_image allocs 500
    expect_site second_image live_bytes 100000
    expect_total end 1
    [ -z "$(site first_image allocs)" ] || fail "$mode: the new image's trace has the old one's events"
done
# kiln top reads both.
"$KILN" top -n 0 "$T/h.trace.old" > "$T/top-old.txt" || fail "kiln top h.trace.old"
has "$T/top-old.txt" ' first_image$'
"$KILN" top -n 0 "$T/h.trace" > "$T/top.txt" || fail "kiln top h.trace"
has "$T/top.txt" ' second_image$'

# Three images; a stale PATH.old (the trace of another process, which
# had another pid) is replaced, and so is a file that is no trace.
mv "$T/h.trace" "$T/stale"
rm -f "$T"/h.trace*
mv "$T/stale" "$T/h.trace.old"
cp "$T/top.txt" "$T/h.trace.old.2"
same_output "$exe" chain
heapcheck "$T/h.trace.old" "$exe"
expect_site first_image allocs 300
heapcheck "$T/h.trace.old.2" "$exe"
expect_site second_image allocs 500
expect_total end 0
heapcheck "$T/h.trace" "$exe"
expect_site third_image allocs 700
expect_total end 1

# The same through fexecve() and execveat(), which glibc runs on the system
# call itself (before: not interposed, the images' last events lost).
rm -f "$T"/h.trace*
same_output "$exe" fexecve
heapcheck "$T/h.trace.old" "$exe"
expect_site first_image allocs 300
heapcheck "$T/h.trace.old.2" "$exe"
expect_site second_image allocs 500
heapcheck "$T/h.trace" "$exe"
expect_site third_image allocs 700

# A forked child that execs: PATH.PID.old has what it did before.
rm -f "$T"/h.trace*
same_output "$exe" fork
kid=$(ls "$T" | sed -n 's/^h\.trace\.\([0-9]*\)$/\1/p')
[ -n "$kid" ] || { ls "$T"; fail "no child trace"; }
heapcheck "$T/h.trace.$kid.old" "$exe"
expect_site child_before allocs 100
heapcheck "$T/h.trace.$kid" "$exe"
expect_site second_image allocs 500
expect_total end 1

# A FIFO at PATH (a reader streams the trace) is no earlier image's file:
# looking at it must not block the program's start.
rm -f "$T/fifo"
mkfifo "$T/fifo" || skip "mkfifo failed"
cat "$T/fifo" > "$T/fifo.out" &
cp_pid=$!
env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP_TRACE="$T/fifo" "$WL/heapexit" > /dev/null 2> "$T/fifo.err" ||
    { cat "$T/fifo.err"; fail "heapexit with the trace to a FIFO failed"; }
wait "$cp_pid"
heapcheck "$T/fifo.out" "$WL/heapexit"
expect_site exit_work allocs 1000

# kiln heap reads the trace while the program runs: opened before the
# exec, it goes on with the new image's and says where the first is.
rm -f "$T"/k.* "$T/go"
"$KILN" heap -o "$T/k" -- "$exe" wait "$T/go" > "$T/kh.out" 2> "$T/kh.err" &
kp=$!
reads_trace() { ls -l "/proc/$kp/fd" 2>/dev/null | grep -q 'k\.trace\.zst$'; }
wait_for "kiln heap to open the trace" reads_trace
touch "$T/go"
wait "$kp" || { cat "$T/kh.err"; fail "kiln heap failed"; }
has "$T/kh.err" "the program exec'd: this is the new image's heap; the one before is in '.*k\.trace\.zst\.old'"
has "$T/kh.err" '500 calls  second_image '
hasnt "$T/kh.err" 'first_image'
heapcheck "$T/k.trace.zst.old" "$exe"
expect_site first_image allocs 300
echo ok
