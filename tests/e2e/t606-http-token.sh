#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# KILN_HTTP_TOKEN makes every endpoint demand "Authorization: Bearer
# TOKEN": 401 (with WWW-Authenticate) without it or with a wrong, shorter
# or longer token, 200 with it.  The token is read when the server starts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

SERVE_ENV="KILN_HTTP_TOKEN=s3cret-T0ken" start_http s --http 127.0.0.1:0 --idle
has "$T/s.err" "bearer token required"
for p in debug/pprof/ debug/pprof/cmdline "debug/pprof/profile?seconds=1" debug/pprof/symbol debug/pprof/heap nope; do
    expect_code 401 "$p"
    has "$T/headers" 'WWW-Authenticate: Bearer realm="kiln"'
    has "$T/body" "Authorization: Bearer"
done
for h in "Bearer s3cret-T0ke" "Bearer s3cret-T0kenX" "Bearer S3CRET-T0KEN" "Basic s3cret-T0ken" \
         "Bearers3cret-T0ken" "Bearer" "s3cret-T0ken" "Bearer  "; do
    expect_code 401 debug/pprof/cmdline -H "Authorization: $h"
done
expect_code 401 debug/pprof/symbol -H "Authorization: Bearer nope" --data-binary "$HASH"
hasnt "$T/body" hash_payload
expect_code 200 debug/pprof/cmdline -H "Authorization: Bearer s3cret-T0ken"
has "$T/body" httpserve
expect_code 200 debug/pprof/cmdline -H "Authorization: bearer   s3cret-T0ken "
expect_code 200 debug/pprof/symbol -H "Authorization: Bearer s3cret-T0ken" --data-binary "$HASH"
has "$T/body" "^$HASH hash_payload$"
expect_code 200 "debug/pprof/profile?seconds=1&debug=1" -H "Authorization: Bearer s3cret-T0ken"
has "$T/body" "^Type: cpu$"
expect_code 404 nope -H "Authorization: Bearer s3cret-T0ken"
stop_serve

# Without the variable (or with it empty) no token is asked for.
SERVE_ENV="KILN_HTTP_TOKEN=" start_http open --http 127.0.0.1:0 --idle
hasnt "$T/open.err" "bearer token"
expect_code 200 debug/pprof/cmdline
stop_serve
echo ok
