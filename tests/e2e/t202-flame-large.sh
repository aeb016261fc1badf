#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A profile of 100,000 distinct tiny stacks beside one big one: frames
# narrower than a pixel are merged, so the SVG stays small and quick.
. "$(dirname "$0")/lib.sh"

awk 'BEGIN {
    print "main;server;handle;big_work 100000"
    for (i = 0; i < 100000; i++)
        printf "main;server;tiny_%06d;leaf_%d;deeper_%d 1\n", i, i, i
}' > "$T/big.collapsed"
# Quick in CPU time (user + system), which a loaded machine does not
# stretch as it does wall-clock time.
TIMEFORMAT='%U %S'
{ time "$KILN" flame "$T/big.collapsed" -o "$T/big.svg" > "$T/out" 2> "$T/err"; } 2> "$T/time" ||
    { cat "$T/err" >&2; fail "kiln flame failed"; }
size=$(wc -c < "$T/big.svg")
[ "$size" -lt 100000 ] || fail "SVG of 100k tiny stacks is $size bytes"
has "$T/big.svg" '<title>big_work \(100,000 samples, 50.00%\)'
has "$T/big.svg" '<title>\[100000 small frames\] \(100,000 samples, 50.00%\)'
hasnt "$T/big.svg" 'leaf_'
ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$T/time")
limit=10000
[ "${KILN_SANITIZE:-}" = ON ] && limit=60000
[ "$ms" -lt "$limit" ] || fail "took $ms ms of CPU time"
echo "100k stacks: $size bytes in $ms ms of CPU time"
exit 0
