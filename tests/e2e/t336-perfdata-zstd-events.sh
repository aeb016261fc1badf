#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf.data made here with `perf record -z` (zstd-compressed records) and
# with two events (`-e task-clock,page-faults`): read; the totals equal
# perf report's; each event is its own sample type (task-clock's samples
# add nothing to page-faults' and the other way round); --event picks one
# on top, flame, convert and callgraph; an unknown one is refused, naming
# the file's events.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

# perf report's "EVENT SAMPLES EVENT_COUNT" per event of perf.data $1
# (the samples summed over its rows: the header says "1K" from 1000 on).
perf_totals() {
    perf report -i "$1" --stdio --no-children -n --sort sym -g none 2>/dev/null |
        awk '/^# Samples: / { ev = $0; sub(/.* of events? \047/, "", ev)
                              sub(/\047$/, "", ev); order[++k] = ev }
             /^# Event count/ { count[ev] = $NF }
             $1 ~ /%$/ && $2 ~ /^[0-9]+$/ { n[ev] += $2 }
             END { for (i = 1; i <= k; i++) print order[i], n[order[i]] + 0, count[order[i]] }'
}
# The sum of sample type $2 of $1 (collapsed stacks: exact values), then
# kiln's options.
kiln_sum() {
    local f=$1 t=$2
    shift 2
    "$KILN" convert -q "$@" --sample-type "$t" "$f" -o "$T/sum.collapsed" ||
        fail "kiln convert $f $*"
    awk '{ s += $NF } END { printf "%d\n", s }' "$T/sum.collapsed"
}

# -z: compressed records.
perf_record -q -z -F 999 -g -o "$T/z.data" -- "$WL/shares" 1 >/dev/null 2>&1 ||
    skip "perf record -z failed (perf built without zstd?)"
perf report -i "$T/z.data" --header-only 2>/dev/null | grep -q 'compressed : Zstd' ||
    fail "perf record -z wrote no compressed records"
compare_with_perf "$T/z.data"
# The call chains as perf has them (frame pointers skip gcc's frameless
# stage_a, as in t330).
expect_status 0 "$KILN" convert "$T/z.data" -o "$T/z.collapsed"
has "$T/z.collapsed" '(^|;)main;run;burn_a [0-9]+$'
# Cut inside its compressed records: refused with the offset, exit 2.
size=$(stat -c %s "$T/z.data")
head -c $((size * 2 / 3)) "$T/z.data" > "$T/cut.data"
expect_status 2 "$KILN" top "$T/cut.data"
has "$T/err" 'read as perf.data: byte [0-9]+'
# A limit below what the records inflate to: a clear error, not a hang.
KILN_MAX_INPUT=4k expect_status 2 "$KILN" top "$T/z.data"
has "$T/err" 'inflate to more than 4 KiB, the limit for decompressed input'

# Two events.
perf_record -q -e task-clock,page-faults -F 999 -g -o "$T/two.data" -- \
    "$WL/shares" 1 >/dev/null 2>&1 || fail "perf record -e task-clock,page-faults failed"
perf_totals "$T/two.data" > "$T/perf.totals"
grep -q '^task-clock ' "$T/perf.totals" || fail "perf report has no task-clock samples"
grep -q '^page-faults ' "$T/perf.totals" || fail "perf report has no page-faults samples"
expect_status 0 "$KILN" top -n 5 "$T/two.data"
has "$T/out" '^Type: task-clock$'
all=$(awk '{ s += $2 } END { print s }' "$T/perf.totals")
[ "$(kiln_sum "$T/two.data" samples)" = "$all" ] ||
    fail "kiln counts $(kiln_sum "$T/two.data" samples) samples, perf report $all"
while read -r ev n count; do
    # The event's own column of the whole profile...
    got=$(kiln_sum "$T/two.data" "$ev")
    [ "$got" = "$count" ] || fail "$ev: kiln's total $got, perf report's $count"
    # ...and the event alone.
    got=$(kiln_sum "$T/two.data" samples --event "$ev")
    [ "$got" = "$n" ] || fail "--event $ev: kiln counts $got samples, perf report $n"
    got=$(kiln_sum "$T/two.data" 1 --event "$ev")
    [ "$got" = "$count" ] || fail "--event $ev: kiln's total $got, perf report's $count"
done < "$T/perf.totals"
# A page fault's sample adds nothing to task-clock: a stack that only
# page-faults sampled (the loader's) is 0 in task-clock's column.
"$KILN" convert -q --sample-type page-faults "$T/two.data" -o "$T/pf.collapsed" ||
    fail "kiln convert --sample-type page-faults"
"$KILN" convert -q --sample-type task-clock "$T/two.data" -o "$T/tc.collapsed" ||
    fail "kiln convert --sample-type task-clock"
[ "$(awk '{ s += $NF } END { print s }' "$T/pf.collapsed")" -lt \
  "$(awk '{ s += $NF } END { print s }' "$T/tc.collapsed")" ] ||
    fail "page-faults' total is not below task-clock's nanoseconds"
# burn_a is task-clock's: 60%, as in any CPU profile of shares.
expect_status 0 "$KILN" top -n 0 --event task-clock "$T/two.data"
has "$T/out" '^Type: cpu$'
v=$(top_pct "$T/out" burn_a)
within "${v:-0}" 60 5 || fail "--event task-clock: burn_a at ${v:-none}%, want about 60"
expect_status 0 "$KILN" top -n 3 --event page-faults "$T/two.data"
has "$T/out" '^Type: page-faults$'
expect_status 0 "$KILN" flame --event page-faults "$T/two.data" -o "$T/pf.svg"
expect_status 0 "$KILN" callgraph --event page-faults --format dot "$T/two.data" -o "$T/pf.dot"
# An event the file does not have: refused, naming those it has.
expect_status 2 "$KILN" top --event cycles "$T/two.data"
has "$T/err" "no event 'cycles' in the file \(it samples task-clock, page-faults\)"
exit 0
