#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The fds the agent holds in a host are all high and close-on-exec, in
# every mode: fdlist burns CPU, allocates, then lists its fds
# (/proc/self/fd, flags from /proc/self/fdinfo) and prints those below the
# floor and those at or above it that an exec would pass on; the same
# stdout bare and under the agent.  The floor, with RLIMIT_NOFILE 1024:
# 480, where libdwfl's files go (kiln_fd_raise(): half of kiln's base);
# kiln's own (the profile's unnamed file and folder, /proc/self, the heap
# trace, the HTTP server's socket, libmicrohttpd's epoll fd and eventfds)
# are at 960 and up (docs/agent.md, "File descriptors").  (Before:
# libmicrohttpd's eventfd and epoll fd sat at 3 and 4, inheritable by
# every child.)
. "$(dirname "$0")/lib.sh"
need_agent
ulimit -n 1024 2> /dev/null || skip "cannot set RLIMIT_NOFILE to 1024"
floor=480

"$WL/fdlist" $floor 0.5 > "$T/bare.out" 2> "$T/bare.err" || fail "fdlist failed bare"
has "$T/bare.out" "^below $floor: 0 1 2"
n=0
for env in "KILN_CPU=$T/cpu.pb.gz" "KILN_CPU=$T/wall.pb.gz KILN_CPU_MODE=wall" \
           "KILN_HEAP_TRACE=$T/h.trace" "KILN_HEAP=$T/hp" "KILN_HTTP=127.0.0.1:0" \
           "KILN_CPU=$T/all.pb.gz KILN_HEAP_TRACE=$T/all.trace KILN_HTTP=127.0.0.1:0"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    env LD_PRELOAD="$KILN_HEAP_PRELOAD" $env "$WL/fdlist" $floor 0.5 > "$T/$n.out" 2> "$T/$n.err" ||
        { cat "$T/$n.err"; fail "fdlist failed under the agent ($env)"; }
    cmp -s "$T/bare.out" "$T/$n.out" ||
        { diff "$T/bare.out" "$T/$n.out"; cat "$T/$n.err"; fail "the agent holds a low or inheritable fd ($env)"; }
done
# The agent did hold fds up there (the check above is not empty).
grep -Eq '^fd (9[6-9][0-9]|10[0-2][0-9]) .*eventpoll' "$T/5.err" || { cat "$T/5.err"; fail "no epoll fd of libmicrohttpd's high up"; }
grep -Eq '^fd (9[6-9][0-9]|10[0-2][0-9]) .*/h.trace$' "$T/3.err" || { cat "$T/3.err"; fail "no heap trace fd high up"; }
echo ok
