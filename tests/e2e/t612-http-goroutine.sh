#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# /debug/pprof/goroutine: a C program's threads are its goroutines.  One
# sample per thread with its stack now (goroutine/count, thread,
# thread_name and state labels), as Grafana Alloy and Parca scrape it;
# ?debug=1 lists the stacks as text.  Running threads are caught where
# they run (hash_payload), waiting ones where they wait (the main
# thread's poll), without a signal (the host's system calls are not
# interrupted); kiln's own threads are not in it; the host keeps
# working and exits normally.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-http.sh"

start_http s --http 127.0.0.1:0 --threads 2
before=$(work_count) || fail "the workload's own port does not answer"
expect_code 200 "debug/pprof/goroutine"
[ "$(head -c 2 "$T/body" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "goroutine is not gzipped pprof"
cp "$T/body" "$T/g.pb.gz"
"$KILN" top "$T/g.pb.gz" > "$T/g.top" || fail "kiln cannot read the goroutine profile"
has "$T/g.top" "^Type: goroutine"
expect_code 200 "debug/pprof/goroutine?debug=1"
cp "$T/body" "$T/g.txt"
head -40 "$T/g.txt"
has "$T/g.txt" "^threads: total 3$"
# The two workers burn CPU: running, in handle_request; the main thread
# waits for connections: sleeping, in poll, under main.
[ "$(grep -c '^thread [0-9]* ".*" \[running\]:$' "$T/g.txt")" -ge 1 ] ||
    fail "no running thread in the dump"
has "$T/g.txt" "^handle_request$"
awk '/^thread .*\[sleeping\]:$/ { s = 1; next } /^$/ { s = 0 } s && /^main$/ { ok = 1 } END { exit !ok }' "$T/g.txt" ||
    fail "the main thread is not shown sleeping under main"
# Nothing of kiln's: its HTTP threads, heap writer, guard, collector.
hasnt "$T/g.txt" "MHD_|guard_main|job_main|write_loop|collect|kiln_"
if command -v go >/dev/null; then
    HOME=$T GOCACHE=$T/gocache go tool pprof -raw "$T/g.pb.gz" > "$T/raw" 2>&1 ||
        { cat "$T/raw"; fail "go tool pprof cannot read the goroutine profile"; }
    has "$T/raw" "^goroutine/count"
    has "$T/raw" "state:\[running\]"
    has "$T/raw" "state:\[sleeping\]"
fi
expect_code 400 "debug/pprof/goroutine?debug=x"
# Taken again and again, the host does not notice.
for i in $(seq 20); do expect_code 200 "debug/pprof/goroutine"; done
after=$(work_count) || fail "the workload's own port stopped answering"
[ "$after" -gt "$before" ] || fail "the workload stopped working ($before -> $after)"
stop_serve

# Idle workers (sleeping in nanosleep): every thread is waiting.
start_http i --http 127.0.0.1:0 --threads 2 --idle
# The main thread may still be answering the readiness probe's connection
# when the first dump is taken (seen [running] in poll on a loaded
# machine): idle means every thread sleeps once that is over.
all_sleeping() {
    expect_code 200 "debug/pprof/goroutine?debug=2"
    cp "$T/body" "$T/i.txt"
    [ "$(grep -c '\[sleeping\]:$' "$T/i.txt")" = 3 ]
}
WAIT_TRIES=100 wait_for "every idle thread to be shown sleeping" all_sleeping
has "$T/i.txt" "^threads: total 3$"
has "$T/i.txt" "^clock_nanosleep$"
stop_serve
echo ok
