#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# An exec that fails returns to the program, which goes on: so does its
# CPU profile.  Before an exec kiln writes the profile so far (the image
# may be replaced); when the exec fails, sampling starts again, into
# PATH, with the part before the exec kept as PATH.old (as the new image
# of a successful exec keeps it), and the program sees the exec's errno.
# (Before: nothing was sampled after a failed exec.)
. "$(dirname "$0")/lib.sh"
need_agent

LD_PRELOAD=$KILN_LIB KILN_CPU=$T/x.pb.gz "$WL/execfail" 0.4 > "$T/out" 2> "$T/err" ||
    { cat "$T/err"; fail "the workload failed under the agent"; }
has "$T/out" "^execv failed: No such file or directory$"
[ -s "$T/x.pb.gz" ] && [ -s "$T/x.pb.gz.old" ] || { ls "$T"; fail "the profiles before and after the failed exec are not both kept"; }
"$KILN" top "$T/x.pb.gz" > "$T/after.top" || fail "kiln top of the profile after the exec"
has "$T/after.top" " after_exec_burn$"
grep -q " before_exec_burn$" "$T/after.top" && fail "the profile after the exec holds the time before it"
"$KILN" top "$T/x.pb.gz.old" > "$T/before.top" || fail "kiln top of the profile before the exec"
has "$T/before.top" " before_exec_burn$"
ls "$T" | grep -q 'tmp' && { ls "$T"; fail "a temporary was left behind"; }

echo ok
