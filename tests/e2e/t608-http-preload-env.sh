#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# No rebuild needed: LD_PRELOAD=libkiln.so with KILN_HTTP=ADDR starts the
# endpoints inside a program that knows nothing of kiln (the agent logs
# "http on HOST:PORT" at KILN_LOG=info).  KILN_HTTP=PORT means loopback.
# A bad KILN_HTTP is reported and the program runs as it would without.
# libmicrohttpd is loaded only when a server starts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

SERVE_ENV="KILN_HTTP=127.0.0.1:0" start_serve env
PORT=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/env.err")
[ -n "$PORT" ] || { cat "$T/env.err"; fail "no 'http on 127.0.0.1:PORT' in the log"; }
expect_code 200 debug/pprof/cmdline
grep -q libmicrohttpd "/proc/$SPID/maps" || fail "libmicrohttpd is not mapped in a serving process?"
printf '%s' "$WL/httpserve" > "$T/want"
cmp "$T/body" "$T/want" || fail "cmdline: $(od -c "$T/body" | head -3)"
expect_code 200 "debug/pprof/profile?seconds=2"
"$KILN" top "$T/body" > "$T/top.txt" || fail "kiln top on the profile"
has "$T/top.txt" " hash_payload$"
[ "$(awk '/ flat%/ { getline; print $NF; exit }' "$T/top.txt")" = hash_payload ] ||
    { cat "$T/top.txt"; fail "hash_payload is not on top"; }
stop_serve

# KILN_HTTP=PORT: 127.0.0.1.
P=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SERVE_ENV="KILN_HTTP=$P" start_serve port --idle
has "$T/port.err" "http on 127\.0\.0\.1:$P$"
PORT=$P
expect_code 200 debug/pprof/
stop_serve

# A bad address: said on stderr, the program is unharmed.  (Not under
# ASan: with libasan preloaded into an uninstrumented program, strerror()
# in a constructor deadlocks libp11-kit's destructor at exit, kiln or not.)
if [ "${KILN_SANITIZE:-OFF}" != ON ]; then
    SERVE_ENV="KILN_HTTP=nowhere" start_serve bad --idle
    has "$T/bad.out" "^ready$"
    has "$T/bad.err" "cannot serve HTTP on 'nowhere': Invalid argument"
    stop_serve
fi
# Without KILN_LOG the agent says nothing of a server that works.
timeout 10 env LD_PRELOAD="$PRELOAD" KILN_HTTP=127.0.0.1:0 "$WL/shares" 0.2 > "$T/quiet.out" 2> "$T/quiet.err" ||
    fail "shares failed under KILN_HTTP"
hasnt "$T/quiet.err" "http"
# Without KILN_HTTP, libmicrohttpd and its GnuTLS are not even loaded.
start_serve plain --idle
has "$T/plain.out" "^ready$"
! grep -E "libmicrohttpd|libgnutls|libp11-kit" "/proc/$SPID/maps" ||
    fail "the agent loads libmicrohttpd into programs that serve no HTTP"
stop_serve
echo ok
