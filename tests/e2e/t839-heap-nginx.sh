#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln heap on Debian's nginx (issue 22): `kiln heap -- nginx -g 'daemon
# off;'`, a root master with two `user nobody;` workers serving a 4 MB
# file with gzip for a curl load, ended by `nginx -s quit`.  kiln heap
# exits 0, its summary names the master's configuration work
# (ngx_init_cycle), and it lists each worker's own trace (PATH.PID, kept
# whole through the workers' drop to nobody), whose allocations are the
# requests' (ngx_http_output_filter).  noasan: kiln heap preloads its
# libraries into nginx.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nginx.sh"
need_agent
nginx_need
nginx_setup
mkdir -m 755 "$T/h"

nginx_conf none
cd "$T/h"
nginx_start_under "$KILN" heap --
nginx_burn 0.2
workers=$NGINX_WORKERS
nginx_quit
cd "$T"
[ "$NGINX_LAUNCH_RC" -eq 0 ] || { cat "$NG/start.err"; fail "kiln heap exited $NGINX_LAUNCH_RC"; }
has "$NG/start.err" "exited with status 0"
has "$NG/start.err" "ngx_init_cycle"
for w in $workers; do
    f=$T/h/kiln.trace.zst.$w
    has "$NG/start.err" "'kiln.trace.zst.$w'"
    [ -s "$f" ] || { ls -l "$T/h"; fail "no heap trace of worker $w"; }
    "$KILN" top -n 0 --cum "$f" > "$T/w.txt" 2> "$T/w.err" || { cat "$T/w.err"; fail "kiln top $f"; }
    has "$T/w.txt" " ngx_http_output_filter$"
done
echo ok
