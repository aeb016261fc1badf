#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# Slow clients cannot lock the others out, and a client without the token
# costs the host nothing: 70 connections (more than the 64 the server
# takes, so no new connection could run a shedding at accept) trickling
# their headers a byte a second leave requests answered (all loopback
# clients share one address: a per-address limit shut everyone out at
# 32); a trickling client is dropped once its request deadline (20 s)
# has passed, however steadily it sends; 30 concurrent 4 MB bodies sent without the bearer token are
# refused from the headers, never buffered (the host's peak RSS grew by
# 120 MB when bodies were read before the token was checked).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"
need python3

start_http s --http 127.0.0.1:0
python3 - "$PORT" > "$T/slow.txt" 2>&1 <<'PY' || { cat "$T/slow.txt"; fail "slow-client checks failed"; }
import socket, sys, threading, time

port = int(sys.argv[1])
failures = 0
def check(ok, what):
    global failures
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    if not ok:
        failures += 1

def get(path):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % (path, port)).encode())
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
        s.close()
    except OSError as e:
        print("# GET %s: %s" % (path, e), flush=True)
        return 0
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0

# 70 clients that send a header byte every second, forever.
stop = threading.Event()
closed = [0]
lock = threading.Lock()
def trickle():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /debug/pprof/cmdline HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port)
        while not stop.is_set():
            s.sendall(b"a")
            s.settimeout(1)
            try:
                if s.recv(4096) == b"":
                    raise OSError("closed")
            except socket.timeout:
                pass
    except OSError:
        with lock:
            closed[0] += 1
slow = [threading.Thread(target=trickle) for _ in range(70)]
for t in slow:
    t.start()
time.sleep(2)   # let them all connect and start trickling
ok = sum(get("/debug/pprof/cmdline") == 200 for _ in range(10))
check(ok == 10, "%d of 10 requests answered while 70 clients trickle" % ok)
check(get("/debug/pprof/") == 200, "the index answers too")

# Every trickling client is gone once the deadline has passed: past it,
# each arriving connection sheds the expired ones.
t0 = time.monotonic()
while time.monotonic() - t0 < 120:
    get("/debug/pprof/cmdline")
    with lock:
        if closed[0] == 70:
            break
    time.sleep(1)
with lock:
    n = closed[0]
check(n == 70, "%d of 70 trickling clients dropped by their deadline" % n)
stop.set()
for t in slow:
    t.join()
sys.exit(1 if failures else 0)
PY
cat "$T/slow.txt"
stop_serve

# Bodies without the token: refused from the headers.
SERVE_ENV="KILN_HTTP_TOKEN=secret" start_http t --http 127.0.0.1:0
hwm() { awk '$1=="VmHWM:" { print $2 }' "/proc/$SPID/status"; }
before=$(hwm)
python3 - "$PORT" > "$T/body.txt" 2>&1 <<'PY' || { cat "$T/body.txt"; fail "token checks failed"; }
import socket, sys, threading

port = int(sys.argv[1])
answers = []
lock = threading.Lock()
def post():
    body = b"0x1+" * (1 << 20)          # 4 MiB
    code = 0
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"POST /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                  b"Authorization: Bearer wrong\r\n"
                  b"Content-Length: %d\r\n\r\n" % (port, len(body)))
        try:
            s.sendall(body)
        except OSError:
            pass                        # refused before the body: fine
        data = b""
        while True:
            try:
                d = s.recv(65536)
            except OSError:
                break
            if not d:
                break
            data += d
        if data.startswith(b"HTTP/"):
            code = int(data.split(b" ", 2)[1])
    except OSError:
        pass
    with lock:
        answers.append(code)
ts = [threading.Thread(target=post) for _ in range(30)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("answers:", answers)
# Each was refused; a client shed while waiting sees no answer at all.
bad = [c for c in answers if c not in (0, 401)]
sys.exit(1 if bad or answers.count(401) < 8 else 0)
PY
after=$(hwm)
cat "$T/body.txt"
echo "peak RSS: $before kB -> $after kB"
[ $((after - before)) -lt 40000 ] ||
    fail "the host's peak RSS grew by $((after - before)) kB for refused bodies"
expect_code 401 debug/pprof/cmdline
expect_code 200 debug/pprof/cmdline -H "Authorization: Bearer secret"
stop_serve
echo ok
