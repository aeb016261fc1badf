#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Pre-fork servers over HTTP (issue 22): with KILN_HTTP_CHILDREN=1,
# /debug/pprof/profile on the serving process (the prefork workload's
# master, which only waits) covers the workers it fork()ed: each samples
# itself for the same window and the master merges them, so the profile
# holds prefork_work and prefork_thread_work with each worker's pid label,
# go tool pprof reads it, and its comment says how many answered.  A
# worker killed in the window is left out and named; workers that fork
# again bring their children in.  The channel's fds
# are kiln's (high, close-on-exec); helpers run by fork and exec leave
# no trace.  Without the variable (the default)
# the profile is the master's alone, as before; a bad value is said.
. "$(dirname "$0")/lib.sh"
need_agent
need go
need curl
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
MPID=""
trap '[ -n "$MPID" ] && kill -9 "$MPID" 2>/dev/null; rm -rf "$T"' EXIT

# workers_listed FILE: the master has listed its 3 workers in FILE.
workers_listed() { [ "$(grep -c '^worker ' "$1")" -eq 3 ]; }
# start NAME ENV...: the prefork master (3 workers, burning while it
# lives) serving KILN_HTTP on a free port; sets MPID, PORT and WPIDS once
# every worker has used some CPU (fork() has returned in it: it is
# registered).
start() {
    local name=$1 w
    shift
    env LD_PRELOAD="$KILN_LIB" KILN_HTTP=127.0.0.1:0 KILN_LOG=info "$@" \
        "$WL/prefork" 3 0 > "$T/$name.out" 2> "$T/$name.err" &
    MPID=$!
    wait_for "the master's port" grep -q "http on 127\.0\.0\.1:" "$T/$name.err"
    PORT=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/$name.err")
    wait_for "3 workers" workers_listed "$T/$name.out"
    WPIDS=$(awk '$1 == "worker" { print $2 }' "$T/$name.out")
    for w in $WPIDS; do wait_cpu "$w" 0.05; done
}
# stop: the master killed; its workers end when they see it gone.
stop() {
    local w
    kill -TERM "$MPID"
    wait "$MPID" 2>/dev/null
    for w in $WPIDS; do wait_for "worker $w to end" sh -c "! kill -0 $w 2>/dev/null"; done
    MPID=""
}
# profile FILE [QUERY]: a 3-second CPU profile of the master into FILE.
profile() {
    local code
    code=$(curl -s -o "$1" -w '%{http_code}' --max-time 300 \
        "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=3${2:-}") || true
    [ "$code" = 200 ] || { cat "$1"; fail "/debug/pprof/profile answered $code"; }
}

start on KILN_HTTP_CHILDREN=1
profile "$T/p.pb.gz"
go tool pprof -top "$T/p.pb.gz" > "$T/top.txt" 2> "$T/top.err" ||
    { cat "$T/top.err"; fail "go tool pprof -top"; }
has "$T/top.txt" " prefork_work$"
has "$T/top.txt" " prefork_thread_work$"
go tool pprof -tags "$T/p.pb.gz" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags"
awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { exit }' "$T/tags.txt" |
    sort > "$T/pids"
echo "$WPIDS" | sort > "$T/want"
# Every worker's samples, under its own pid (the master, waiting, may
# have none).
grep -v -x "$MPID" "$T/pids" > "$T/wpids" || true
diff -u "$T/want" "$T/wpids" || { cat "$T/tags.txt"; fail "pid labels are not the workers'"; }
go tool pprof -comments "$T/p.pb.gz" > "$T/comments.txt" 2>/dev/null
has "$T/comments.txt" "^forked workers: 3 of 3 answered$"
# Per worker: its own samples are its threads' work.
for w in $WPIDS; do
    go tool pprof -top -tagfocus=pid=$w "$T/p.pb.gz" > "$T/w.txt" 2>/dev/null
    has "$T/w.txt" " prefork_work$"
