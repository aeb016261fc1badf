#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Debian's nginx serving KILN_HTTP with KILN_HTTP_CHILDREN=1 (issue 22):
# /debug/pprof/profile?seconds=3 on the master covers its two workers
# (root master, `user nobody;` workers compressing with gzip under a curl
# load): samples under both workers' pid labels, zlib's deflate under
# ngx_http_output_filter, read by go tool pprof and kiln top, the comment
# "forked workers: 2 of 2 answered".  Then `nginx -s reload`: new
# workers, the old ones drained and gone, and the next profile is the new
# workers' alone, 2 of 2; `nginx -s quit` ends everything (no hang).
# `daemon off;` with port 0 (the address the log gives), and `daemon on;`
# with a fixed port: the process started serves, forks the daemon and
# exits; the daemon (the master) serves the same address in its place
# and its workers join it.  (Before: one of the workers, running as
# nobody, won the port as often as the master, and the profile was that
# worker's alone.)  The workers hold no copy of the master's server's fds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nginx.sh"
need_agent
need go
nginx_need
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
nginx_setup

# profile FILE [SECONDS]: a CPU profile of the serving process.
profile() {
    local code
    code=$(curl -s -o "$1" -w '%{http_code}' --max-time 300 \
        "http://127.0.0.1:$KPORT/debug/pprof/profile?seconds=${2:-3}") || true
    [ "$code" = 200 ] || { cat "$1"; fail "/debug/pprof/profile answered $code"; }
}
# answered N FILE: FILE's comment says N of N workers answered.
answered() {
    go tool pprof -comments "$2" > "$T/comments.txt" 2>/dev/null &&
        grep -qx "forked workers: $1 of $1 answered" "$T/comments.txt"
}
# joined: a 1-second profile has both workers in it (a daemon's workers
# join it once it serves; this waits for that).
joined() { profile "$T/j.pb.gz" 1; answered 2 "$T/j.pb.gz"; }
# check FILE WORKERS: the profile FILE is the gzip work of WORKERS.
check() {
    local w
    go tool pprof -top "$1" > "$T/top.txt" 2> "$T/top.err" || { cat "$T/top.err"; fail "go tool pprof -top"; }
    has "$T/top.txt" " deflate$"
    has "$T/top.txt" " ngx_http_output_filter$"
    nginx_gzip_names "$1"
    answered 2 "$1" || { cat "$T/comments.txt"; fail "$1: not 2 of 2 workers answered"; }
    go tool pprof -tags "$1" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags"
    awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { exit }' "$T/tags.txt" |
        grep -v -x "$NGINX_MASTER" | sort -n > "$T/pids"
    echo "$2" | tr ' ' '\n' | sort -n > "$T/want"
    diff -u "$T/want" "$T/pids" || { cat "$T/tags.txt"; fail "$1: the pid labels are not the workers' $2"; }
    for w in $2; do
        go tool pprof -top -tagfocus=pid=$w "$1" > "$T/w.txt" 2>/dev/null
        has "$T/w.txt" " deflate$"
    done
}
# serving: the master itself holds the socket listening on KPORT (its
# inode from /proc/net/tcp: 127.0.0.1 and the port in hex, state 0A).
serving() {
    local ino
    ino=$(awk -v a="$(printf '0100007F:%04X' "$KPORT")" '$2 == a && $4 == "0A" { print $10; exit }' \
        /proc/net/tcp)
    [ -n "$ino" ] && ls -l "/proc/$NGINX_MASTER/fd" 2>/dev/null | grep -q "socket:\[$ino\]"
}

for daemon in off on; do
    nginx_conf $daemon
    if [ $daemon = off ]; then
        addr=127.0.0.1:0
    else
        KPORT=$(free_port) || fail "no free port"
        addr=127.0.0.1:$KPORT
    fi
    nginx_start LD_PRELOAD="$KILN_LIB" KILN_HTTP=$addr KILN_HTTP_CHILDREN=1 KILN_LOG=info
    if [ $daemon = off ]; then
        KPORT=$(sed -n 's/.*http on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$NG/start.err")
        [ -n "$KPORT" ] || { cat "$NG/start.err"; fail "no port in the log"; }
    fi
    wait_for "the master to serve KILN_HTTP (daemon $daemon)" serving
    nginx_load_start
    for w in $NGINX_WORKERS; do wait_cpu "$w" 0.2; done
    [ $daemon = off ] || WAIT_TRIES=100 wait_for "the daemon's workers to join it" joined
    # A worker holds no copy of the master's HTTP server (libmicrohttpd's
    # epoll fd and eventfd; before, every worker kept both for its life):
    # in kiln's range it has its connection to the master (a socket) and
    # the files its symbolizer reads, no epoll or eventfd.
    base=$(( $(ulimit -n) < 1024 ? $(ulimit -n) : 1024 ))
    for w in $NGINX_WORKERS; do
        for f in /proc/$w/fd/*; do
            n=${f##*/}
            [ "$n" -ge $((base / 2 - 64)) ] || continue
            case $(readlink "$f") in
            anon_inode:*) ls -l "/proc/$w/fd" >&2; fail "worker $w: fd $n is $(readlink "$f")" ;;
            esac
        done
    done
    profile "$T/$daemon.pb.gz"
    check "$T/$daemon.pb.gz" "$NGINX_WORKERS"

    old=$NGINX_WORKERS
    nginx_reload "$old"
    for w in $NGINX_WORKERS; do wait_cpu "$w" 0.2; done
    profile "$T/$daemon-reload.pb.gz"
    check "$T/$daemon-reload.pb.gz" "$NGINX_WORKERS"
    nginx_load_stop
    nginx_quit
done
echo ok
