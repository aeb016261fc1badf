#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The trace's times (docs/heap.md "Clock"): the hooks stamp events with
# the TSC when the kernel's clocksource is the TSC, and the writer turns
# the stamps into CLOCK_MONOTONIC ns.  Each of the workload's 800 timed
# allocations must be in the trace at a time within [before - tick - 50 us,
# after + 50 us] of the workload's own CLOCK_MONOTONIC reads around it
# (a T record's time is up to one tick, 100 us, before its events; 1% may
# be late, see below), with
# the TSC and with KILN_HEAP_CLOCK=monotonic; the other thread's frees of
# every block come after them (no block left live).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

tsc=0
if [ "$(uname -m)" = x86_64 ] && grep -qw constant_tsc /proc/cpuinfo &&
   [ "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)" = tsc ]; then
    tsc=1
fi

check_times() {   # CLOCK: the clock the log must name
    HEAP_ENV="KILN_LOG=info ${CLOCK_ENV:-}" same_output "$WL/heapclock" "$T/times.txt"
    grep -q "($1 clock)\|, $1 clock)" "$T/agent.err" ||
        { cat "$T/agent.err" >&2; fail "the agent did not say it uses the $1 clock"; }
    python3 "$KILN_SRC/tests/e2e/heapcheck.py" --times "$T/h.trace" "$WL/heapclock" \
        > "$T/check.txt" || fail "heapcheck rejected the trace"
    expect_total lost 0
    expect_site timed allocs 800
    expect_site timed live 0
    python3 - "$T/times.txt" "$T/check.txt" <<'PY' || fail "trace times off ($1 clock)"
import sys
want = {}
for line in open(sys.argv[1]):
    _, size, t0, t1 = line.split()
    want[int(size)] = (int(t0), int(t1))
got, freed, last = {}, {}, 0
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] != "event":
        continue
    ns = int(f[4])
    if ns < last:
        sys.exit("time goes back: %d after %d" % (ns, last))
    last = ns
    size = int(f[3])
    if size in want:
        (got if f[1] == "A" else freed)[size] = ns
# A thread preempted between timing an event and putting it in its ring
# makes the event late: written in a later round, after later events, at
# their time (docs/heap-trace.md "Ordering").  That window is a few
# instructions long: a few such events may be late, none early.
tick, eps, bad, late = 100000, 50000, 0, 0
for size, (t0, t1) in want.items():
    if size not in got:
        sys.exit("allocation of %d bytes not in the trace" % size)
    ns = got[size]
    if ns > t1 + eps:
        late += 1
    if not (t0 - tick - eps <= ns <= t1 + eps):
        print("size %d at %d, read %d..%d (%+d us)" % (size, ns, t0, t1,
              (ns - t0) // 1000), file=sys.stderr)
    if ns < t0 - tick - eps:
        bad += 1
    if freed.get(size, -1) < ns:
        sys.exit("block of %d bytes freed at %s, before its allocation %d" %
                 (size, freed.get(size), ns))
if bad or late > len(want) // 100:
    sys.exit("%d of %d allocations before their window, %d after" %
             (bad, len(want), late))
print("%d allocations within their windows" % len(want))
PY
}

if [ "$tsc" = 1 ]; then
    CLOCK_ENV= check_times tsc
else
    echo "the clocksource is not the TSC: the default clock is CLOCK_MONOTONIC"
    CLOCK_ENV= check_times monotonic
fi
CLOCK_ENV="KILN_HEAP_CLOCK=monotonic" check_times monotonic
echo ok
