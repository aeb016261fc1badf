#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real gperftools heap profile: the heapkeep workload run with Debian's
# libtcmalloc preloaded and HEAPPROFILE set writes hp.0001.heap at exit
# ("heap profile: ... @ heapprofile", then MAPPED_LIBRARIES:).  kiln reads
# it as a legacy-heap profile, names the sites from the files the map
# names, and shows what each kept: 1,000,000 / 2,000,000 / 3,000,000
# bytes in use (heapprofile records every allocation: no unsampling, so
# exact), and churn's freed 10,000,000 bytes as allocated only.  `go tool
# pprof -top` on kiln's pprof agrees.
. "$(dirname "$0")/lib.sh"

TCMALLOC=$(ldconfig -p 2>/dev/null | awk '$1 == "libtcmalloc.so.4" { print $NF; exit }')
[ -n "$TCMALLOC" ] && [ -e "$TCMALLOC" ] ||
    skip "libtcmalloc.so.4 is not installed (Debian libgoogle-perftools4 / google-perftools)"
[ -x "$WL/heapkeep" ] || fail "workload heapkeep is not built"

( cd "$T" && LD_PRELOAD=$TCMALLOC HEAPPROFILE=$T/hp "$WL/heapkeep" >/dev/null 2>"$T/tc.err" ) ||
    { cat "$T/tc.err" >&2; fail "heapkeep failed under tcmalloc"; }
HP=$(ls "$T"/hp.*.heap 2>/dev/null | tail -1)
[ -n "$HP" ] || { cat "$T/tc.err" >&2; fail "tcmalloc wrote no heap profile"; }
has "$HP" "^heap profile: .*@ heap"
has "$HP" "^MAPPED_LIBRARIES:"

# The table: the sites by name (symbolized through MAPPED_LIBRARIES).
expect_status 0 "$KILN" top -n 30 --sample-type inuse_space "$HP"
cp "$T/out" "$T/top"
has "$T/top" "Type: inuse_space"
for f in keep_small keep_medium keep_large main; do
    has "$T/top" " $f$"
done
hasnt "$T/top" "heapkeep\+0x"

# Exact bytes per stack, through the collapsed writer.
expect_status 0 "$KILN" convert --sample-type inuse_space "$HP" -o "$T/inuse.collapsed"
has "$T/inuse.collapsed" "(^|;)main;keep_small(;keep)? 1000000$"
has "$T/inuse.collapsed" "(^|;)main;keep_medium(;keep)? 2000000$"
has "$T/inuse.collapsed" "(^|;)main;keep_large(;keep)? 3000000$"
hasnt "$T/inuse.collapsed" "churn"
expect_status 0 "$KILN" convert --sample-type alloc_space "$HP" -o "$T/alloc.collapsed"
has "$T/alloc.collapsed" "(^|;)main;churn [0-9]+$"
churn=$(awk '/;churn [0-9]+$/ { s += $NF } END { print s + 0 }' "$T/alloc.collapsed")
[ "$churn" = 10000000 ] || fail "churn allocated $churn bytes, expected 10000000"

# go tool pprof on kiln's pprof: the same in-use bytes per function.
expect_status 0 "$KILN" convert "$HP" -o "$T/hp.pb.gz"
if command -v go >/dev/null 2>&1; then
    HOME=$T GOCACHE=$T/go go tool pprof -top -cum -unit=B -sample_index=inuse_space \
        "$T/hp.pb.gz" >"$T/pprof" 2>&1 ||
        { cat "$T/pprof" >&2; fail "go tool pprof cannot read kiln's pprof"; }
    for f in keep_small:1000000 keep_medium:2000000 keep_large:3000000; do
        name=${f%:*} want=${f#*:}
        got=$(awk -v f="$name" '$NF == f { sub("B$", "", $4); print $4; exit }' "$T/pprof")
        [ "$got" = "$want" ] || { cat "$T/pprof" >&2; fail "pprof: $name has $got bytes in use, expected $want"; }
    done
fi
echo ok
