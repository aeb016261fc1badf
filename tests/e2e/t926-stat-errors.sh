#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln stat's and record's errors: an unknown event gets the closest names,
# a cache event the machine lacks is refused by name, tracefs not mounted
# gets how to mount it, a refused perf_event_open gets the setting that
# would allow it (never the one already set, never "run as root" to root).
. "$(dirname "$0")/lib.sh"
"$KILN" stat -e task-clock -- true >/dev/null 2>"$T/probe" ||
    skip "kiln stat cannot count here: $(head -1 "$T/probe")"

expect_status 2 "$KILN" stat -e task-clok -- true
has "$T/err" "unknown event 'task-clok'; the closest are: task-clock"
expect_status 2 "$KILN" stat -e L1-dcache-load-mises -- true
has "$T/err" "closest are: L1-dcache-load-misses"
expect_status 2 "$KILN" record -q -e dTLB-load-mises -o "$T/x.pb.gz" -- true
has "$T/err" "closest are: dTLB-load-misses"
expect_status 2 "$KILN" stat -e '{task-clock,cs' -- true
has "$T/err" "'\{' without '\}'"
expect_status 2 "$KILN" stat -x, --json -- true
expect_status 2 "$KILN" stat
has "$T/err" "nothing to count"

# Cache events by perf's names: counted where the machine has them,
# <not supported> (stat) or refused (record) where not.
if perf stat -e L1-dcache-load-misses -- true 2>&1 | grep -q "<not supported>"; then
    expect_status 0 "$KILN" stat -e L1-dcache-loads,L1-dcache-load-misses,LLC-load-misses,dTLB-load-misses -- true
    has "$T/err" "<not supported> +L1-dcache-load-misses"
    has "$T/err" "<not supported> +dTLB-load-misses"
    expect_status 1 "$KILN" record -q -e L1-dcache-load-misses -o "$T/c.pb.gz" -- true
    has "$T/err" "event 'L1-dcache-load-misses' is not supported on this machine"
fi

# tracefs not mounted (a private mount namespace where it cannot be).
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
   unshare -m true 2>/dev/null; then
    rc=0
    unshare -m sh -c 'mount -t tmpfs none /sys/kernel 2>/dev/null &&
        mount -t tmpfs none /sys/kernel/debug 2>/dev/null;
        mount -t tmpfs none /sys/kernel || exit 99
        exec "$0" stat -e syscalls:sys_enter_getrandom -- true' "$KILN" \
        >"$T/out" 2>"$T/err" || rc=$?
    if [ $rc -ne 99 ]; then
        [ $rc -eq 1 ] || { cat "$T/err"; fail "exit $rc without tracefs, want 1"; }
        has "$T/err" "tracefs is not mounted: mount it with 'mount -t tracefs nodev /sys/kernel/tracing'"
    fi
fi

# Refused: as an unprivileged user, whole CPUs need perf_event_paranoid <= 0.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    par=$(cat /proc/sys/kernel/perf_event_paranoid)
    if [ "$par" -gt 0 ]; then
        expect_status 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
            "$KILN" stat -a -e cpu-clock --duration 0.1
        has "$T/err" "perf_event_open refused counting whole CPUs"
        has "$T/err" "sysctl kernel.perf_event_paranoid=0"
        hasnt "$T/err" "paranoid=$par'"
    fi
    # Another user's process, with the sysctl already allowing its own.
    sleep 20 & sp=$!
    expect_status 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$KILN" stat -p $sp -e task-clock --duration 0.1
    kill $sp
    has "$T/err" "perf_event_open refused counting that process"
    hasnt "$T/err" "paranoid=$par'"
    has "$T/err" "run as the process's owner or root"
fi
echo ok
