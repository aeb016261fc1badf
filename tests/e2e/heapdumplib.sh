# SPDX-License-Identifier: Apache-2.0
# Helpers of the heap profile tests t860-t879 (sourced after lib.sh):
# HEAPPROFILE/KILN_HEAP dumps, kiln_heap_write and /debug/pprof/heap.
need_agent
# hval FILE TYPE FUNC: the TYPE value (alloc_space, inuse_objects, ...) of
# the stacks of pprof FILE whose leaf is FUNC, exact (kiln convert).
hval() {
    "$KILN" convert "$1" --sample-type "$2" -o "$T/hval.collapsed" ||
        fail "kiln convert $1 --sample-type $2"
    awk -v f="$3" '{ n = split($1, a, ";"); if (a[n] == f) s += $2 } END { printf "%.0f\n", s + 0 }' "$T/hval.collapsed"
}
# hexpect FILE TYPE FUNC WANT
hexpect() {
    local v
    v=$(hval "$1" "$2" "$3")
    [ "$v" = "$4" ] || { cat "$T/hval.collapsed" >&2; fail "$1: $3 $2 = $v, want $4"; }
}
# gopprof ARGS...: go tool pprof with its caches in $T; output in $T/go.txt.
gopprof() {
    HOME=$T GOCACHE=$T/gocache go tool pprof "$@" > "$T/go.txt" 2>&1 ||
        { cat "$T/go.txt" >&2; fail "go tool pprof $*"; }
}
