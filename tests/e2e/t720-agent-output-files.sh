#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The agent writes its profiles through the same writer as the CLI:
# CPUPROFILE=/dev/null leaves the device in place (as root a rename would
# replace it), an existing profile is kept as PATH.old, and the profile
# written over it is whole.  An older PATH.old goes when the profile is
# opened, so that the rename at the program's exit replaces nothing (ext4
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

# An older PATH.old is gone once the profile is opened (its temporary
# exists), while the program runs and PATH is still the previous profile;
# at the end PATH.old is that profile.  (Both a minute old: a file written
# since the process started would be an earlier image's, kept as such.)
cp "$T/cpu.prof" "$T/prev.prof"
touch -d '1 minute ago' "$T/cpu.prof" "$T/cpu.prof.old"
LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/cpu.prof "$WL/syswrite" 1 > "$T/out.txt" &
pid=$!
tmp_made() { compgen -G "$T/cpu.prof.tmp.*" > /dev/null; }
wait_for "the profile's temporary" tmp_made
[ ! -e "$T/cpu.prof.old" ] || fail "the older PATH.old is still there while the program runs"
cmp -s "$T/prev.prof" "$T/cpu.prof" || fail "PATH changed before the program ended"
wait "$pid" || fail "syswrite failed under the agent"
cmp -s "$T/prev.prof" "$T/cpu.prof.old" || fail "PATH.old is not the profile that was at PATH"
"$KILN" top "$T/cpu.prof" > "$T/top.txt" || fail "the new profile does not read"
has "$T/top.txt" " burn$"
echo ok
