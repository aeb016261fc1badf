#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# URLs as inputs, as `go tool pprof URL` takes them: kiln top, convert,
# flame and serve fetch http://HOST:PORT/debug/pprof/profile?seconds=N
# (and /heap) from a program running with KILN_HTTP; KILN_HTTP_TOKEN is
# sent as "Authorization: Bearer" (401 without it: a clear error, exit 2);
# a 404 says the status and the server's first line, a refused connection
# and a bad URL exit 2 as an unreadable file does; KILN_MAX_INPUT caps
# what is received.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

SERVE_ENV="KILN_HTTP_TOKEN=s3cret KILN_HEAP_SAMPLE=0" start_http s --http 127.0.0.1:0
BASE=http://127.0.0.1:$PORT/debug/pprof
CPU="$BASE/profile?seconds=1"

# No token: the server's 401 and what to do about it.
expect_status 2 env -u KILN_HTTP_TOKEN "$KILN" top "$CPU"
has "$T/err" "^kiln: cannot fetch '$BASE/profile\?seconds=1': HTTP 401 Unauthorized: .*Authorization: Bearer"
has "$T/err" "set KILN_HTTP_TOKEN"
expect_status 2 env KILN_HTTP_TOKEN=wrong "$KILN" top "$CPU"
has "$T/err" "HTTP 401 Unauthorized"
has "$T/err" "KILN_HTTP_TOKEN is not the server's token"

export KILN_HTTP_TOKEN=s3cret
# The CPU profile of one second: the workload's hot function on top.
expect_status 0 "$KILN" top -n 0 "$CPU"
has "$T/out" "^Type: cpu"
first=$(awk '/ flat%/ { getline; print $NF; exit }' "$T/out")
[ "$first" = hash_payload ] || { cat "$T/out"; fail "kiln top URL shows $first on top, want hash_payload"; }
# Not a terminal: no progress line.
hasnt "$T/err" "fetching"

# convert URL -o: the output named as given, read by kiln (and go below).
( cd "$T" && "$KILN" convert -q "$CPU" -o x.pb.gz ) || fail "kiln convert URL -o x.pb.gz"
[ "$(head -c 2 "$T/x.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "x.pb.gz is not gzip"
expect_status 0 "$KILN" top "$T/x.pb.gz"
has "$T/out" " hash_payload$"
# flame's default output: the URL's last path component.
( cd "$T" && "$KILN" flame -q "$CPU" ) || fail "kiln flame URL"
[ -s "$T/profile.svg" ] || { ls "$T" >&2; fail "kiln flame URL did not write profile.svg"; }
has "$T/profile.svg" "hash_payload"

# The heap profile as input (every allocation traced: KILN_HEAP_SAMPLE=0).
expect_status 0 "$KILN" top "$BASE/heap"
has "$T/out" "^Type: inuse_space"
expect_status 0 "$KILN" top --sample-type alloc_space "$BASE/heap?gc=1"
has "$T/out" "^Type: alloc_space"

# A 404: the status and the first line of kiln's text answer.
expect_status 2 "$KILN" top "http://127.0.0.1:$PORT/nope"
has "$T/err" "^kiln: cannot fetch 'http://127.0.0.1:$PORT/nope': HTTP 404 Not Found: 404 page not found"
# The server's 400 for a bad parameter.
expect_status 2 "$KILN" top "$BASE/profile?seconds=abc"
has "$T/err" "HTTP 400 Bad Request: "
# More than KILN_MAX_INPUT: refused while receiving.
expect_status 2 env KILN_MAX_INPUT=100 "$KILN" top "$BASE/heap"
has "$T/err" "more than 100 bytes of input.*KILN_MAX_INPUT"
# A bad URL, an unknown scheme's look-alike, an unresolvable host.
expect_status 2 "$KILN" top "http://127.0.0.1:99999999/x"
has "$T/err" "not a valid URL"

# kiln serve URL: the URL is the input's name.
. "$(dirname "$0")/lib-serve.sh"
serve_start --http 127.0.0.1:0 "$CPU"
trap 'kill -INT $SERVE_PID 2>/dev/null; cleanup_http' EXIT
serve_loaded
has "$T/serve.err" "reading '$BASE/profile\?seconds=1'"
expect_get 200 /api/profiles
grep -qF "$CPU" "$T/body" || { cat "$T/body" >&2; fail "/api/profiles does not name the URL"; }
serve_stop
trap cleanup_http EXIT

stop_serve
# Nobody listens any more: connection refused, exit 2 as for a missing file.
expect_status 2 "$KILN" top "$CPU"
has "$T/err" "^kiln: cannot fetch '$BASE/profile\?seconds=1': Connection refused"

need go
rm -rf "$T/gohome" && mkdir -p "$T/gohome"
(cd "$T/gohome" && HOME=$T/gohome GOCACHE=$T/gohome/cache PPROF_TMPDIR=$T/gohome \
    go tool pprof -top "$T/x.pb.gz") > "$T/go.txt" 2> "$T/go.err" ||
    { cat "$T/go.err"; fail "go tool pprof -top x.pb.gz failed"; }
has "$T/go.txt" "^Type: cpu"
has "$T/go.txt" " hash_payload$"
echo ok
