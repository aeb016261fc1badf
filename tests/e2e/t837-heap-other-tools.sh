#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Other tools' heap files: heapbasic (known numbers, see t830) under
# valgrind --tool=massif and under heaptrack; kiln reads both files and
# gives the figures of the tools' own printers on the same files:
# massif's peak as ms_print prints it, heaptrack's calls, temporary, peak
# and leaked as heaptrack_print -F writes them (heaptrack_print has no
# total of bytes allocated: that one is summed from the trace's records).
# kiln top, flame and convert read both.
. "$(dirname "$0")/lib.sh"
need valgrind
need ms_print
need heaptrack
need heaptrack_print
need zstd

sum() { awk '{ s += $NF } END { printf "%.0f\n", s }' "$1"; }

# --- massif ---------------------------------------------------------
# valgrind has no pvalloc: heapbasic stops there ("Program aborting
# because of call to pvalloc"), after alloc_small, alloc_calloc and
# alloc_grow; massif still writes its file, which is what is compared.
valgrind --tool=massif --massif-out-file="$T/massif.out.1" "$WL/heapbasic" \
    > "$T/vg.out" 2> "$T/vg.err"
[ -s "$T/massif.out.1" ] || { cat "$T/vg.err"; fail "valgrind massif wrote nothing"; }
ms_print "$T/massif.out.1" > "$T/ms.txt" || fail "ms_print"
# "Detailed snapshots: [9, 19, 31 (peak), ...]": the peak's row
pk=$(sed -n 's/.*[[ ]\([0-9][0-9]*\) (peak).*/\1/p' "$T/ms.txt" | head -1)
[ -n "$pk" ] || fail "no peak snapshot in ms_print's output"
want=$(awk -v n="$pk" '$1 == n && NF == 6 { gsub(",", "", $4); print $4; exit }' "$T/ms.txt")
[ -n "$want" ] || fail "no row for snapshot $pk in ms_print's output"
expect_status 0 "$KILN" convert "$T/massif.out.1" -o "$T/m.collapsed"
got=$(sum "$T/m.collapsed")
[ "$got" = "$want" ] || fail "massif peak: kiln $got, ms_print $want"
has "$T/m.collapsed" '(^|;)run;alloc_small [0-9]+$|main;run;'
expect_status 0 "$KILN" top "$T/massif.out.1"
has "$T/out" '^Type: space$'
expect_status 0 "$KILN" flame "$T/massif.out.1" -o "$T/m.svg"
has "$T/m.svg" '</svg>'
expect_status 0 "$KILN" convert "$T/massif.out.1" -o "$T/m.pb.gz"
[ -s "$T/m.pb.gz" ] || fail "no pprof from massif"

# --- heaptrack ------------------------------------------------------
heaptrack -o "$T/heaptrack.heapbasic.1" "$WL/heapbasic" > "$T/ht.out" 2>&1 ||
    { cat "$T/ht.out"; fail "heaptrack"; }
ht=$(ls "$T"/heaptrack.heapbasic.1.*z* 2>/dev/null | head -1)
[ -s "$ht" ] || { cat "$T/ht.out"; fail "no heaptrack trace"; }
for m in allocations:calls temporary:temporary peak:peak leaked:leaked; do
    theirs=${m%%:*} ours=${m##*:}
    heaptrack_print -F "$T/fg.$theirs" --flamegraph-cost-type "$theirs" "$ht" \
        > /dev/null 2>&1 || fail "heaptrack_print -F ($theirs)"
    want=$(sum "$T/fg.$theirs")
    expect_status 0 "$KILN" convert "$ht" --sample-type "$ours" -o "$T/k.collapsed"
    got=$(sum "$T/k.collapsed")
    [ "$got" = "$want" ] || fail "heaptrack $ours: kiln $got, heaptrack_print $want"
done
# heaptrack_print's summary line says the same calls
heaptrack_print "$ht" > "$T/hp.txt" 2>&1
calls=$(sed -n 's/^calls to allocation functions: \([0-9]*\) .*/\1/p' "$T/hp.txt")
expect_status 0 "$KILN" convert "$ht" --sample-type calls -o "$T/k.collapsed"
[ "$(sum "$T/k.collapsed")" = "$calls" ] || fail "calls: summary says $calls"
# bytes allocated: each '+' record's allocation kind's size
case "$ht" in *.gz) cat_=(gzip -dc) ;; *) cat_=(zstd -dcq) ;; esac
want=$("${cat_[@]}" "$ht" | awk 'function h(s,  i, v) { v = 0; s = tolower(s);
        for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
    $1 == "a" { size[n++] = h($2) } $1 == "+" { s += size[h($2)] } END { printf "%.0f\n", s }')
expect_status 0 "$KILN" convert "$ht" --sample-type allocated -o "$T/k.collapsed"
[ "$(sum "$T/k.collapsed")" = "$want" ] || fail "allocated: kiln $(sum "$T/k.collapsed"), trace $want"
# heapbasic's known numbers, per site
expect_status 0 "$KILN" convert "$ht" --sample-type leaked -o "$T/k.collapsed"
has "$T/k.collapsed" ';leak_here 20480$'
expect_status 0 "$KILN" convert "$ht" --sample-type calls -o "$T/k.collapsed"
has "$T/k.collapsed" ';alloc_small 1000$'
expect_status 0 "$KILN" top --sample-type peak "$ht"
has "$T/out" '^Type: peak$'
has "$T/out" ' peak_big$'
expect_status 0 "$KILN" flame --sample-type leaked "$ht" -o "$T/h.svg"
has "$T/h.svg" 'leak_here'
# the .gz form heaptrack writes without zstd
zstd -dcq "$ht" | gzip -c > "$T/heaptrack.heapbasic.2.gz"
expect_status 0 "$KILN" top --sample-type calls "$T/heaptrack.heapbasic.2.gz"
has "$T/out" ' alloc_small$'
exit 0
