#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# (noasan: it preloads libkiln.so into a workload built without ASan.)
# Only a set*id call that changes an id prepares the outputs for a
# privilege drop (docs/agent.md, "Which file each process writes"):
# `privdrop same` calls setgid(getgid()), setegid, setregid, setresgid,
# seteuid, setreuid, setresuid (and setuid when its three ids agree) with
# the ids it has or -1; KILN_LOG=debug then says nothing of privileges
# given up, the profile is written as usual and the output is bare's.
# (Before: the first such call prepared the profile, "the program gives
# up privileges: the CPU profile ... is held open".)  As root, privdrop
# becoming nobody still prepares it.
. "$(dirname "$0")/lib.sh"
need_agent

"$WL/privdrop" same 0.2 > "$T/bare.out" || fail "privdrop same failed bare"
LD_PRELOAD=$KILN_LIB KILN_CPU=$T/same.pb.gz KILN_LOG=debug "$WL/privdrop" same 0.2 \
    > "$T/same.out" 2> "$T/same.err" || { cat "$T/same.err"; fail "privdrop same failed under the agent"; }
cmp -s "$T/bare.out" "$T/same.out" || fail "another output under the agent: $(cat "$T/same.out")"
hasnt "$T/same.err" "gives up privileges"
has "$T/same.err" "wrote the CPU profile"
"$KILN" top "$T/same.pb.gz" > "$T/same.top" || fail "the profile does not read"
has "$T/same.top" " after_drop_burn$"
if [ "$(id -u)" = 0 ]; then
    LD_PRELOAD=$KILN_LIB KILN_CPU=$T/drop.pb.gz KILN_LOG=debug "$WL/privdrop" 0.2 \
        > "$T/drop.out" 2> "$T/drop.err" || { cat "$T/drop.err"; fail "privdrop failed under the agent"; }
    has "$T/drop.out" "running as uid 65534"
    has "$T/drop.err" "gives up privileges: the CPU profile .* is held open"
fi
echo ok
