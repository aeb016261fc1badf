#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A host near its RLIMIT_NOFILE: nofile works, lowers its soft limit to
# 3 + 16 and opens /dev/null until EMFILE, works holding them, closes
# them and prints how many it got.  The agent's fds are all above such a
# limit (docs/agent.md, "File descriptors"), so the host gets the same
# count, stdout and exit status bare and under the agent in each mode,
# and the agent's files are still written whole (the CPU profile's
# unnamed file was opened before; what the agent cannot open while the
# host holds every number it goes without).  (Before: under KILN_HTTP
# libmicrohttpd's epoll fd and eventfd took 2 of the host's 16.)  Not
# covered: a KILN_HEAP dump or a symbolizer warm-up under way holds files
# for its duration, at low numbers when the limit is below kiln's range
# (nofile allocates far less than the 1 GiB between dumps).
. "$(dirname "$0")/lib.sh"
need_agent

"$WL/nofile" 16 0.3 > "$T/bare.out" 2> "$T/bare.err" || { cat "$T/bare.err"; fail "nofile failed bare"; }
has "$T/bare.out" "^opened [0-9]+$"
n=0
for env in "KILN_CPU=$T/cpu.pb.gz" "KILN_CPU=$T/wall.pb.gz KILN_CPU_MODE=wall" \
           "KILN_HEAP_TRACE=$T/h.trace" "KILN_HEAP=$T/hp" "KILN_HTTP=127.0.0.1:0"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    env LD_PRELOAD="$KILN_HEAP_PRELOAD" $env "$WL/nofile" 16 0.3 > "$T/$n.out" 2> "$T/$n.err" ||
        { cat "$T/$n.err"; fail "nofile failed under the agent ($env)"; }
    cmp -s "$T/bare.out" "$T/$n.out" ||
        { diff "$T/bare.out" "$T/$n.out"; cat "$T/$n.err"; fail "the host got another count under the agent ($env)"; }
done
for p in cpu wall; do
    "$KILN" top "$T/$p.pb.gz" > "$T/$p.top" || fail "the $p profile does not read"
    has "$T/$p.top" " nofile_burn$"
done
"$KILN" top "$T/h.trace" > "$T/h.top" || fail "the heap trace does not read"
has "$T/h.top" " nofile_alloc$"
compgen -G "$T/hp.*.heap" > /dev/null || { ls "$T"; fail "no KILN_HEAP dump"; }
ls "$T" | grep -q 'tmp' && { ls "$T"; fail "a temporary was left behind"; }
echo ok
