# SPDX-License-Identifier: Apache-2.0
# Helpers for the kiln serve tests (sourced after lib.sh).
# serve_start ARGS...: starts `kiln serve ARGS...` in the background and
# waits (a blocking read, no sleeps) for the URL it prints once the server
# listens.  Sets SERVE_PID and URL (http://HOST:PORT/); the server's stderr
# goes to $T/serve.err.  serve_stop stops it with SIGINT and checks that it
# exits 0.
serve_start() {
    rm -f "$T/serve.fifo"
    mkfifo "$T/serve.fifo"
    "$KILN" serve "$@" > "$T/serve.fifo" 2> "$T/serve.err" &
    SERVE_PID=$!
    exec 9< "$T/serve.fifo"
    local a b
    URL=
    read -r -t 120 -u 9 a b URL || true
    case $URL in
    http://*) ;;
    *) cat "$T/serve.err" >&2; fail "kiln serve $* printed no URL" ;;
    esac
    trap 'kill -INT $SERVE_PID 2>/dev/null; rm -rf "$T"' EXIT
}
# serve_loaded: waits until the server has read its inputs (it prints
# its URL first and reads them after; a data request waits for them), so
# that what the reading says on stderr is there.
serve_loaded() {
    STATUS=$(curl -s --max-time 600 -o "$T/loaded.body" -w '%{http_code}' "${URL}api/profiles") ||
        fail "curl ${URL}api/profiles failed"
}
serve_stop() {
    local rc=0
    kill -INT "$SERVE_PID"
    wait "$SERVE_PID" || rc=$?
    exec 9<&-
    [ "$rc" -eq 0 ] || { cat "$T/serve.err" >&2; fail "kiln serve exited $rc after SIGINT"; }
    trap 'rm -rf "$T"' EXIT
}
# get PATH: body in $T/body, HTTP status in $STATUS.
get() {
    STATUS=$(curl -s --path-as-is -o "$T/body" -w '%{http_code}' "$URL${1#/}") ||
        fail "curl $URL${1#/} failed"
}
# expect_get STATUS PATH
expect_get() {
    get "$2"
    [ "$STATUS" = "$1" ] || { cat "$T/body" >&2; fail "GET $2: $STATUS, expected $1"; }
}
