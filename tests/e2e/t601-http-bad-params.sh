#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# Bad parameters of /debug/pprof/profile get 400 with a message naming
# the parameter, and start no profile (a good request right after gets
# its profile, not 409).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0 --idle
bad() {
    local query=$1 param=$2
    expect_code 400 "debug/pprof/profile?$query"
    has "$T/headers" "Content-Type: text/plain"
    has "$T/body" "^bad $param '"
}
bad "seconds=-1" seconds
bad "seconds=abc" seconds
bad "seconds=99999" seconds
bad "seconds=0" seconds
bad "seconds=3601" seconds
bad "seconds=1.5" seconds
bad "seconds=" seconds
bad "seconds=%201" seconds
bad "seconds=1&frequency=0" frequency
bad "seconds=1&frequency=-5" frequency
bad "seconds=1&frequency=fast" frequency
bad "seconds=1&frequency=100001" frequency
bad "seconds=1&debug=x" debug
bad "seconds=1&format=pdf" format
has "$T/body" "want pprof, text, html or svg"
# The limits themselves are accepted, the message gives the range.
bad "seconds=4000" seconds
has "$T/body" "from 1 to 3600"
# Control bytes of the request never reach the message as they are.
expect_code 400 "debug/pprof/profile?seconds=%1b%5b31m"
hasnt "$T/body" $'\x1b'
# No profile was started by any of them.
expect_code 200 "debug/pprof/profile?seconds=1&frequency=1000"
has "$T/headers" "Content-Type: application/octet-stream"
stop_serve
echo ok
