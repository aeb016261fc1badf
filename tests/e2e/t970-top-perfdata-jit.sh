#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# JIT code in a perf.data is named from /tmp/perf-PID.map at read time, as
# perf report names it: node --perf-basic-prof under `perf record -g`, and
# `kiln top` of that perf.data names the hot JS function with perf
# report's name and share.  A map owned by another user (not root, not the
# reader) is not believed, as perf report does not, and --no-local-symbols
# reads no map.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf
need_node_perfmap
JS=$KILN_SRC/tests/workloads/js/hotjit.js
trap 'rm -rf "$T"; [ -z "${NPID:-}" ] || rm -f "/tmp/perf-$NPID.map"' EXIT

perf_record -q -F 999 -g -o "$T/jit.data" -- node --perf-basic-prof "$JS" 300 "$T/pid" \
    >/dev/null 2>&1 || fail "perf record of node failed"
NPID=$(cat "$T/pid")
[ -s "/tmp/perf-$NPID.map" ] || fail "node wrote no /tmp/perf-$NPID.map"

# perf report's name and share of the hot function ("JS:*kilnHotLoop FILE:L:C").
perf_flat "$T/jit.data" > "$T/perf.flat"
hot=$(perf_hot_js "$T/perf.flat")
want=${hot%% *} name=${hot#* }
[ -n "$hot" ] || { head -20 "$T/perf.flat" >&2; fail "perf report does not name kilnHotLoop"; }

expect_status 0 "$KILN" top -n 0 "$T/jit.data"
cp "$T/out" "$T/kiln.top"
got=$(name_pct "$T/kiln.top" "$name")
[ -n "$got" ] || { head -20 "$T/kiln.top" >&2; fail "kiln top does not name '$name'"; }
# (Within 2 points: V8 reuses code space, and the map then holds older
# entries under newer ones that the two readers may order differently.)
within "$got" "$want" 2 || fail "'$name': kiln $got%, perf report $want%"

# Another user's map is not read (perf report: "not owned by current user
# or root"); root can give the map away to check.
if [ "$(id -u)" = 0 ]; then
    chown 65534 "/tmp/perf-$NPID.map"
    expect_status 0 "$KILN" top -n 0 "$T/jit.data"
    hasnt "$T/out" 'kilnHotLoop'
    has "$T/out" '\[anon\]'
    chown 0 "/tmp/perf-$NPID.map"
else
    echo "not root: the map's owner is not changed (ownership rule unchecked)" >&2
fi

# --no-local-symbols: no local file is read, the JIT map included.
expect_status 0 "$KILN" top -n 0 --no-local-symbols "$T/jit.data"
hasnt "$T/out" 'kilnHotLoop'
# And the flame graph reads it as top does.
expect_status 0 "$KILN" flame "$T/jit.data" -o "$T/jit.svg"
has "$T/jit.svg" 'kilnHotLoop'
exit 0
