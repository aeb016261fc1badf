# SPDX-License-Identifier: Apache-2.0
# Debian's nginx (package nginx-light, scripts/deps.sh) as a workload, for
# the tests that profile a real pre-fork server (t527, t752, t753; sourced
# after lib.sh).  The system's nginx is never used: each test runs its own
# master with its own prefix and configuration under $T (`-p $NG -c
# $NG/nginx.conf -e $NG/error.log`), pid file, temp folders and a free
# port; two workers as `user nobody` compress a 4 MB text file with gzip
# for a load of curl clients, so that their CPU goes to nginx's gzip
# filter and zlib's deflate.
#
#   nginx_need                  skip (77) unless nginx, curl, ps are here
#   nginx_setup                 $NG (0755, readable by nobody) with the file
#   nginx_conf on|off|none      nginx.conf with `daemon on;`, `off;` or no
#                               line (then run with -g 'daemon off;')
#   nginx_start ENV...          runs nginx with ENV; waits for its 2 workers
#                               (nobody) and its port; sets NGINX_MASTER,
#                               NGINX_WORKERS, NGINX_LAUNCH (the process run)
#   nginx_start_under CMD...    the same, nginx run by CMD (kiln record --)
#   nginx_workers               the master's live workers (pids, sorted)
#   nginx_load_start/_stop      the curl clients, in the background
#   nginx_burn SECS             the load until every worker used SECS of CPU
#   nginx_reload OLD            `nginx -s reload`; waits for 2 new workers
#                               and OLD (the workers before) to be gone
#   nginx_quit                  `nginx -s quit`; waits for the master and
#                               its workers to be gone (they drain), and for
#                               NGINX_LAUNCH: its status in NGINX_LAUNCH_RC;
#                               no crash or alert in nginx's error log
#   nginx_gzip_names FILE       kiln top of FILE names nginx's and zlib's work
# Everything started is killed on exit (the master by its pid file).
NGINX_MASTER="" NGINX_WORKERS="" NGINX_LOADERS="" NGINX_LAUNCH=""

nginx_need() {
    NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    [ -x "$NGINX" ] || skip "nginx is not installed (Debian's nginx-light, scripts/deps.sh)"
    need curl
    need ps
    [ "$(id -u)" -eq 0 ] || skip "needs root (a root master with 'user nobody' workers)"
    getent passwd nobody > /dev/null || skip "no user nobody"
}

# gone PID: process PID has ended (no such process, or a zombie: a
# daemon's master is re-parented to init, which may not reap it).
gone() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    s=${s##*) }
    case ${s%% *} in Z|X|x) return 0 ;; esac
    return 1
}

nginx_cleanup() {
    local p
    # shellcheck disable=SC2086
    [ -n "$NGINX_LOADERS" ] && kill $NGINX_LOADERS 2>/dev/null
    [ -s "${NG:-/nonexistent}/nginx.pid" ] && NGINX_MASTER="$NGINX_MASTER $(cat "$NG/nginx.pid")"
    # The master stopped first: killing its workers before it would have
    # it fork new ones in their place (seen: a worker left running).
    for p in $NGINX_MASTER; do
        kill -STOP "$p" 2>/dev/null
        # shellcheck disable=SC2046
        kill -9 $(ps --ppid "$p" -o pid= 2>/dev/null) "$p" 2>/dev/null
    done
    [ -n "$NGINX_LAUNCH" ] && kill -9 "$NGINX_LAUNCH" 2>/dev/null
    rm -rf "$T"
}
trap nginx_cleanup EXIT

nginx_setup() {
    NG=$T/ng
    chmod 755 "$T"
    mkdir -p "$NG/www" "$NG/tmp"
    chmod 755 "$NG" "$NG/www"
    # Text of a 2,000-word vocabulary: gzip makes it about 40% of its size
    # and spends some 50 ms of CPU on each request.
    awk 'BEGIN {
        srand(1)
        for (i = 0; i < 2000; i++) {
            w = ""; n = 3 + int(rand() * 7)
            for (k = 0; k < n; k++) w = w substr("abcdefghijklmnop", 1 + int(rand() * 16), 1)
            words[i] = w
        }
        for (size = 0; size < 4000000; size += length(line) + 1) {
            line = words[int(rand() * 2000)]
            for (k = 1; k < 12; k++) line = line " " words[int(rand() * 2000)]
            print line
        }
    }' > "$NG/www/big.txt" || fail "cannot write the test file"
    echo ok > "$NG/www/ok.txt"
    chmod 644 "$NG/www/"*
    NGINX_PORT=$(free_port) || fail "no free port"
}

# free_port: a TCP port (20000-59999) nobody listens on or uses now
# (/proc/net/tcp and tcp6: the port is the hex after the colon).
free_port() {
    local p i
    for i in $(seq 100); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        awk -v p="$(printf ':%04X' $p)" 'substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null || { echo $p; return 0; }
    done
    return 1
}

