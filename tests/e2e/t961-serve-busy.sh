#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve never blocks one request on another (issue 22): on a heap
# trace that takes seconds to analyse (tests/tools/gen-heaptrace, 10 M
# events),
#  - the URL is printed before the trace is read: the input is a FIFO the
#    test has not written yet when it reads the URL; /api/status answers
#    at once ("reading ..."), a request for data waits for the reading
#    and is answered once the trace is written;
#  - a second request is answered while a time range is being analysed
#    again: /api/status shows the range's job (with its progress) before
#    /api/profiles is asked and the same job still running after it was
#    answered (how long that answer took is printed, for bench/; no bound
#    here);
#  - a newer range stops the older one's analysis: its request gets 409,
#    the newer one its numbers.
# A try whose range analysis ended before the test could look again is
# tried again with another range (a loaded machine only makes it slower).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
GEN=$KILN_BUILD/tools/gen-heaptrace
# Under ASan+UBSan kiln is several times slower: fewer events take as long.
EVENTS=10000000
[ "${KILN_SANITIZE:-OFF}" = ON ] && EVENTS=3000000
[ -x "$GEN" ] || fail "no $GEN: build the gen-heaptrace target"

# Two frames: the time index marks frame boundaries only, so the ranges
# below are read from the trace's start (long enough to be seen busy),
# not from the stretch sums of its marks (a fraction of a second).
EV=${KILN_T961_EVENTS:-$EVENTS}
expect_status 0 "$GEN" -n "$EV" -f $((EV / 2 + 1)) -t 10000 -o "$T/big.trace.zst"
mkfifo "$T/in.trace.zst"
serve_start --http 127.0.0.1:0 "$T/in.trace.zst"
# Nothing was written into the FIFO: the URL came before the reading.
expect_get 200 /api/status
jq -e '.ready == false and .loaded == 0 and (.loading | test("reading .*in.trace.zst. \\(1 of 1\\)"))' \
    "$T/body" >/dev/null || fail "status while reading: $(cat "$T/body")"
# A request for data waits for the input, then answers.
curl -s -o "$T/profiles0" -w '%{http_code}' "${URL}api/profiles" > "$T/profiles0.status" &
WAITER=$!
cat "$T/big.trace.zst" > "$T/in.trace.zst"
wait "$WAITER" || fail "curl of /api/profiles during the reading failed"
[ "$(cat "$T/profiles0.status")" = 200 ] || fail "profiles after reading: $(cat "$T/profiles0")"
jq -e '.profiles[0].times == true and .profiles[0].format != ""' "$T/profiles0" >/dev/null ||
    fail "profiles after reading: $(cat "$T/profiles0")"
expect_get 200 /api/status
jq -e '.ready == true and .loaded == 1 and .loading == null and .jobs == []' "$T/body" >/dev/null ||
    fail "status once read: $(cat "$T/body")"
expect_get 200 /api/timeline
END=$(jq .end "$T/body")
[ "$END" -gt 1000000 ] || fail "timeline end $END"

# job_running: the id of the range job /api/status shows, or fails.
job_running() {
    curl -s -o "$T/st" "${URL}api/status" || return 1
    JOB=$(jq -r '.jobs[0].id // empty' "$T/st")
    [ -n "$JOB" ]
}
# start_range T0 T1 NAME: asks for the range's top table in the background.
start_range() {
    curl -s -o "$T/$3.body" -w '%{http_code}' "${URL}api/top?type=allocated&t0=$1&t1=$2&n=5" \
        > "$T/$3.status" &
    eval "${3}_PID=\$!"
}
# wait_job PID: waits until a range job runs, or the request PID ended.
wait_job() {
    local _
    for _ in $(seq 6000); do
        job_running && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

ok=
for try in 1 2 3 4 5 6; do
    t0=$((END / 10 * try / 7)); t1=$((END - END / 20 * try))
    start_range "$t0" "$t1" busy
    if wait_job "$busy_PID"; then
        before=$JOB
        took=$(curl -s -o "$T/p.body" -w '%{http_code} %{time_total}' "${URL}api/profiles")
        [ "${took%% *}" = 200 ] || fail "profiles while busy: $took $(cat "$T/p.body")"
        if job_running && [ "$JOB" = "$before" ]; then
            echo "t961: /api/profiles answered in ${took#* } s while range job $JOB ran (try $try)"
            jq -e '.jobs[0].total > 0 and (.jobs[0].what | test("time range"))' "$T/st" >/dev/null ||
                fail "job progress: $(cat "$T/st")"
            ok=1
        fi
    fi
    wait "$busy_PID" || fail "curl of the busy range failed"
    [ "$(cat "$T/busy.status")" = 200 ] || fail "busy range: $(cat "$T/busy.body")"
    [ -n "$ok" ] && break
done
[ -n "$ok" ] || fail "no try saw /api/profiles answered while a range was analysed"

# A newer range cancels the older one's analysis.
ok=
for try in 1 2 3 4 5 6; do
    start_range "$((END / 3 + try))" "$((END - try))" old
    wait_job "$old_PID" || { wait "$old_PID"; continue; }
    start_range "$((END / 4 + try))" "$((END / 2 + try))" new
    wait "$old_PID" || fail "curl of the old range failed"
    wait "$new_PID" || fail "curl of the new range failed"
    [ "$(cat "$T/new.status")" = 200 ] || fail "new range: $(cat "$T/new.body")"
    jq -e '.total > 0' "$T/new.body" >/dev/null || fail "new range: $(cat "$T/new.body")"
    case $(cat "$T/old.status") in
    409) has "$T/old.body" 'cancelled: another time range'; ok=1; break ;;
    200) ;;     # it ended before the newer request came: again
    *) fail "old range: $(cat "$T/old.status") $(cat "$T/old.body")" ;;
    esac
done
[ -n "$ok" ] || fail "no try saw an older range cancelled by a newer one"
serve_stop
has "$T/serve.err" "read '.*in.trace.zst' in"
exit 0
