#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln stat on running processes (-p, with --duration or -- sleep S as perf
# users type it, --per-thread with thread names) and on whole CPUs (-a, -C).
. "$(dirname "$0")/lib.sh"
"$KILN" stat -e task-clock -- true >/dev/null 2>"$T/probe" ||
    skip "kiln stat cannot count here: $(head -1 "$T/probe")"

"$WL/threads" 20 >/dev/null 2>&1 &
tp=$!
trap 'kill $tp 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 200); do
    [ "$(ls /proc/$tp/task 2>/dev/null | wc -l)" -ge 3 ] && break
    sleep 0.05
done
# CPU time of the process in ms, from /proc (user + sys ticks).
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) * 1000 / hz }' /proc/$tp/stat; }
c0=$(cpu_ms)
expect_status 0 "$KILN" stat -p $tp -e task-clock,context-switches --duration 0.5
c1=$(cpu_ms)
has "$T/err" "Performance counter stats for process id '$tp'"
# What the process ran meanwhile, as the kernel's tick accounting saw it
# (a loaded machine gives the spinning threads what it has to spare).
tc=$(awk '/msec task-clock/ { gsub(",", "", $1); print $1 }' "$T/err")
# The /proc window also holds kiln's start and exit (long on a loaded
# machine): the count is at most what ran in it, and clearly the spinners'.
awk -v t="$tc" -v a="$c0" -v b="$c1" 'BEGIN { d = b - a; exit !(t < 1.3 * d + 30 && t > 10) }' ||
    { cat "$T/err"; fail "task-clock $tc ms while /proc says $c0 -> $c1 ms"; }
hasnt "$T/err" "seconds user"

# "-- sleep S" is the timer: the process is counted, not sleep.
c0=$(cpu_ms)
expect_status 0 "$KILN" stat -p $tp -e task-clock -- sleep 0.3
c1=$(cpu_ms)
has "$T/err" "process id '$tp'"
tc=$(awk '/msec task-clock/ { gsub(",", "", $1); print $1 }' "$T/err")
# (sleep itself runs about 1 ms; the window of /proc includes kiln's start.)
awk -v t="$tc" -v a="$c0" -v b="$c1" 'BEGIN { d = b - a; exit !(t < 1.3 * d + 30 && t > 10) }' ||
    { cat "$T/err"; fail "task-clock $tc ms while /proc says $c0 -> $c1 ms: sleep counted instead?"; }

# -a with --pid, as a guide types it: the process wins, as in perf.
expect_status 0 "$KILN" stat -a --pid=$tp -e task-clock -- sleep 0.2
has "$T/err" "warning: -p overrides -a"
has "$T/err" "process id '$tp'"

expect_status 0 "$KILN" stat --per-thread -p $tp -e task-clock --duration 0.4
has "$T/err" "worker-a-[0-9]+ +[0-9.,]+ msec task-clock"
has "$T/err" "worker-b-[0-9]+ +[0-9.,]+ msec task-clock"
has "$T/err" "threads-$tp "
expect_status 0 "$KILN" stat --per-thread --json -p $tp -e task-clock --duration 0.3
python3 - "$T/err" <<'PY' || fail "--per-thread --json"
import json, sys
o = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
names = {x["thread"].rsplit("-", 1)[0] for x in o}
assert {"worker-a", "worker-b"} <= names, names
PY

# A PID that is gone, and one given with a command of its own.
sleep 0.01 & gone=$!; wait $gone
expect_status 2 "$KILN" stat -p $gone --duration 0.1
has "$T/err" "no process with PID $gone"
expect_status 2 "$KILN" stat --per-thread -- true
has "$T/err" "per-thread"

# Whole CPUs (root or perf_event_paranoid <= 0).
if [ "$(id -u)" -eq 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 0 ]; then
    expect_status 0 "$KILN" stat -a --duration 0.4
    has "$T/err" "Performance counter stats for 'system wide'"
    has "$T/err" "msec cpu-clock +# +[0-9.]+ CPUs utilized"
    # Every CPU counted for the time elapsed: cpu-clock is that times the CPUs.
    ncpu=$(nproc)
    cc=$(awk '/msec cpu-clock/ { gsub(",", "", $1); print $1 }' "$T/err")
    el=$(awk '/seconds time elapsed/ { print $1 * 1000 }' "$T/err")
    awk -v c="$cc" -v n="$ncpu" -v e="$el" 'BEGIN { exit !(c > 0.8 * e * n && c < 1.1 * e * n + 20) }' ||
        { cat "$T/err"; fail "cpu-clock $cc ms on $ncpu CPUs over $el ms"; }
    expect_status 0 "$KILN" stat -C 0 -e cpu-clock -- sleep 0.3
    has "$T/err" "'CPU\(s\) 0'"
    cc=$(awk '/msec cpu-clock/ { gsub(",", "", $1); print $1 }' "$T/err")
    el=$(awk '/seconds time elapsed/ { print $1 * 1000 }' "$T/err")
    awk -v c="$cc" -v e="$el" 'BEGIN { exit !(c > 0.8 * e && c < 1.1 * e + 20 && e >= 290) }' ||
        { cat "$T/err"; fail "-C 0: cpu-clock $cc ms over $el ms"; }
    expect_status 2 "$KILN" stat -C 4096 -e cpu-clock --duration 0.1
fi
echo ok
