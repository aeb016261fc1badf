#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The agent names the vDSO's functions (no file on disk holds them: the
# symbolizer reads the image this kernel maps into every process, through
# a memfd) instead of showing [vdso] (unnamed): cpuserver measures its
# work with clock_gettime(CLOCK_THREAD_CPUTIME_ID), a third of its time.
. "$(dirname "$0")/lib.sh"
need_agent

LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/cpu.prof CPUPROFILE_FREQUENCY=250 \
    "$WL/cpuserver" 2 4 > /dev/null || fail "cpuserver failed under the agent"
"$KILN" convert "$T/cpu.prof" -o "$T/c.collapsed" || fail "kiln convert"
has "$T/c.collapsed" ";thread_cpu;(clock_gettime;)?__vdso_clock_gettime(_\[k\])? "
hasnt "$T/c.collapsed" "\[vdso\]"
echo ok
