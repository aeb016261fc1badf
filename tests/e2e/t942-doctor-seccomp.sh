#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln doctor where a seccomp filter refuses perf_event_open, as container
# runtimes' default profiles and hardened services do (the noperf
# workload): a problem (exit 1) blamed on the filter, not on the sysctl,
# with the container settings and kiln record --mode inject as the fix;
# the hardware counters are then not judged; kiln stat's refusal says the
# same (the doctor's explanation).  Without the filter the check passes.
. "$(dirname "$0")/lib.sh"
need python3
row() { python3 "$KILN_SRC/tests/e2e/doctor-row.py" "$@"; }
"$WL/noperf" true || skip "seccomp filters are not available here"
# Only where kiln itself may open events: the filter must be the reason.
python3 "$KILN_SRC/tests/e2e/perf-open-probe.py" || skip "perf_event_open is refused here already"

expect_status 1 "$WL/noperf" "$KILN" doctor --json
cp "$T/out" "$T/f.json"
o=$(row "$T/f.json" perf_event_open) || fail "no perf_event_open row"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
case $o in
problem$'\t'"refused (Permission denied) by a seccomp filter (Seccomp: 2 in /proc/self/status), not by the sysctl (perf_event_paranoid $paranoid)"*) ;;
*) fail "perf_event_open under the filter: $o";;
esac
printf '%s\n' "$o" | grep -q -- "--security-opt seccomp=unconfined" || fail "no container fix: $o"
printf '%s\n' "$o" | grep -q -- "kiln record --mode inject" || fail "no inject fallback: $o"
h=$(row "$T/f.json" hw-counters) || fail "no hw-counters row"
case $h in skip$'\t'"not known: perf_event_open is refused"*) ;; *) fail "hw-counters under the filter: $h";; esac
# In a container (a marker file or PID 1's cgroup) the finding says which.
if [ -e /.dockerenv ]; then
    printf '%s\n' "$o" | grep -q "kiln runs in a docker container" || fail "container not named: $o"
fi
# The table: the problem, its fix, the count.
expect_status 1 "$WL/noperf" "$KILN" doctor
has "$T/out" "^problem +perf_event_open +refused \(Permission denied\) by a seccomp filter"
has "$T/out" "^ +fix: allow perf_event_open where the process runs"
has "$T/out" "^1 problem, "

# kiln stat meets the same refusal and says the same why and fix.
expect_status 1 "$WL/noperf" "$KILN" stat -- true
has "$T/err" "^  why: refused \(Permission denied\) by a seccomp filter"
has "$T/err" "^  fix: allow perf_event_open where the process runs"

# Without the filter: it works.
"$KILN" doctor --json > "$T/ok.json" || [ $? -eq 1 ] || fail "kiln doctor failed"
o=$(row "$T/ok.json" perf_event_open)
case $o in ok$'\t'works:*) ;; *) fail "without the filter: $o";; esac
echo ok
