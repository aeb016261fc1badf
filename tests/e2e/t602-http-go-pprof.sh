#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# The real Go client against the endpoint: `go tool pprof -top
# http://127.0.0.1:PORT/debug/pprof/profile?seconds=3` shows the program's
# hot function on top; the raw download is gzipped pprof with Go's headers,
# symbolized (names without the binary), read by kiln top as well.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0
# curl's own Accept (*/*) gets the protobuf.
expect_code 200 "debug/pprof/profile?seconds=2&frequency=250"
has "$T/headers" "Content-Type: application/octet-stream"
has "$T/headers" 'Content-Disposition: attachment; filename="profile"'
[ "$(head -c 2 "$T/body" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "the profile is not gzipped"
cp "$T/body" "$T/raw.pb.gz"
"$KILN" top -n 0 "$T/raw.pb.gz" > "$T/top.txt" || fail "kiln top cannot read the download"
has "$T/top.txt" "Type: cpu"
h=$(top_pct "$T/top.txt" hash_payload); p=$(top_pct "$T/top.txt" parse_header)
[ -n "$h" ] && [ -n "$p" ] || { cat "$T/top.txt"; fail "hash_payload/parse_header missing"; }
awk -v h="$h" -v p="$p" 'BEGIN { exit !(h > p && h >= 50) }' ||
    { cat "$T/top.txt"; fail "hash_payload at $h%, parse_header at $p%: want hash_payload on top"; }
# The server is not sampled as the host's work.
"$KILN" convert "$T/raw.pb.gz" -o "$T/raw.collapsed"
hasnt "$T/raw.collapsed" "MHD_|microhttpd|job_main|on_request"
has "$T/raw.collapsed" "worker;handle_request;hash_payload "

need go
rm -rf "$T/gohome" && mkdir -p "$T/gohome"
(cd "$T/gohome" && HOME=$T/gohome GOCACHE=$T/gohome/cache PPROF_TMPDIR=$T/gohome \
    timeout 120 go tool pprof -top "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=3") \
    > "$T/go.txt" 2> "$T/go.err" || { cat "$T/go.err"; fail "go tool pprof failed"; }
has "$T/go.txt" "^Type: cpu"
has "$T/go.txt" "^Duration: 3"
first=$(awk '/ flat%/ { getline; print $NF; exit }' "$T/go.txt")
[ "$first" = hash_payload ] || { cat "$T/go.txt"; fail "go tool pprof shows $first on top, want hash_payload"; }
has "$T/go.txt" " parse_header$"
has "$T/go.txt" " handle_request$"
stop_serve
echo ok
