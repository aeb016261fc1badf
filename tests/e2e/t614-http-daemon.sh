#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HTTP in a daemon: the process started with the variable forks,
# exits, the child calls setsid, forks and exits too, and the grandchild
# closes every fd above 2 and does the work (Debian's python3, the
# classic double fork).  Once the serving process is gone, the working
# one serves the same address itself: its own CPU profile and thread
# stacks, with its pid.  Again with a daemon that keeps every fd it
# inherited: kiln's copy of the listening socket is closed in each child,
# so the port is free for the heir once the parent is gone (before, the
# heir retried bind() against the socket its own process held, forever).
. "$(dirname "$0")/lib.sh"
need_agent
need curl
PY=/usr/bin/python3
[ -x $PY ] || skip "/usr/bin/python3 is not installed"

cat > "$T/daemon.py" <<'PY'
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
if sys.argv[3] == "close":
    os.closerange(3, 1024)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
def spin():
    x = 0
    while not os.path.exists(sys.argv[2]):
        for i in range(100000):
            x += i
spin()
PY
cleanup_daemon() { touch "$T/stop"; [ -s "$T/pid" ] && kill -9 "$(cat "$T/pid")" 2>/dev/null; rm -rf "$T"; }
trap cleanup_daemon EXIT
# A fixed port, free now: the heir binds the address the variable names
# (with port 0 any port would do, and the held socket would not matter).
fixed=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for fds in close keep; do
rm -f "$T/pid" "$T/stop" "$T/err"
LD_PRELOAD=$KILN_LIB KILN_HTTP=127.0.0.1:$fixed KILN_LOG=info \
    $PY "$T/daemon.py" "$T/pid" "$T/stop" "$fds" 2> "$T/err" || fail "the daemon's first process failed"
pid_written() { [ -s "$T/pid" ]; }
wait_for "the daemon's pid file" pid_written
dpid=$(cat "$T/pid")
took_over() { grep -q "serving here: process $dpid" "$T/err"; }
wait_for "the daemon to serve" took_over
cat "$T/err"
port=$(grep "^kiln\[$dpid\]: http on 127.0.0.1:" "$T/err" | sed 's/.*127\.0\.0\.1://' | head -1)
[ -n "$port" ] || fail "no address logged by the daemon"
code=$(curl -s -o "$T/g.pb.gz" -w '%{http_code}' --max-time 60 "http://127.0.0.1:$port/debug/pprof/goroutine")
[ "$code" = 200 ] || fail "goroutine answered $code"
"$KILN" convert "$T/g.pb.gz" -o "$T/g.collapsed" 2>/dev/null
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/g.pb.gz" > "$T/raw" 2>&1 || fail "go tool pprof cannot read it"
    has "$T/raw" "pid:\[$dpid\]"
fi
code=$(curl -s -o "$T/cpu.pb.gz" -w '%{http_code}' --max-time 60 "http://127.0.0.1:$port/debug/pprof/profile?seconds=1")
[ "$code" = 200 ] || fail "profile answered $code"
"$KILN" top "$T/cpu.pb.gz" > "$T/top" || fail "kiln cannot read the daemon's profile"
has "$T/top" "_PyEval_EvalFrameDefault"
touch "$T/stop"
gone() { ! kill -0 "$dpid" 2>/dev/null; }
wait_for "the daemon to stop" gone
done
echo ok
