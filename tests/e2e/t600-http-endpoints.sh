#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# The /debug/pprof/ endpoints other than the CPU profile, in a program
# that calls kiln_http_start (libkiln.so preloaded): the index page with
# its links, the command line as Go gives it (NUL-separated), Go's symbol
# protocol (GET and POST), the heap profiles (gzipped pprof; more in
# t863-heap-http.sh), 404 and 405.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0 --idle
has "$T/s.err" "http on 127\.0\.0\.1:$PORT"

expect_code 200 debug/pprof/
has "$T/headers" "Content-Type: text/html"
for l in 'href="profile\?seconds=30"' 'href="cmdline"' 'href="symbol"' 'href="heap"' 'format=html' 'debug=1'; do
    has "$T/body" "$l"
done
expect_code 200 debug/pprof
has "$T/body" "<h1>/debug/pprof/</h1>"
expect_code 200 debug/pprof/ -I
has "$T/headers" "Content-Type: text/html"

# cmdline: the arguments joined by NUL bytes, no NUL at the end (Go).
expect_code 200 debug/pprof/cmdline
printf '%s\0%s\0%s\0%s' "$WL/httpserve" --http 127.0.0.1:0 --idle > "$T/want"
cmp "$T/body" "$T/want" || { od -c "$T/body" | head; fail "cmdline differs"; }

# symbol: GET says symbols exist; POST names each known address.
expect_code 200 debug/pprof/symbol
printf 'num_symbols: 1\n' > "$T/want"
cmp "$T/body" "$T/want" || fail "GET symbol: $(cat "$T/body")"
inside=$(printf '0x%x' $((HASH + 7)))
expect_code 200 debug/pprof/symbol --data-binary "$HASH+0x1+$inside+junk+0"
has "$T/body" "^num_symbols: 1$"
has "$T/body" "^$HASH hash_payload$"
has "$T/body" "^$inside hash_payload$"
hasnt "$T/body" "^0x1 "
[ "$(wc -l < "$T/body")" -eq 3 ] || { cat "$T/body"; fail "POST symbol: unknown addresses must be left out"; }
# The query string form of a GET, as Go accepts it.
expect_code 200 "debug/pprof/symbol?$HASH+0x1"
has "$T/body" "^$HASH hash_payload$"
# A libc function, through the mappings of the process.
NS=$(awk '$1=="nanosleep" { print $2 }' "$T/s.out")
expect_code 200 debug/pprof/symbol --data-binary "$NS"
has "$T/body" "^$NS .*nanosleep$"
expect_code 405 debug/pprof/symbol -X DELETE
has "$T/headers" "Allow: GET, HEAD, POST"

# The heap profiles: kiln_http_start turned heap profiling on.
expect_code 200 debug/pprof/heap
has "$T/headers" 'Content-Disposition: attachment; filename="heap"'
[ "$(head -c 2 "$T/body" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "/heap is not gzip"
expect_code 200 "debug/pprof/heap?gc=1&debug=1"
has "$T/body" "^Type: inuse_space$"
expect_code 200 "debug/pprof/allocs?seconds=1&debug=1"
has "$T/body" "^Type: alloc_space$"
expect_code 400 "debug/pprof/heap?seconds=0"
has "$T/body" "bad seconds '0'"

# Unknown paths and methods.
for p in "" debug debug/pprofx debug/pprof/nope debug/pprof/profile/x "debug/pprof/cmdline/" favicon.ico; do
    expect_code 404 "$p"
    has "$T/body" "404 page not found"
done
expect_code 405 debug/pprof/cmdline -X POST -d x
has "$T/headers" "Allow: GET, HEAD"
expect_code 405 debug/pprof/profile -X PUT -d x

# Nothing of the server is left after kiln_http_stop.
stop_serve
has "$T/s.out" "^stopped$"
! curl -s --max-time 2 "http://127.0.0.1:$PORT/debug/pprof/" >/dev/null || fail "still answering after kiln_http_stop"
echo ok
