#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record as a new user meets it: signals to kiln alone, the output
# checked before the run, the target's command line as the comment, kernel
# time counted, JIT code named when compiled late, PLT stubs named, a
# reader that keeps up, and the help text.
. "$(dirname "$0")/lib.sh"
need_record

# SIGINT to kiln alone (not the process group), as perf: recording stops,
# the command gets SIGTERM, the profile is written, kiln exits with the
# command's status.  Without it kiln would wait the 60 s and exit 0.
# The signal comes once the command has run under kiln for 0.5 s of CPU
# time (about 250 samples), however long that takes.
"$KILN" record -q -F 499 -o "$T/int.pb.gz" -- "$WL/shares" 60 & kpid=$!
wait_for "kiln record to run shares" child_running $kpid "$WL/shares" >/dev/null
wait_cpu "$(child_running $kpid "$WL/shares")" 0.5
kill -INT $kpid
rc=0; wait $kpid || rc=$?
[ $rc -eq 143 ] || fail "exit $rc after SIGINT to kiln, want 143 (the command ended by SIGTERM)"
"$KILN" top "$T/int.pb.gz" > "$T/int.txt" || fail "no profile after SIGINT"
has "$T/int.txt" "burn_a"

# The output path is checked before the command runs.
expect_status 2 "$KILN" record -q -o "$T/no/such/dir/p.pb.gz" -- touch "$T/ran"
has "$T/err" "does not exist"
[ ! -e "$T/ran" ] || fail "the command ran though the output cannot be written"
mkdir "$T/adir"
expect_status 2 "$KILN" record -q -o "$T/adir" -- touch "$T/ran"
has "$T/err" "is a folder"
cp "$WL/shares" "$T/prog"; sum=$(cksum < "$T/prog")
expect_status 2 "$KILN" record -q -o "$T/prog" -- "$T/prog" 0.1
has "$T/err" "refusing to write over the input"
[ "$(cksum < "$T/prog")" = "$sum" ] || fail "the program was overwritten"
[ ! -e "$T/ran" ] || fail "the command ran"

# The comment is the target's command line: for -p, from /proc.
need go
export HOME=$T GOCACHE=$T/gocache
"$WL/shares" 60 & sp=$!
wait_for "shares to start" runs $sp "$WL/shares"
expect_status 0 "$KILN" record -q -p $sp --duration 0.5 -o "$T/p.pb.gz"
kill $sp; wait $sp 2>/dev/null
go tool pprof -raw "$T/p.pb.gz" 2>/dev/null | head -5 > "$T/p.raw"
has "$T/p.raw" "^Comment: $WL/shares 60\$"
hasnt "$T/p.raw" "kiln record"

# kiln help record lists both modes.
"$KILN" help record > "$T/help.txt"
has "$T/help.txt" "--mode inject"
has "$T/help.txt" "-a, --all-cpus"

# Time in the kernel is CPU time of the program: write_loop's share
# matches the CPU time the program measured around it (the kernel's part
# included); dropping kernel-mode samples gives it half that.
if [ "$(id -u)" -eq 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ]; then
    expect_status 0 "$KILN" record -q -F 999 -o "$T/sw.pb.gz" -- "$WL/syswrite" 2
    read -r _ b _ w < "$T/out"
    want=$(awk -v b="$b" -v w="$w" 'BEGIN { printf "%d", 100 * w / (b + w) }')
    "$KILN" top -n 0 "$T/sw.pb.gz" > "$T/sw.txt"
    got=$(cum_pct "$T/sw.txt" write_loop)
    within "${got:-0}" "$want" 8 || { cat "$T/sw.txt"; fail "write_loop at ${got:-none}%, the program measured $want%"; }
    hasnt "$T/sw.txt" "entry_SYSCALL"
fi

# JIT code named in /tmp/perf-PID.map half-way through the run is named
# for the whole run (perf reads the map at report time).
if [ "$(uname -m)" = x86_64 ]; then
    expect_status 0 "$KILN" record -q -F 499 -o "$T/jit.pb.gz" -- "$WL/jit" 1 late
    "$KILN" top "$T/jit.pb.gz" > "$T/jit.txt"
    p=$(top_pct "$T/jit.txt" jit_spin)
    awk -v p="${p:-0}" 'BEGIN { exit !(p > 80) }' || { cat "$T/jit.txt"; fail "jit_spin at ${p:-none}%"; }
fi

# PLT stubs are named as perf names them (never [pltcall]).  The stub is
# two instructions: 0.3-0.6% of the samples on a busy machine, but on an
# idle one the timer's period can run in step with the loop and leave it
# 0-3 samples (both the gcc and the ASan kiln, session 16): up to three
# runs at different rates; none with a stub sample is said, not failed
# (there is then nothing to name).
plt_seen=
for hz in 4999 3989 2999; do
    expect_status 0 "$KILN" record -q -F $hz -o "$T/plt.pb.gz" -- "$WL/pltcall" 2
    "$KILN" top -n 0 "$T/plt.pb.gz" > "$T/plt.txt"
    hasnt "$T/plt.txt" "\[pltcall\]"
    if grep -q " memcmp@plt\$" "$T/plt.txt"; then plt_seen=$hz; break; fi
done
[ -n "$plt_seen" ] || echo "note: no sample landed in memcmp's PLT stub in three runs: its name not checked"

# page-faults -c 1 records every fault: the reader keeps up (it lost 61%).
# A speed property: not judged under ASan, which slows the reader several-fold.
# With frame-pointer stacks: the reader's speed is what is tested.  With the
# default 32 KiB stack copies the kernel writes 32 KiB a fault, 800 MB for
# this program, and how much of that a busy machine lets any reader drain
# is not kiln's (60-70% lost at load 7 on 2 CPUs; 0 with fp).
[ "${KILN_SANITIZE:-OFF}" != ON ] || { echo ok; exit 0; }
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"
# 1.7% lost on a quiet machine, 17% once at load 26 on 2 CPUs; 61-76%
# before.  A second try when a run loses more (a clean-clone CI beside
# another heavy job once kept 12,162 of the ~25,000 faults).
pf_kept() {
    expect_status 0 "$KILN" record --call-graph fp -e page-faults -c 1 -o "$T/pf.pb.gz" -- /usr/bin/python3 -c "x = bytearray(100_000_000)"
    s=$(sed -n "s/.*: \([0-9]*\) samples, \([0-9]*\) lost.*/\1 \2/p" "$T/err")
    read -r ns nl <<< "$s"
    echo "page faults: ${ns:-0} samples, ${nl:-0} lost"
    [ $((${ns:-0} + ${nl:-0})) -gt 20000 ] || { echo "only $((${ns:-0} + ${nl:-0})) page-fault records"; return 1; }
    awk -v s="$ns" -v l="$nl" 'BEGIN { exit !(l <= 0.3 * (s + l)) }' || { echo "lost $nl of $((ns + nl)) records"; return 1; }
}
twice pf_kept
nl=$(sed -n "s/.*: [0-9]* samples, \([0-9]*\) lost.*/\1/p" "$T/err")
# Lost records of a -c 1 event: larger rings is the advice (a larger -c
# would give up the exact count); never a lower -F.
if [ "${nl:-0}" -gt 0 ]; then has "$T/err" "use larger rings"; hasnt "$T/err" "lower -F"; fi
echo ok
