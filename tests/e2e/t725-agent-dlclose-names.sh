#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A library dlopen()ed, burnt in and dlclose()d before the profile is
# written (at exit) is gone from /proc/self/maps by then: the agent names
# its frames from the modules it noted while the library was mapped (its
# dlclose() notes them first), reading the file on disk, instead of
# leaving bare addresses.
. "$(dirname "$0")/lib.sh"
need_agent

LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/dl.prof CPUPROFILE_FREQUENCY=250 \
    "$WL/dlopener" "$WL/libplugin.so" 1 > /dev/null || fail "dlopener failed under the agent"
"$KILN" convert "$T/dl.prof" -o "$T/dl.collapsed" || fail "kiln convert"
has "$T/dl.collapsed" "main;host_burn "
has "$T/dl.collapsed" "main;(plugin_burn;)?plugin_inner "
has "$T/dl.collapsed" "main;plugin_burn;"
hasnt "$T/dl.collapsed" "main;0x"
# The mapping names the library's file.
"$KILN" convert "$T/dl.prof" -o "$T/dl.perf" --to perf-script
has "$T/dl.perf" " plugin_inner \(.*/libplugin\.so\)$"
echo ok