nginx_conf() {
    local daemon="daemon $1;"
    [ "$1" = none ] && daemon=""
    cat > "$NG/nginx.conf" <<EOF
worker_processes 2;
$daemon
user nobody $(id -gn nobody);
pid $NG/nginx.pid;
error_log $NG/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;
    types { text/plain txt; }
    gzip on;
    gzip_types text/plain;
    gzip_min_length 0;
    server {
        # reuseport: a listening socket per worker, the kernel spreading
        # the connections over both.
        listen 127.0.0.1:$NGINX_PORT reuseport;
        root $NG/www;
    }
}
EOF
    "$NGINX" -t -q -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" ||
        fail "nginx -t refuses the configuration"
}

# nginx_ctl ARGS...: the nginx command with this test's prefix and files.
nginx_ctl() { "$NGINX" -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" "$@"; }

nginx_workers() {
    ps --ppid "$NGINX_MASTER" -o pid=,stat= 2>/dev/null | awk '$2 !~ /^Z/ { print $1 }' | sort -n
}
# nginx_ready: 2 workers that run as nobody, and the port answers.
nginx_ready() {
    local w n=0
    for w in $(nginx_workers); do
        [ "$(ps -o user= -p "$w")" = nobody ] || return 1
        n=$((n + 1))
    done
    [ $n -eq 2 ] && curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/ok.txt"
}
# nginx_started: the pid file names a live master (daemon on: after the
# first process has exited).
nginx_started() {
    [ -s "$NG/nginx.pid" ] || return 1
    gone "$(cat "$NG/nginx.pid")" && return 1
    ! grep -q 'daemon on' "$NG/nginx.conf" || gone "$NGINX_LAUNCH"
}

nginx_start() { nginx_start_under env "$@"; }
# nginx_start_under CMD...: nginx started by CMD (kiln record -- ...), with
# `-g 'daemon off;'` when the configuration has no daemon line.
nginx_start_under() {
    local g=()
    grep -q '^daemon' "$NG/nginx.conf" || g=(-g 'daemon off;')
    rm -f "$NG/nginx.pid"
    "$@" "$NGINX" -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" "${g[@]}" \
        > "$NG/start.out" 2> "$NG/start.err" &
    NGINX_LAUNCH=$!
    wait_for "nginx's pid file" nginx_started
    NGINX_MASTER=$(cat "$NG/nginx.pid")
    wait_for "nginx's 2 workers and its port" nginx_ready
    NGINX_WORKERS=$(nginx_workers)
}

# nginx_reloaded OLD: two workers (nobody), none of OLD, OLD all gone.
nginx_reloaded() {
    local w now
    now=$(nginx_workers)
    [ "$(echo "$now" | wc -w)" -eq 2 ] || return 1
    for w in $1; do
        gone "$w" || return 1
        echo "$now" | grep -qx "$w" && return 1
    done
    for w in $now; do [ "$(ps -o user= -p "$w")" = nobody ] || return 1; done
}
nginx_reload() {
    nginx_ctl -s reload || fail "nginx -s reload"
    wait_for "new workers, the old ones ($1) drained and gone" nginx_reloaded "$1"
    NGINX_WORKERS=$(nginx_workers)
}

nginx_load_start() {
    local i
    curl -s -D "$T/headers" -o /dev/null -H 'Accept-Encoding: gzip' \
        "http://127.0.0.1:$NGINX_PORT/big.txt" || fail "nginx does not answer"
    grep -qi '^content-encoding: gzip' "$T/headers" || { cat "$T/headers"; fail "no gzip"; }
    for i in 1 2 3; do
        ( while :; do
              curl -s -o /dev/null -H 'Accept-Encoding: gzip' \
                  "http://127.0.0.1:$NGINX_PORT/big.txt" || sleep 0.1
          done ) &
        NGINX_LOADERS="$NGINX_LOADERS $!"
    done
}
nginx_load_stop() {
    # shellcheck disable=SC2086
    [ -n "$NGINX_LOADERS" ] && kill $NGINX_LOADERS 2>/dev/null
    # shellcheck disable=SC2086
    wait $NGINX_LOADERS 2>/dev/null
    NGINX_LOADERS=""
}
nginx_burn() {
    local w
    nginx_load_start
    for w in $(nginx_workers); do wait_cpu "$w" "$1"; done
    nginx_load_stop
}

nginx_quit() {
    local p
    nginx_ctl -s quit || fail "nginx -s quit"
    for p in $NGINX_MASTER $NGINX_WORKERS; do
        wait_for "nginx process $p to end" gone "$p"
    done
    NGINX_LAUNCH_RC=0
    wait "$NGINX_LAUNCH" 2>/dev/null || NGINX_LAUNCH_RC=$?
    # No worker died of a signal, nothing nginx calls an alert.
    hasnt "$NG/error.log" 'exited on signal|\[(alert|emerg|crit)\]'
    NGINX_LAUNCH="" NGINX_MASTER="" NGINX_WORKERS=""
    rm -f "$NG/nginx.pid"
}

nginx_gzip_names() {
    "$KILN" top -n 0 "$1" > "$T/names.txt" 2> "$T/names.err" ||
        { cat "$T/names.err"; fail "kiln top $1"; }
    has "$T/names.txt" " deflate$"
    has "$T/names.txt" " ngx_http_output_filter$"
}
