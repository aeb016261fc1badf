#!/usr/bin/env bash
# ctest-labels: serial
# One CPU profile at a time: a second request while one runs gets 409 with
# a message, and the other endpoints answer at once meanwhile.  A client
# that goes away frees the profiler (no 30 s wait for nobody) and its
# broken socket does not kill the host (SIGPIPE).  A program with its own
# SIGPROF handler gets 503 (the agent steps aside).  Stopping the server
# during a profile answers 503 and the program exits cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0
curl -s -o "$T/first.pb.gz" -w '%{http_code}' --max-time 60 \
    "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=4" > "$T/first.code" &
first=$!
sleep 1
expect_code 409 "debug/pprof/profile?seconds=1"
has "$T/body" "a CPU profile is already being taken"
expect_code 409 "debug/pprof/profile?seconds=1&format=svg"
# The long request blocks nothing else.
t0=$(date +%s%N)
expect_code 200 debug/pprof/cmdline
expect_code 200 debug/pprof/
t1=$(date +%s%N)
[ $(( (t1 - t0) / 1000000 )) -lt 1500 ] || fail "other endpoints waited for the profile ($(( (t1 - t0) / 1000000 )) ms)"
wait "$first"
[ "$(cat "$T/first.code")" = 200 ] || fail "the first profile answered $(cat "$T/first.code")"
"$KILN" top "$T/first.pb.gz" > "$T/first.txt" || fail "kiln top on the first profile"
has "$T/first.txt" " hash_payload$"

# A client that leaves (a 1 s timeout on a 60 s profile, and one that
# resets its connection) frees the profiler at once.
curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=60&format=svg" || true
python3 - "$PORT" <<'PY' || fail "python client"
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /debug/pprof/profile?seconds=60 HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.5)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
PY
t0=$(date +%s)
for i in $(seq 50); do
    fetch "debug/pprof/profile?seconds=1"
    [ "$CODE" = 409 ] || break
    sleep 0.1
done
[ "$CODE" = 200 ] || fail "after the clients left the profile answered $CODE"
[ $(( $(date +%s) - t0 )) -lt 10 ] || fail "the profiler stayed busy after the clients left"
kill -0 "$SPID" || fail "the host died when its clients went away"
w1=$(work_count) || fail "the host's own port does not answer"
sleep 0.5
w2=$(work_count)
[ "$w2" -gt "$w1" ] || fail "the host stopped working ($w1 -> $w2)"

# kiln_http_stop during a profile: 503 for its client, clean exit.
curl -s -o "$T/cut.txt" -w '%{http_code}' --max-time 60 \
    "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=30" > "$T/cut.code" &
cut=$!
sleep 1
t0=$(date +%s)
stop_serve
wait "$cut"
# 503 is the answer, sent whole before the stop closes the connection
# (000: the client was cut off without one).
[ "$(cat "$T/cut.code")" = 503 ] || fail "the profile cut by the stop answered $(cat "$T/cut.code")"
has "$T/cut.txt" "cut short: the server stops"
[ $(( $(date +%s) - t0 )) -lt 10 ] || fail "kiln_http_stop waited for the profile"

# A program with its own SIGPROF handler: the agent steps aside.
start_http own --http 127.0.0.1:0 --own-sigprof
expect_code 503 "debug/pprof/profile?seconds=1"
has "$T/body" "own SIGPROF handler"
expect_code 200 debug/pprof/cmdline
stop_serve
echo ok
