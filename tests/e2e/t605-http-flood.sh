#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# The server never hurts its host: 500 concurrent connections and idle
# half-sent requests (slowloris) while the program keeps handling its own
# work and answering its own port; requests still get answers while some
# half-open connections are held; the half-open ones are closed after the
# idle timeout (30 s), and every endpoint answers afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"
need python3

start_http s --http 127.0.0.1:0
ulimit -n 4096 2>/dev/null || true
python3 - "$PORT" "$WORK" > "$T/flood.txt" 2>&1 <<'PY' || { cat "$T/flood.txt"; fail "flood checks failed"; }
import socket, sys, threading, time, select

port, work = int(sys.argv[1]), int(sys.argv[2])
failures = 0

def check(ok, what):
    global failures
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    if not ok:
        failures += 1

def work_count():
    s = socket.create_connection(("127.0.0.1", work), timeout=5)
    data = s.recv(100)
    s.close()
    return int(data.split()[1])

def get(path, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % (path, port)).encode())
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0

def half_open(n):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /debug/pprof/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port)
        socks.append(s)
    return socks

# The host's own port, polled all along: the slowest answer is kept.
worst = [0.0]
stop = threading.Event()
def watch():
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            work_count()
        except OSError:
            worst[0] = 99.0
        worst[0] = max(worst[0], time.monotonic() - t0)
        time.sleep(0.05)
watcher = threading.Thread(target=watch)
watcher.start()
w0 = work_count()

# 1. A few half-open connections do not block anyone.
slow = half_open(20)
t0 = time.monotonic()
check(get("/debug/pprof/cmdline") == 200, "cmdline answers while 20 half-open connections wait")
check(get("/debug/pprof/") == 200, "the index answers too")
check(time.monotonic() - t0 < 2, "and at once (%.2f s)" % (time.monotonic() - t0))

# 2. 500 concurrent connections, each with a whole request.
flood = []
for _ in range(500):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /debug/pprof/cmdline HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
    except OSError:
        pass
    s.setblocking(False)
    flood.append(s)
answered = ended = 0
bufs = {s: b"" for s in flood}
open_ = set(flood)
deadline = time.monotonic() + 30
while open_ and time.monotonic() < deadline:
    r, _, _ = select.select(list(open_)[:1000], [], [], 0.5)
    for s in r:
        try:
            d = s.recv(65536)
        except OSError:
            d = b""
        if d:
            bufs[s] += d
            continue
        open_.discard(s)
        ended += 1
        if bufs[s].startswith(b"HTTP/1.1 200"):
            answered += 1
        s.close()
check(ended == 500, "all 500 flood connections ended (%d), none hangs" % ended)
check(answered >= 20, "%d of them got 200, the rest were refused" % answered)
for s in open_:
    s.close()
time.sleep(0.5)
check(get("/debug/pprof/cmdline") == 200, "cmdline answers after the flood")

# 3. More half-open connections than the server takes: the server is
# saturated for a while, the host is not.
slow += half_open(100)
time.sleep(2)
w1 = work_count()
check(w1 > w0, "the host kept working (%d -> %d requests)" % (w0, w1))

# 4. The idle ones are closed by the server after its timeout.
t0 = time.monotonic()
pending = set(slow)
while pending and time.monotonic() - t0 < 50:
    r, _, _ = select.select(list(pending), [], [], 1)
    for s in r:
        try:
            d = s.recv(4096)
        except OSError:
            d = b""
        if not d:
            pending.discard(s)
closed_after = time.monotonic() - t0
check(not pending, "the server closed every idle half-open connection (%d left, %.0f s)" % (len(pending), closed_after))
for s in slow:
    s.close()
time.sleep(0.5)
check(get("/debug/pprof/cmdline") == 200, "cmdline answers after the half-open ones are gone")
check(get("/debug/pprof/") == 200, "the index answers after the half-open ones are gone")
stop.set()
watcher.join()
check(worst[0] < 1.0, "the host's own port answered within %.3f s at worst" % worst[0])
sys.exit(1 if failures else 0)
PY
cat "$T/flood.txt"
kill -0 "$SPID" || fail "the host died"
expect_code 200 "debug/pprof/profile?seconds=1&debug=1"
has "$T/body" " hash_payload$"
stop_serve
echo ok
