#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Who KILN_HTTP answers on loopback: no Host naming another machine (DNS
# rebinding), no request from another site's page (an <img> start of an
# hour-long profile, a cross-origin POST to /symbol), but a link followed
# from elsewhere and every non-browser client (no Origin, no Sec-Fetch-*).
# Without a token a /symbol body is capped small (anyone may send one);
# the token lifts the cap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0 --idle
expect_code 200 debug/pprof/cmdline
expect_code 200 debug/pprof/cmdline -H "Host: localhost:$PORT"
expect_code 403 debug/pprof/cmdline -H "Host: evil.example:$PORT"
has "$T/body" "Host header"
expect_code 403 "debug/pprof/profile?seconds=3600" -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: no-cors"
expect_code 403 debug/pprof/symbol -H "Origin: http://evil.example" --data-binary "$HASH"
hasnt "$T/body" hash_payload
expect_code 403 debug/pprof/symbol -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: navigate" --data-binary "$HASH"
# The refused profile did not start: another one may.
expect_code 200 "debug/pprof/profile?seconds=1&debug=1"
expect_code 200 debug/pprof/ -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: navigate"
expect_code 200 debug/pprof/symbol -H "Origin: http://127.0.0.1:$PORT" --data-binary "$HASH"
has "$T/body" "^$HASH hash_payload$"
expect_code 200 debug/pprof/symbol --data-binary "$HASH"
# 20 KiB of addresses without a token: refused, and said why.
for _ in $(seq 1500); do printf '%s+' "$HASH"; done > "$T/big.txt"
[ "$(stat -c %s "$T/big.txt")" -gt 16384 ] || fail "the big body is not big"
expect_code 413 debug/pprof/symbol --data-binary "@$T/big.txt"
has "$T/body" "KILN_HTTP_TOKEN allows more"
stop_serve

SERVE_ENV="KILN_HTTP_TOKEN=t0k" start_http t --http 127.0.0.1:0 --idle
for _ in $(seq 1500); do printf '%s+' "$HASH"; done > "$T/big.txt"
expect_code 200 debug/pprof/symbol -H "Authorization: Bearer t0k" --data-binary "@$T/big.txt"
has "$T/body" "^$HASH hash_payload$"
expect_code 403 debug/pprof/symbol -H "Authorization: Bearer t0k" -H "Origin: http://evil.example" --data-binary "$HASH"
stop_serve

# Beyond loopback, any name reaches it (its token guards it).
start_http a --http 0.0.0.0:0 --idle
expect_code 200 debug/pprof/cmdline -H "Host: myhost.lan:$PORT"
expect_code 403 debug/pprof/cmdline -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: no-cors"
stop_serve
echo ok
