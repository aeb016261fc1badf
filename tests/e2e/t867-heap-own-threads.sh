#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln's own work is not the program's: in a server run with KILN_HTTP
# and KILN_HEAP_TRACE (every allocation), after many requests (heap and
# CPU profiles, the index, 404s), neither /debug/pprof/allocs nor the
# trace holds a stack through libmicrohttpd or a function of libkiln.so's
# own (its exported interposers stand in for libc's and may appear; so
# may trampoline, the start of every thread of the program): the threads
# kiln starts, and those libmicrohttpd starts for it, are never recorded.
# Before: 2 MB of libmicrohttpd's connection pools, the CPU collector's
# and the profile workers' symbolization counted as the program's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"
need curl
need nm

PID=""
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$T"' EXIT

env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HTTP=127.0.0.1:0 KILN_LOG=info KILN_HEAP_SAMPLE=0 \
    KILN_HEAP_TRACE="$T/h.trace" "$WL/heapserve" > "$T/s.out" 2> "$T/s.err" &
PID=$!
wait_for "heapserve to be ready" grep -q '^ready' "$T/s.out"
wait_for "the HTTP server" grep -q 'http on 127\.0\.0\.1:' "$T/s.err"
port=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/s.err")
URL=http://127.0.0.1:$port/debug/pprof
get() {
    local code
    code=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 120 "$URL/$1") || true
    [ "$code" = "${2:-200}" ] || { head -c 500 "$T/body" >&2; fail "GET $1 answered $code"; }
}
for i in $(seq 20); do
    get heap
    get "heap?debug=1"
    get ""
    get nosuch 404
done
get "profile?seconds=1"
get "allocs?seconds=1"
get "heap?gc=1"
get allocs
cp "$T/body" "$T/allocs.pb.gz"
kill -TERM "$PID"
wait "$PID" || fail "heapserve did not exit 0"
PID=""

# The own functions (not exported) of libkiln.so and libkiln-malloc.so,
# but trampoline.
for lib in "$KILN_LIB" "$KILN_MALLOC_LIB"; do
    nm --defined-only "$lib" | awk '$2 ~ /^[tTwW]$/ { print $3 }'
done | sort -u > "$T/all.txt"
for lib in "$KILN_LIB" "$KILN_MALLOC_LIB"; do
    nm -D --defined-only "$lib" | awk '{ sub(/@.*/, "", $3); print $3 }'
done | sort -u > "$T/exported.txt"
comm -23 "$T/all.txt" "$T/exported.txt" | grep -vx trampoline > "$T/own.txt"
grep -qx job_main "$T/own.txt" || fail "nm does not list libkiln.so's local functions"

# check FILE: no stack of FILE (pprof or trace) goes through kiln or
# libmicrohttpd; the program's own sites are there.
check() {
    "$KILN" convert "$1" --sample-type "$2" -o "$T/c.collapsed" ||
        fail "kiln convert $1"
    awk 'NR == FNR { own[$0] = 1; next }
         { n = split($1, f, ";")
           for (i = 1; i <= n; i++)
               if (f[i] in own || f[i] ~ /^(libmicrohttpd|MHD_)/) { print; break } }' \
        "$T/own.txt" "$T/c.collapsed" > "$T/kiln.collapsed"
    [ ! -s "$T/kiln.collapsed" ] ||
        { head -c 3000 "$T/kiln.collapsed" >&2; fail "$1: stacks of kiln's own work"; }
    grep -q 'main;hold_cache ' "$T/c.collapsed" || { head "$T/c.collapsed" >&2; fail "$1: no hold_cache"; }
    grep -q 'main;churn ' "$T/c.collapsed" || fail "$1: no churn"
}
check "$T/allocs.pb.gz" alloc_space
hexpect "$T/allocs.pb.gz" alloc_objects hold_cache 64
check "$T/h.trace" allocated
echo ok
