#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf.data from `perf record --call-graph dwarf` of a program built
# without frame pointers: the register and stack copies are unwound by
# kiln's own DWARF unwinder; totals equal perf report's, shares within a
# point, and the stacks reach main through the stage functions.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

perf_record -q -F 999 --call-graph dwarf -o "$T/dw.data" -- "$WL/shares-nofp" 1 \
    >/dev/null 2>&1 || fail "perf record --call-graph dwarf failed"
compare_with_perf "$T/dw.data"
expect_status 0 "$KILN" convert "$T/dw.data" -o "$T/dw.collapsed"
# Without frame pointers only the unwinder finds the callers.
has "$T/dw.collapsed" '(^|;)main;run;stage_a;burn_a [0-9]+$'
has "$T/dw.collapsed" '(^|;)main;run;stage_b;burn_b [0-9]+$'
n_all=$(awk '{ s += $NF } END { print s }' "$T/dw.collapsed")
n_main=$(awk '/(^|;)main;/ { s += $NF } END { print s + 0 }' "$T/dw.collapsed")
awk -v a="$n_main" -v b="$n_all" 'BEGIN { exit !(a >= 0.95 * b) }' ||
    fail "only $n_main of $n_all cpu-ns reach main"
exit 0
