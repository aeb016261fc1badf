#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HTTP at the edges of a process's life, on real programs (python3,
# sh): a CPU profile request still waiting when the program exits gets a
# 503 with a message, not a connection closed without an answer; a
# program started by the served one (fork and exec) does not try the
# same port ("Address already in use") unless KILN_HTTP_INHERIT=1.
. "$(dirname "$0")/lib.sh"
need_agent
need curl
# Debian's interpreter itself, not a shim script that execs it (an exec
# keeps the pid: the new image serves again, on a new port).
PY=/usr/bin/python3
[ -x $PY ] || skip "/usr/bin/python3 is not installed"

# 1. A request pending at exit.
cat > "$T/host.py" <<'PY'
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
print("host: done", flush=True)
PY
LD_PRELOAD=$KILN_LIB KILN_HTTP=127.0.0.1:0 KILN_LOG=debug \
    $PY "$T/host.py" "$T/go" > "$T/host.out" 2> "$T/host.err" &
host=$!
for _ in $(seq 600); do
    grep -q "http on 127.0.0.1:" "$T/host.err" && break
    kill -0 $host 2>/dev/null || break
    sleep 0.05
done
port=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/host.err" | head -1)
[ -n "$port" ] || { cat "$T/host.err"; fail "the agent did not start its server"; }
curl -s -o "$T/body" -w '%{http_code}' --max-time 120 \
    "http://127.0.0.1:$port/debug/pprof/profile?seconds=60" > "$T/code" &
client=$!
for _ in $(seq 600); do
    grep -q "http: CPU profile for 60 s" "$T/host.err" && break
    sleep 0.05
done
grep -q "http: CPU profile for 60 s" "$T/host.err" || { cat "$T/host.err"; fail "the request did not reach the server"; }
touch "$T/go"
wait $host || fail "the host exited $?"
wait $client || true
has "$T/host.out" "^host: done$"
[ "$(cat "$T/code")" = 503 ] || { cat "$T/host.err"; fail "a request pending at exit got '$(cat "$T/code")', expected 503"; }
has "$T/body" "the server stops"

# 2. Not inherited across fork and exec.
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LD_PRELOAD=$KILN_LIB KILN_HTTP=127.0.0.1:$port KILN_LOG=info \
    sh -c "$PY -c 'print(\"child: ran\")'; true" > "$T/fe.out" 2> "$T/fe.err" ||
    fail "sh failed under the agent"
has "$T/fe.out" "^child: ran$"
has "$T/fe.err" "http on 127.0.0.1:$port"
has "$T/fe.err" "not serving HTTP: KILN_HTTP is process [0-9]+'s"
hasnt "$T/fe.err" "already in use"
# ... unless asked: then the child serves too (on a port of its own).
LD_PRELOAD=$KILN_LIB KILN_HTTP=127.0.0.1:0 KILN_HTTP_INHERIT=1 KILN_LOG=info \
    sh -c "$PY -c 'print(\"child: ran\")'; true" > "$T/in.out" 2> "$T/in.err" ||
    fail "sh failed under the agent"
[ "$(grep -c "http on 127.0.0.1:" "$T/in.err")" -ge 2 ] ||
    { cat "$T/in.err"; fail "with KILN_HTTP_INHERIT=1 the child did not serve"; }
echo ok