done
# The text table too.
profile "$T/p.txt" "&debug=1"
has "$T/p.txt" " prefork_work$"

# The channel's fds in the master and in every worker: kiln's range,
# close-on-exec (a worker that execs takes none along).
base=$(( $(ulimit -n) < 1024 ? $(ulimit -n) : 1024 ))
for p in $MPID $WPIDS; do
    for f in /proc/$p/fd/*; do
        n=${f##*/}
        case $(readlink "$f") in socket:*) ;; *) continue ;; esac
        [ "$n" -ge $((base / 2 - 64)) ] || fail "process $p: socket at fd $n"
        fl=$(awk '$1 == "flags:" { print $2 }' "/proc/$p/fdinfo/$n")
        (( (8#$fl & 8#2000000) != 0 )) || fail "process $p: socket fd $n without close-on-exec ($fl)"
    done
done

# A worker killed while it samples is left out, and named.
set -- $WPIDS
victim=$1
curl -s -o "$T/k.pb.gz" --max-time 300 \
    "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=3" &
cpid=$!
wait_for "worker $victim to sample" sh -c "grep -qx kiln-collect /proc/$victim/task/*/comm 2>/dev/null"
kill -9 "$victim"
wait "$cpid" || fail "curl failed"
go tool pprof -comments "$T/k.pb.gz" > "$T/kc.txt" 2>/dev/null || fail "go tool pprof -comments"
has "$T/kc.txt" "^forked workers: 2 of 3 answered; worker $victim: gone before it answered$"
go tool pprof -top "$T/k.pb.gz" > "$T/k.txt" 2>/dev/null
has "$T/k.txt" " prefork_work$"
WPIDS=$(echo "$WPIDS" | grep -v -x "$victim")
# The next profile: the two left, with nothing to say.
profile "$T/n.pb.gz"
go tool pprof -comments "$T/n.pb.gz" > "$T/nc.txt" 2>/dev/null
has "$T/nc.txt" "^forked workers: 2 of 2 answered$"
stop

# A server that runs helpers (fork and exec) before its workers: each
# helper registered until its exec; the dead ones are forgotten at the
# next fork, so the channel's backlog (256) and table stay free for the
# workers.
start spawn KILN_HTTP_CHILDREN=1 PREFORK_SPAWN=300
profile "$T/s.pb.gz"
go tool pprof -comments "$T/s.pb.gz" > "$T/sc.txt" 2>/dev/null
has "$T/sc.txt" "^forked workers: 3 of 3 answered$"
stop

# Workers that fork again: their children register too (6 processes).
start nest KILN_HTTP_CHILDREN=1 PREFORK_NEST=1
for w in $WPIDS; do
    wait_for "worker $w's child" pgrep -P "$w"
    wait_cpu "$(pgrep -P "$w")" 0.05
done
profile "$T/g.pb.gz"
go tool pprof -comments "$T/g.pb.gz" > "$T/gc.txt" 2>/dev/null
has "$T/gc.txt" "^forked workers: 6 of 6 answered$"
go tool pprof -tags "$T/g.pb.gz" > "$T/gt.txt" 2>/dev/null
n=$(awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { exit }' "$T/gt.txt" |
    grep -v -x "$MPID" | sort -u | wc -l)
[ "$n" -eq 6 ] || { cat "$T/gt.txt"; fail "$n processes' pid labels, want 6"; }
stop

# The default: the master's own profile, no worker in it.
start off
profile "$T/d.pb.gz"
go tool pprof -top "$T/d.pb.gz" > "$T/d.txt" 2>/dev/null || fail "go tool pprof -top (default)"
hasnt "$T/d.txt" "prefork_work"
go tool pprof -comments "$T/d.pb.gz" > "$T/dc.txt" 2>/dev/null
hasnt "$T/dc.txt" "forked workers"
stop

# A bad value: said, the default kept.
start bad KILN_HTTP_CHILDREN=yes
has "$T/bad.err" "bad KILN_HTTP_CHILDREN 'yes'"
stop
echo ok
