#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln record on Debian's nginx (issue 22): a root master and two
# `user nobody;` workers compressing a 4 MB file with gzip under a curl
# load.  `kiln record -p MASTER,WORKER,WORKER --duration 3` attached to
# the running server, and `kiln record -- nginx -g 'daemon off;'` (the
# workers followed, the recording ended by `nginx -s quit`): both
# workers' samples under their pid labels, named as nginx and zlib name
# them (deflate under ngx_http_output_filter; nginx and libz are
# stripped, so their static functions are [nginx] and [libz.so.1.2.13],
# as perf gives them addresses), read by go tool pprof.  With `daemon
# on;` the recording ends with the process started, and kiln says that
# the daemon it left still runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nginx.sh"
need_record
need go
nginx_need
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
nginx_setup

# workers_in FILE WORKERS: FILE has gzip samples under each worker's pid.
workers_in() {
    local w
    nginx_gzip_names "$1"
    go tool pprof -tags "$1" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags $1"
    awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { on = 0 }' \
        "$T/tags.txt" > "$T/pids"
    for w in $2; do
        grep -qx "$w" "$T/pids" || { cat "$T/tags.txt"; fail "$1: worker $w has no samples"; }
        go tool pprof -top -tagfocus=pid=$w "$1" > "$T/w.txt" 2>/dev/null
        has "$T/w.txt" " deflate$"
    done
}

# Attached to the running server.
nginx_conf off
nginx_start
nginx_load_start
for w in $NGINX_WORKERS; do wait_cpu "$w" 0.1; done
pids=$(echo $NGINX_MASTER $NGINX_WORKERS | tr ' ' ',')
expect_status 0 "$KILN" record -q -p "$pids" --duration 3 -o "$T/p.pb.gz"
nginx_load_stop
workers_in "$T/p.pb.gz" "$NGINX_WORKERS"
nginx_quit

# nginx run by kiln record: the workers it forks are followed.
nginx_conf none
nginx_start_under "$KILN" record -q -o "$T/r.pb.gz" --
nginx_burn 0.3
workers=$NGINX_WORKERS
nginx_quit
[ "$NGINX_LAUNCH_RC" -eq 0 ] || { cat "$NG/start.err"; fail "kiln record exited $NGINX_LAUNCH_RC"; }
workers_in "$T/r.pb.gz" "$workers"

# `daemon on;`: the process started forks the daemon and exits, which
# ends the recording (as under perf); kiln says what still runs (before:
# "the command used less CPU time than one sample period").
nginx_conf on
nginx_start_under "$KILN" record -o "$T/d.pb.gz" --
has "$NG/start.err" "the command has ended, but [0-9]+ process(es)? it started still runs? \(pid $NGINX_MASTER[,)]"
hasnt "$NG/start.err" "less CPU time"
nginx_quit
[ "$NGINX_LAUNCH_RC" -eq 0 ] || { cat "$NG/start.err"; fail "kiln record exited $NGINX_LAUNCH_RC (daemon on)"; }
echo ok
