# SPDX-License-Identifier: Apache-2.0
# Helpers for the tests of the /debug/pprof/ endpoints (t6NN-http-*.sh),
# sourced after lib.sh.  The workload is tests/workloads/httpserve.c with
# libkiln-malloc.so (and so libkiln.so) preloaded.  Under ASan+UBSan the sanitizer runtime is preloaded
# first (the workload itself is not instrumented), so the server code is
# checked too.
: "${KILN_LIB:=$KILN_BUILD/libkiln.so}"
[ -e "$KILN_LIB" ] || skip "libkiln.so was not built"
: "${KILN_MALLOC_LIB:=$KILN_BUILD/libkiln-malloc.so}"
[ -e "$KILN_MALLOC_LIB" ] || skip "libkiln-malloc.so was not built"
need curl
# The malloc interposer and libkiln.so: every endpoint has data.
# PRELOAD_CPU: libkiln.so alone (no heap profiling).
PRELOAD="$KILN_MALLOC_LIB $KILN_LIB"
PRELOAD_CPU=$KILN_LIB
if [ "${KILN_SANITIZE:-OFF}" = ON ]; then
    asan=$(gcc -print-file-name=libasan.so 2>/dev/null)
    [ -e "$asan" ] || skip "libasan.so not found for the preload under ASan"
    PRELOAD="$asan $KILN_MALLOC_LIB $KILN_LIB"
    PRELOAD_CPU="$asan $KILN_LIB"
    # The host's allocations are not ours to judge; errors still abort.
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fi
SERVE_PIDS=""
cleanup_http() {
    local p
    for p in $SERVE_PIDS; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup_http EXIT

# start_serve NAME [httpserve options]: starts httpserve with $PRELOAD
# preloaded and KILN_LOG=info; waits for it.  Sets SPID, PORT (the HTTP
# port), WORK (the workload's own port), HASH (address of hash_payload).
# Output in $T/NAME.out and $T/NAME.err.  Extra environment: export it, or
# put it in SERVE_ENV ("VAR=value ...").
start_serve() {
    local name=$1 i
    shift
    # Old output must not be taken for the new program's.
    rm -f "$T/$name.out" "$T/$name.err"
    # shellcheck disable=SC2086
    env LD_PRELOAD="$PRELOAD" KILN_LOG=info ${SERVE_ENV:-} "$WL/httpserve" "$@" \
        > "$T/$name.out" 2> "$T/$name.err" &
    SPID=$!
    SERVE_PIDS="$SERVE_PIDS $SPID"
    for i in $(seq 200); do
        grep -q '^ready' "$T/$name.out" 2>/dev/null && break
        grep -q '^http error' "$T/$name.out" 2>/dev/null && break
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.05
    done
    PORT=$(awk '$1=="http" && $2 ~ /^[0-9]+$/ { print $2 }' "$T/$name.out")
    WORK=$(awk '$1=="work" { print $2 }' "$T/$name.out")
    HASH=$(awk '$1=="hash_payload" { print $2 }' "$T/$name.out")
}
# Like start_serve, and the HTTP server must be up.
start_http() {
    start_serve "$@"
    [ -n "$PORT" ] || { cat "$T/$1.out" "$T/$1.err" >&2; fail "httpserve $* did not start its HTTP server"; }
}
# Stops httpserve (SIGTERM: it calls kiln_http_stop) and expects exit 0.
stop_serve() {
    local rc=0
    kill -TERM "$SPID" 2>/dev/null
    wait "$SPID" || rc=$?
    [ "$rc" -eq 0 ] || fail "httpserve exited $rc after SIGTERM"
}
# fetch PATH [curl options]: GET http://127.0.0.1:$PORT/PATH; status in
# CODE, body in $T/body, headers in $T/headers.
fetch() {
    local path=$1
    shift
    CODE=$(curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' --max-time 120 \
        "$@" "http://127.0.0.1:$PORT/$path") || true
}
# expect_code WANT PATH [curl options]
expect_code() {
    local want=$1
    shift
    fetch "$@"
    [ "$CODE" = "$want" ] || { head -c 2000 "$T/body" >&2; fail "GET $1 answered $CODE, expected $want"; }
}
# The workload's own counter of handled requests, from its own port.
work_count() {
    local line
    line=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$WORK && cat <&3") || return 1
    echo "${line#ok }"
}
