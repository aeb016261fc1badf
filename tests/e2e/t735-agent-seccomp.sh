#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program that installs a seccomp filter forbidding timer_create, then
# starts threads (kiln made a CPU timer for each: SIGSYS killed it).  Both
# ways in (prctl, and syscall(SYS_seccomp) as libseccomp does), killing or
# failing with EPERM, in CPU and wall modes: the program ends as bare
# (status 0, "done"), and the profile holds what was taken before the
# filter and says that sampling stopped there.
. "$(dirname "$0")/lib.sh"
need_agent
"$WL/seccomphost" prctl kill > /dev/null 2>&1 || skip "seccomp filters cannot be installed here"

for how in prctl syscall; do
    for act in kill errno; do
        for mode in cpu wall; do
            rc=0
            env LD_PRELOAD="$KILN_LIB" KILN_LOG=info CPUPROFILE="$T/p.pb.gz" \
                CPUPROFILE_FREQUENCY=999 KILN_CPU_MODE=$mode \
                "$WL/seccomphost" $how $act > "$T/out" 2> "$T/err" || rc=$?
            [ "$rc" -eq 0 ] || { cat "$T/err"; fail "$how $act $mode: exit status $rc"; }
            has "$T/out" "^seccomphost: done$"
            has "$T/err" "seccomp filter: CPU sampling stops here"
            "$KILN" top "$T/p.pb.gz" > "$T/top" || fail "kiln top ($how $act $mode)"
            has "$T/top" " burn_before$"
            if command -v go >/dev/null; then
                HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/p.pb.gz" > "$T/raw" 2>&1 ||
                    fail "go tool pprof cannot read the profile"
                has "$T/raw" "sampling stopped early: the program installs a seccomp filter"
            fi
        done
    done
done
echo ok
