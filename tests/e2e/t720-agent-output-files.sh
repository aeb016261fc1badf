#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The agent writes its profiles through the same writer as the CLI:
# CPUPROFILE=/dev/null leaves the device in place (as root a rename would
# replace it), an existing profile is kept as PATH.old, and the profile
# written over it is whole.  While the program runs, PATH and an older
# PATH.old stay as they were (the profile is written to an unnamed file);
# the older PATH.old goes only at the end, just before PATH is kept as
# PATH.old, so that no rename at the program's exit replaces a file (ext4
# flushes the data of a file renamed over another: milliseconds at exit).
. "$(dirname "$0")/lib.sh"
need_agent

LD_PRELOAD=$KILN_LIB CPUPROFILE=/dev/null "$WL/shares" 1 > "$T/out.txt" ||
    fail "shares failed under the agent"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
echo "an older profile" > "$T/cpu.prof"
LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/cpu.prof "$WL/shares" 1 > "$T/out.txt" ||
    fail "shares failed under the agent"
has "$T/cpu.prof.old" "^an older profile$"
"$KILN" top "$T/cpu.prof" > "$T/top.txt" || fail "the new profile does not read"
has "$T/top.txt" " burn_a$"

# The profile opened (KILN_LOG=info's "CPU profiling at" comes after):
# PATH and the older PATH.old are untouched while the program runs and no
# temporary is in sight; at the end PATH.old is the profile that was at
# PATH.  (Both a minute old: a file written since the process started
# would be an earlier image's, kept as such.)
cp "$T/cpu.prof" "$T/prev.prof"
echo "two runs ago" > "$T/cpu.prof.old"
cp "$T/cpu.prof.old" "$T/prev.old"
touch -d '1 minute ago' "$T/cpu.prof" "$T/cpu.prof.old"
LD_PRELOAD=$KILN_LIB KILN_LOG=info CPUPROFILE=$T/cpu.prof "$WL/syswrite" 1 > "$T/out.txt" 2> "$T/err.txt" &
pid=$!
opened() { grep -q 'CPU profiling at' "$T/err.txt"; }
wait_for "the profile's opening" opened
cmp -s "$T/prev.old" "$T/cpu.prof.old" || fail "the older PATH.old changed while the program runs"
cmp -s "$T/prev.prof" "$T/cpu.prof" || fail "PATH changed before the program ended"
ls "$T" | grep -q 'tmp' && { ls "$T"; fail "a temporary is in sight while the program runs"; }
wait "$pid" || fail "syswrite failed under the agent"
cmp -s "$T/prev.prof" "$T/cpu.prof.old" || fail "PATH.old is not the profile that was at PATH"
"$KILN" top "$T/cpu.prof" > "$T/top.txt" || fail "the new profile does not read"
has "$T/top.txt" " burn$"
ls "$T" | grep -q 'tmp' && { ls "$T"; fail "a temporary was left behind"; }
echo ok
