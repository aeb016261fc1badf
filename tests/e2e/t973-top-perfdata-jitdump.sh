#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# JIT code in a perf.data named from the runtime's jitdump file (issue 22
# item 3, "and jit-PID.dump where present"): node --perf-prof writes
# jit-PID.dump in its working directory and maps it, so that perf records
# its path; perf report names that code only after `perf inject --jit`
# (ELF files made from the dump).  `kiln top` of the perf.data as
# recorded names the hot JS function with the injected file's name and
# share (within 2 points: V8 reuses code space).  A dump owned by another
# user (not root, not the reader) is not believed, as the perf map is not,
# and a dump that is not one (its magic overwritten) names nothing and
# stops nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf
need_node_perfprof
JS=$KILN_SRC/tests/workloads/js/hotjit.js
export HOME=$T	# perf inject's ELF files go to ~/.debug/jit

# -k 1: the monotonic clock node's records use (perf inject needs it).
perf_record -q -F 999 -g -k 1 -o "$T/jd.data" -- node --perf-prof "$JS" 300 "$T/pid" \
    >/dev/null 2>&1 || fail "perf record of node --perf-prof failed"
NPID=$(cat "$T/pid")
DUMP=$T/jit-$NPID.dump
[ -s "$DUMP" ] || fail "node wrote no $DUMP"
rm -f "/tmp/perf-$NPID.map"	# (none is written; the dump alone names)
perf inject --jit -i "$T/jd.data" -o "$T/ji.data" 2>/dev/null || fail "perf inject --jit failed"

perf_flat "$T/ji.data" > "$T/perf.flat"
hot=$(perf_hot_js "$T/perf.flat")
want=${hot%% *} name=${hot#* }
[ -n "$hot" ] || { head -20 "$T/perf.flat" >&2; fail "perf report (injected) does not name kilnHotLoop"; }

expect_status 0 "$KILN" top -n 0 "$T/jd.data"
cp "$T/out" "$T/kiln.top"
got=$(name_pct "$T/kiln.top" "$name")
[ -n "$got" ] || { head -20 "$T/kiln.top" >&2; fail "kiln top does not name '$name'"; }
within "$got" "$want" 2 || fail "'$name': kiln $got%, perf report after perf inject $want%"

if [ "$(id -u)" = 0 ]; then
    chown 65534 "$DUMP"
    expect_status 0 "$KILN" top -n 0 "$T/jd.data"
    hasnt "$T/out" 'kilnHotLoop'
    chown 0 "$DUMP"
else
    echo "not root: the dump's owner is not changed (ownership rule unchecked)" >&2
fi
printf 'XXXX' | dd of="$DUMP" conv=notrunc status=none
expect_status 0 "$KILN" top -n 0 "$T/jd.data"
hasnt "$T/out" 'kilnHotLoop'
echo ok
