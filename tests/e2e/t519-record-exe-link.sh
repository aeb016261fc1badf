#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program run by a symbolic link to it (Debian's redis-server ->
# redis-check-rdb, python3 -> python3.11): the kernel maps the link's
# target, but the user ran the link's name, and its comm says so.  Unnamed
# frames of the executable are named by the name it was run by, "[run-as]"
# not "[real-prog]", in kiln record (a command, -p), the agent's CPU
# profile and a heap trace; a name cut to 15 characters by the kernel
# still finds its link; a copy (not a link) keeps its own name.
# (Preloads the agent: not under ASan.)
. "$(dirname "$0")/lib.sh"
need_record
need_agent
need strip

mkdir "$T/bin"
cp "$WL/shares" "$T/bin/real-prog"
strip --strip-all --remove-section=.note.gnu.build-id "$T/bin/real-prog" ||
    fail "strip failed"
ln -s real-prog "$T/bin/run-as"
ln -s "$T/bin/real-prog" "$T/bin/a-program-name-over-15"
cp "$T/bin/real-prog" "$T/bin/a-copy"

# names FILE SHOWN: the profile's unnamed executable frames say [SHOWN] only.
names() {
    "$KILN" top -n 0 "$1" > "$T/top" || fail "kiln top of $1 failed"
    grep -q " \[$2\]\$" "$T/top" || { cat "$T/top"; fail "$1: no [$2] frame"; }
    ! grep -q '\[real-prog\]' "$T/top" || [ "$2" = real-prog ] ||
        { cat "$T/top"; fail "$1: frames named by the link's target"; }
}

expect_status 0 "$KILN" record -q -F 499 -o "$T/rec.pb.gz" -- "$T/bin/run-as" 1
names "$T/rec.pb.gz" run-as
(cd "$T/bin" && "$KILN" record -q -F 499 -o "$T/rel.pb.gz" -- ./run-as 1) ||
    fail "kiln record of ./run-as failed"
names "$T/rel.pb.gz" run-as
expect_status 0 "$KILN" record -q -F 499 -o "$T/long.pb.gz" -- "$T/bin/a-program-name-over-15" 1
names "$T/long.pb.gz" a-program-name-over-15
expect_status 0 "$KILN" record -q -F 499 -o "$T/copy.pb.gz" -- "$T/bin/a-copy" 1
names "$T/copy.pb.gz" a-copy
expect_status 0 "$KILN" record -q -F 499 -o "$T/real.pb.gz" -- "$T/bin/real-prog" 1
names "$T/real.pb.gz" real-prog

# -p: the process found running (its maps read, not recorded as it starts).
"$T/bin/run-as" 30 > /dev/null &
pid=$!
for _ in $(seq 200); do grep -q real-prog "/proc/$pid/maps" 2>/dev/null && break; sleep 0.05; done
expect_status 0 "$KILN" record -q -F 499 -p "$pid" --duration 1 -o "$T/pid.pb.gz"
kill "$pid"; wait "$pid" 2>/dev/null
names "$T/pid.pb.gz" run-as

# The agent: CPU profile and heap trace, run by the link and relatively.
env LD_PRELOAD="$KILN_LIB" KILN_CPU="$T/agent.pb.gz" "$T/bin/run-as" 1 > /dev/null ||
    fail "the agent's run failed"
names "$T/agent.pb.gz" run-as
(cd "$T/bin" && env LD_PRELOAD="$KILN_LIB" KILN_CPU="$T/agent-rel.pb.gz" ./run-as 1 > /dev/null) ||
    fail "the agent's run of ./run-as failed"
names "$T/agent-rel.pb.gz" run-as
cp "$WL/heapbasic" "$T/bin/heap-real"
strip --strip-all --remove-section=.note.gnu.build-id "$T/bin/heap-real"
ln -s heap-real "$T/bin/heap-as"
env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP_TRACE="$T/h.trace" "$T/bin/heap-as" > /dev/null ||
    fail "the heap-traced run failed"
"$KILN" top -n 0 "$T/h.trace" > "$T/htop" || fail "kiln top of the heap trace failed"
has "$T/htop" ' \[heap-as\]$'
hasnt "$T/htop" 'heap-real'
echo ok
