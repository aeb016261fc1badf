#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A hostile program (fork, exec, 1000 threads, dlopen/dlclose, malloc
# storms, its own SIGPROF handler) prints the same with and without the
# agent, and the agent steps aside from its SIGPROF handler and says so.
. "$(dirname "$0")/lib.sh"
need_agent

"$WL/hostile" "$WL/libplugin.so" > "$T/bare.txt" 2>&1; bare_rc=$?
LD_PRELOAD=$KILN_LIB KILN_CPU=$T/h.pb.gz KILN_CPU_HZ=999 \
    "$WL/hostile" "$WL/libplugin.so" > "$T/agent.txt" 2> "$T/agent.err"; agent_rc=$?
[ $bare_rc -eq $agent_rc ] || fail "exit status $agent_rc under the agent, $bare_rc without"
diff -u "$T/bare.txt" "$T/agent.txt" || fail "the output changed under the agent"
has "$T/agent.err" "own SIGPROF handler.*steps aside"
has "$T/agent.txt" "own SIGPROF: ticked"
[ -s "$T/h.pb.gz" ] || fail "no profile written"
"$KILN" top -n 0 "$T/h.pb.gz" > "$T/top.txt"
has "$T/top.txt" "malloc_storm"
# The forked child never wrote over the parent's file: only one profile
# (the exec'd echo is a new process: it would write h.pb.gz.PID).
ls "$T" | grep -c '^h.pb.gz' > "$T/n"
[ "$(cat "$T/n")" -le 2 ] || { ls "$T"; fail "too many profiles"; }
echo ok
