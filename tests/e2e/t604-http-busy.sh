#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# One CPU profile at a time: a second request while one runs gets 409 with
# a message, and the other endpoints answer while it runs.  A client
# that goes away frees the profiler (no 30 s wait for nobody) and its
# broken socket does not kill the host (SIGPIPE).  A program with its own
# SIGPROF handler gets 503 (the agent steps aside).  Stopping the server
# during a profile answers 503 and the program exits cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

# KILN_LOG=debug: the agent says when a CPU profile begins and when one
# is cut short, which the waits below watch (no sleeps, no time limits).
SERVE_ENV="KILN_LOG=debug" start_http s --http 127.0.0.1:0
# begun S: the number of S-second CPU profiles the agent has begun.
begun() { grep -c "http: CPU profile for $1 s at" "$T/s.err"; }
# left: the number of profiles cut short because the client went away.
left() { grep -c "http: CPU profile cut short (the client went away)" "$T/s.err"; }
# begun_more S N: more than N S-second profiles have begun.
begun_more() { [ "$(begun "$1")" -gt "$2" ]; }

# A profile taken to its end.
expect_code 200 "debug/pprof/profile?seconds=4"
[ "$(begun 4)" = 1 ] || fail "the first profile did not begin once"
"$KILN" top "$T/body" > "$T/first.txt" || fail "kiln top on the first profile"
has "$T/first.txt" " hash_payload$"

# A client that leaves (a 1 s timeout on a 60 s profile, and one that
# resets its connection to a 61 s one once it has begun) frees the
# profiler at once: each such profile begun is cut short because its
# client went away (one that ran out would not be), and a new one can
# begin.
curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=60&format=svg" || true
python3 - "$PORT" "$T/s.err" <<'PY' || fail "python client"
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /debug/pprof/profile?seconds=61 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % int(sys.argv[1]))
# Until its profile has begun (bounded generously: the test then fails).
for _ in range(600):
    with open(sys.argv[2], errors="replace") as f:
        if "http: CPU profile for 61 s at" in f.read():
            break
    time.sleep(0.1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
PY
[ "$(begun 61)" = 1 ] || fail "the resetting client's profile did not begin"
# curl may have given up before the server read its request, which then
# begins a profile late: wait until every long profile begun is cut short.
settled() { [ "$(left)" -ge $(( $(begun 60) + $(begun 61) )) ]; }
wait_for "the profiles of the clients that left to be cut short" settled
fetch "debug/pprof/profile?seconds=1"
[ "$CODE" = 200 ] || fail "after the clients left the profile answered $CODE"
kill -0 "$SPID" || fail "the host died when its clients went away"
w1=$(work_count) || fail "the host's own port does not answer"
work_grew() { local w; w=$(work_count) || fail "the host's own port does not answer"; [ "$w" -gt "$w1" ]; }
wait_for "the host to go on working (handled $w1 requests)" work_grew

# One CPU profile at a time, the other endpoints answering meanwhile, and
# kiln_http_stop during a profile: a 60 s profile, which the stop ends
# (the checks in between do not race its end).
curl -s -o "$T/cut.txt" -w '%{http_code}' --max-time 120 \
    "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=60" > "$T/cut.code" &
cut=$!
wait_for "the long profile to begin" begun_more 60 "$(begun 60)"
expect_code 409 "debug/pprof/profile?seconds=1"
has "$T/body" "a CPU profile is already being taken"
expect_code 409 "debug/pprof/profile?seconds=1&format=svg"
# The long request blocks nothing else: these answer while it still runs
# (a third request still finds it busy, and its client still waits).
expect_code 200 debug/pprof/cmdline
expect_code 200 debug/pprof/
fetch "debug/pprof/profile?seconds=1"
[ "$CODE" = 409 ] && kill -0 "$cut" 2>/dev/null || fail "other endpoints waited for the profile (then $CODE)"
stop_serve
wait "$cut"
# 503 is the answer, sent whole before the stop closes the connection
# (000: the client was cut off without one).  That it is this answer, not
# the profile's 200, shows kiln_http_stop did not wait for the profile.
[ "$(cat "$T/cut.code")" = 503 ] || fail "the profile cut by the stop answered $(cat "$T/cut.code")"
has "$T/cut.txt" "cut short: the server stops"

# A program with its own SIGPROF handler: the agent steps aside.
start_http own --http 127.0.0.1:0 --own-sigprof
expect_code 503 "debug/pprof/profile?seconds=1"
has "$T/body" "own SIGPROF handler"
expect_code 200 debug/pprof/cmdline
stop_serve
echo ok
