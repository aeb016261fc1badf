#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Cross-check with heaptrack on heapbasic: the same number of allocation
# calls per site of the workload, the same total (less what only one of
# the two tools sees: heaptrack's own libstdc++ allocates its exception
# pool in the traced process, and heaptrack does not hook valloc, pvalloc
# or reallocarray), the same memory leaked.
. "$(dirname "$0")/lib.sh"
need_agent
need heaptrack
need heaptrack_print

expect_status 0 "$KILN" heap -o "$T/k" -- "$WL/heapbasic"
cp "$T/err" "$T/kiln.txt"
heaptrack -o "$T/h" "$WL/heapbasic" > "$T/ht.out" 2>&1 || { cat "$T/ht.out"; fail "heaptrack"; }
heaptrack_print -a 1 -l 1 -p 0 -t 0 -n 1000 "$T"/h*.zst > "$T/hp.txt" 2>/dev/null ||
    fail "heaptrack_print"

# heaptrack: "N calls to allocation functions with ... from\nFUNC"
ht_calls() {
    awk -v f="$1" '/calls to allocation functions with .* from$/ { n = $1; getline; if ($1 == f) s += n }
        END { print s + 0 }' "$T/hp.txt"
}
kiln_calls() {
    awk -v f="$1" '{ n = split($1, a, ";"); if (a[n] == f) s += $2 } END { print s + 0 }' "$T/calls.collapsed"
}
"$KILN" convert "$T/k.trace.zst" --sample-type calls -o "$T/calls.collapsed" || fail "convert"
for f in alloc_small alloc_calloc alloc_grow leak_here peak_big; do
    a=$(kiln_calls "$f"); b=$(ht_calls "$f")
    [ "$a" = "$b" ] || fail "$f: $a calls in kiln, $b in heaptrack"
done

# totals: heaptrack's exception pool of libstdc++ (its own dependency)
# and alloc_aligned's three calls it does not see
ht_total=$(awk '/^calls to allocation functions:/ { print $5 }' "$T/hp.txt")
k_total=$(awk '/^calls to allocation functions:/ { print $5 }' "$T/kiln.txt")
ht_pool=$(awk '/calls to allocation functions with .* from$/ { n = $1; getline; getline;
    if ($0 ~ /libstdc\+\+/) s += n } END { print s + 0 }' "$T/hp.txt")
ht_aligned=$(ht_calls alloc_aligned)
k_aligned=$(kiln_calls alloc_aligned)
[ -n "$ht_total" ] && [ -n "$k_total" ] || fail "no totals"
[ $((k_total - k_aligned)) -eq $((ht_total - ht_pool - ht_aligned)) ] ||
    fail "kiln counts $k_total calls ($k_aligned aligned), heaptrack $ht_total ($ht_pool in its libstdc++, $ht_aligned aligned)"

# leaked: heaptrack prints 24.58K (decimal K), kiln the bytes
ht_leak=$(awk '/^total memory leaked:/ { print $4 }' "$T/hp.txt")
k_leak=$(awk '/^total memory leaked:/ { print $4 }' "$T/kiln.txt")
k_fmt=$(awk -v v="$k_leak" 'BEGIN { if (v < 1000) printf "%dB", v; else printf "%.2fK", v / 1000 }')
[ "$k_fmt" = "$ht_leak" ] || fail "kiln leaked $k_leak ($k_fmt), heaptrack $ht_leak"
exit 0
