#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Debian's nginx under the preload agent (issue 22): a root master whose
# two workers become `nobody` after fork (`user nobody;`), profiled with
# KILN_CPU=$D/cpu.pb.gz KILN_CPU_CHILDREN=1 where $D is root's and closed
# to nobody.  The workers compress a 4 MB file with gzip for a curl load;
# after `nginx -s quit` each worker's $D/cpu.pb.gz.PID is whole (kiln top
# and go tool pprof read it), names the gzip work (zlib's deflate under
# ngx_http_output_filter) and carries the worker's pid, the workers
# that `nginx -s reload` replaced and their successors alike; the
# master's profile is whole too; nothing else (no temporary) is left in
# $D.
# `daemon off;`: the master writes $D/cpu.pb.gz.  `daemon on;`: the
# process started forks the daemon and exits, writing $D/cpu.pb.gz; the
# daemon (the master, after setsid) writes $D/cpu.pb.gz.MASTER; its
# workers $D/cpu.pb.gz.WORKER.  No profile is world-writable although
# the daemon sets umask 0.  Without KILN_CPU_CHILDREN the workers write
# nothing and hold no fd of kiln's (CPU and wall modes).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nginx.sh"
need_agent
need go
nginx_need
export HOME=$T GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
nginx_setup
D=$T/out
mkdir -m 755 "$D"

# whole FILE PID: a profile kiln and go tool pprof read, whose samples
# (if any) are process PID's alone.
whole() {
    "$KILN" top -n 0 "$1" > /dev/null 2> "$T/whole.err" ||
        { cat "$T/whole.err"; fail "kiln top cannot read $1"; }
    go tool pprof -raw "$1" > "$T/raw.txt" 2>&1 || { cat "$T/raw.txt"; fail "go tool pprof -raw $1"; }
    go tool pprof -tags "$1" > "$T/tags.txt" 2>/dev/null || fail "go tool pprof -tags $1"
    awk '/^ *pid:/ { on = 1; next } on && /%\)/ { print $NF } on && /^$/ { exit }' \
        "$T/tags.txt" | grep -v -x "$2" && { cat "$T/tags.txt"; fail "$1: another process's samples"; }
    return 0
}

for daemon in off on; do
    mkdir -m 755 "$D/$daemon"
    nginx_conf $daemon
    nginx_start LD_PRELOAD="$KILN_LIB" KILN_CPU="$D/$daemon/cpu.pb.gz" KILN_CPU_CHILDREN=1
    workers=$NGINX_WORKERS master=$NGINX_MASTER launch=$NGINX_LAUNCH
    nginx_burn 0.3
    # nginx -s reload: new workers, each with its own file; the old ones
    # drain and write theirs as they exit.
    nginx_reload "$workers"
    nginx_burn 0.3
    workers="$workers $(nginx_workers)"
    nginx_quit
    if [ $daemon = on ]; then
        [ "$master" != "$launch" ] || fail "daemon on: the master is the process started"
        want="cpu.pb.gz cpu.pb.gz.$master"
    else
        [ "$master" = "$launch" ] || fail "daemon off: the master is not the process started"
        want="cpu.pb.gz"
    fi
    for w in $workers; do
        f=$D/$daemon/cpu.pb.gz.$w
        [ -s "$f" ] || { ls -l "$D/$daemon"; fail "daemon $daemon: no profile of worker $w"; }
        whole "$f" "$w"
        has "$T/tags.txt" "^ *pid:"
        nginx_gzip_names "$f"
        want="$want cpu.pb.gz.$w"
    done
    whole "$D/$daemon/cpu.pb.gz" "$launch"
    [ $daemon = off ] || whole "$D/$daemon/cpu.pb.gz.$master" "$master"
    ls "$D/$daemon" | sort > "$T/have"
    echo "$want" | tr ' ' '\n' | sort > "$T/want"
    diff -u "$T/want" "$T/have" || fail "daemon $daemon: the files in \$D (above) are not the processes'"
    # Root's files (made before the workers gave root up), never writable
    # by others: the daemon's umask 0 does not make them so.
    find "$D/$daemon" -type f \( ! -user root -o -perm /002 \) > "$T/bad"
    [ ! -s "$T/bad" ] || { ls -l "$D/$daemon"; fail "daemon $daemon: profiles writable by others"; }
done
# The default (no KILN_CPU_CHILDREN): the workers profile nothing, write
# nothing and hold nothing of kiln's, in CPU and wall modes: not the
# master's /proc folder nor its /proc/PID/task (before: each worker
# kept them open for its life).
base=$(( $(ulimit -n) < 1024 ? $(ulimit -n) : 1024 ))
for mode in cpu wall; do
    mkdir -m 755 "$D/$mode"
    nginx_conf off
    nginx_start LD_PRELOAD="$KILN_LIB" KILN_CPU="$D/$mode/cpu.pb.gz" KILN_CPU_MODE=$mode
    launch=$NGINX_LAUNCH
    for w in $NGINX_WORKERS; do
        for f in /proc/$w/fd/*; do
            n=${f##*/}
            [ "$n" -lt $((base / 2 - 64)) ] ||
                { ls -l "/proc/$w/fd" >&2; fail "$mode: worker $w holds fd $n: $(readlink "$f")"; }
        done
    done
    nginx_burn 0.1
    nginx_quit
    [ "$(ls "$D/$mode")" = cpu.pb.gz ] ||
        { ls -l "$D/$mode"; fail "$mode: files of workers without KILN_CPU_CHILDREN"; }
    whole "$D/$mode/cpu.pb.gz" "$launch"
done
echo ok
