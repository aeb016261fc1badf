#!/usr/bin/env bash
# ctest-labels: noasan
# The agent writes its profiles through the same writer as the CLI:
# CPUPROFILE=/dev/null leaves the device in place (as root a rename would
# replace it), an existing profile is kept as PATH.old, and the profile
# written over it is whole.
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
echo ok
