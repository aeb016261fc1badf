#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program SIGKILLed while it runs leaves no temporary beside its CPU
# profile: the profile is written to an unnamed file (O_TMPFILE) that the
# kernel frees with the process; what was at PATH and PATH.old before
# stays as it was, byte for byte, and nothing else appears.  (Before: an
# empty PATH.tmp.* was left at each kill.)  The heap trace is written in
# place: a killed program's trace is at PATH, cut, and reads (t805).
. "$(dirname "$0")/lib.sh"
need_agent

# killed DIR ENV...: privdrop wait under the agent, killed once sampling runs.
killed() {
    local dir=$1 pid
    shift
    rm -f "$T/ready"
    mkfifo "$T/ready"
    env LD_PRELOAD="$KILN_LIB" KILN_LOG=info "$@" "$WL/privdrop" wait > "$T/ready" 2> "$T/err" &
    pid=$!
    read -r -t 120 line < "$T/ready" || true
    [ "$line" = ready ] || { cat "$T/err"; fail "privdrop printed no ready line"; }
    started() { grep -Eq '(CPU|wall-clock) profiling at' "$T/err"; }
    wait_for "sampling to start" started
    kill -KILL "$pid"
    wait "$pid" 2> /dev/null
    return 0
}

# Nothing there before: nothing there after.
mkdir "$T/a"
killed "$T/a" KILN_CPU="$T/a/cpu.pb.gz"
[ -z "$(ls -A "$T/a")" ] || { ls -la "$T/a"; fail "a SIGKILLed program left files beside its profile"; }
killed "$T/a" KILN_CPU="$T/a/wall.pb.gz" KILN_CPU_MODE=wall
[ -z "$(ls -A "$T/a")" ] || { ls -la "$T/a"; fail "a SIGKILLed program left files (wall mode)"; }

# An earlier profile and PATH.old: both as they were.
mkdir "$T/b"
echo earlier > "$T/b/cpu.pb.gz"
echo "two runs ago" > "$T/b/cpu.pb.gz.old"
touch -d '1 minute ago' "$T/b/cpu.pb.gz" "$T/b/cpu.pb.gz.old"
killed "$T/b" KILN_CPU="$T/b/cpu.pb.gz"
[ "$(ls -A "$T/b" | tr '\n' ' ')" = "cpu.pb.gz cpu.pb.gz.old " ] ||
    { ls -la "$T/b"; fail "a SIGKILLed program changed the files beside its profile"; }
has "$T/b/cpu.pb.gz" "^earlier$"
has "$T/b/cpu.pb.gz.old" "^two runs ago$"
echo ok
