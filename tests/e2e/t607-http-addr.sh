#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# The address forms of kiln_http_start: "HOST:PORT", "PORT" alone
# (loopback), ":PORT" (every address), "[::1]:PORT" (IPv6), a host name,
# port 0 (any free port, read back with kiln_http_port); bad addresses give
# -EINVAL (-22) and a port in use -EADDRINUSE (-98).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"
need python3

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
listening() { # PORT -> the local addresses listening on it
    awk -v p="$(printf '%04X' "$1")" 'NR > 1 { split($2, a, ":"); if (a[2] == p && $4 == "0A") print a[1] }' \
        /proc/net/tcp /proc/net/tcp6
}

# "PORT" alone: 127.0.0.1 only.
P=$(free_port)
start_http p --http "$P" --idle
[ "$PORT" = "$P" ] || fail "asked for port $P, got $PORT"
has "$T/p.err" "http on 127\.0\.0\.1:$P"
[ "$(listening "$P")" = 0100007F ] || fail "'$P' listens on $(listening "$P"), want 127.0.0.1 only"
expect_code 200 debug/pprof/cmdline
# The same port again: in use.
start_serve busy --http "127.0.0.1:$P" --idle
has "$T/busy.out" "^http error -98$"
stop_serve_rc=0; wait "$SPID" || stop_serve_rc=$?
[ "$stop_serve_rc" -eq 3 ] || fail "httpserve exited $stop_serve_rc on a port in use"
SPID=$(awk '{ print $1 }' <<< "$SERVE_PIDS")
stop_serve

# ":0": every address (IPv6 and IPv4 where there is IPv6).
start_http any --http ":0" --idle
has "$T/any.err" "http on (\[::\]|0\.0\.0\.0):$PORT"
expect_code 200 debug/pprof/cmdline
stop_serve

# "localhost:0": a host name.
start_http lh --http "localhost:0" --idle
has "$T/lh.err" "http on (127\.0\.0\.1|\[::1\]):$PORT"
stop_serve

# "[::1]:0", where this machine has IPv6 loopback.
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
    start_http v6 --http "[::1]:0" --idle
    has "$T/v6.err" "http on \[::1\]:$PORT"
    CODE=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 10 "http://[::1]:$PORT/debug/pprof/cmdline") || true
    [ "$CODE" = 200 ] || fail "[::1] answered $CODE"
    stop_serve
else
    echo "note: no IPv6 loopback here, [::1] not tried"
fi

# Bad addresses: -EINVAL, and the program goes on without the server.
for a in "" "bogus" "127.0.0.1" "127.0.0.1:" "127.0.0.1:99999" "127.0.0.1:-1" "127.0.0.1:80x" \
         "::1:6060" "[::1]6060" "[::1]:" "[]:1" "[127.0.0.1]:0" "300.1.2.3:0" "1.2.3.4:5:6"; do
    start_serve bad --http "$a" --idle
    has "$T/bad.out" "^http error -22$"
    wait "$SPID" || true
done
echo ok
