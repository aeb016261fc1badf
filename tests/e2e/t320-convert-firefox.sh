#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln convert --to firefox (the Firefox Profiler's processed format),
# loaded by the profiler's own code (npm @firefox-devtools/profiler-cli in
# tests/firefox/: its upgraders, processing and call tree) and checked
# against the format's schema (tests/firefox/check.mjs: column lengths,
# indexes, string indexes, version):
#   - a perf script of one process with two threads, known counts and
#     times: two threads with their pid, tid and names; hot 60% and cold
#     40% of the main thread in the profiler's call tree (self), work 100%
#     of the worker; the time stamps' span kept (990 ms, 580 ms);
#   - kiln's heap trace fixture: a Memory counter whose range is the heap's
#     peak as kiln reads it;
#   - kiln record --wall of the offcpu workload (where kiln can trace
#     sched_switch): sleeping markers for nap (1 s) and wait_pipe (0.5 s),
#     within 5% of what the program measured, with the stacks waited in
#     (clock_nanosleep, read); in the profiler's call tree of the main
#     thread, clock_nanosleep's and read's time as nap's and wait_pipe's,
#     and its CPU use (threadCPUDelta) as burn's CPU time;
#   - whole stacks as kiln's collapsed output (a recursion, the demo);
#   - a profile without samples still loads (one empty thread);
#   - the extension .fxprof.json picks the format, help lists it.
. "$(dirname "$0")/lib.sh"
need node
CHECK="node $KILN_SRC/tests/firefox/check.mjs"
PQJS=$KILN_SRC/tests/firefox/node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js
[ -f "$PQJS" ] ||
    skip "the Firefox Profiler's loader is missing: run scripts/deps.sh test (npm install in tests/firefox)"
# The profiler's daemons (one per loaded profile), started here in the
# foreground form its own `load` uses (whose start-up wait is a fixed
# 500 ms, too short on a loaded machine), stopped by pid on exit.
export PROFILER_CLI_SESSION_DIR=$T/pq PROFILER_CLI_NO_SYMBOLICATE=1
daemons=
trap 'for d in $daemons; do kill "$d" 2>/dev/null; done; rm -rf "$T"' EXIT
# pq SESSION ARGS...: the profiler's CLI on a loaded session
pq() { local s=$1; shift; node "$PQJS" "$@" --session "$s"; }
# load SESSION FILE: a daemon holding FILE, once it answers
load() {
    node "$PQJS" --daemon "$2" --session "$1" > "$T/$1.daemon" 2>&1 &
    local d=$!
    daemons="$daemons $d"
    # Its socket first (a client asking before it is there may clean up
    # the session), then its answer (once the profile is loaded).
    until [ -S "$PROFILER_CLI_SESSION_DIR/$1.sock" ] && pq "$1" thread list > "$T/$1.ready" 2>&1; do
        ps -o stat= -p "$d" 2>/dev/null | grep -qv Z ||
            { cat "$T/$1.daemon" "$T/$1.ready" 2>/dev/null; fail "the Firefox Profiler cannot load $2"; }
        grep -s "load failed" "$T/$1.ready" && fail "the Firefox Profiler cannot load $2"
        sleep 0.1
    done
}
# js FILE EXPR: EXPR of the JSON in FILE (as d)
js() { node -e "const d = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); console.log($2)" "$1"; }
# self% of function $2 in the profiler's functions of thread $1 (JSON file)
selfpct() { js "$1" "(d.functions.find((f) => f.name === '$2') || { selfPercentage: -1 }).selfPercentage.toFixed(2)"; }

# --- a perf script of two threads, known counts and times
for i in $(seq 0 99); do
    f=hot; [ $((i % 5)) -ge 3 ] && f=cold
    printf 'app 100/100 %d.%06d: 1 cpu-clock: \n\t  401000 %s (/usr/bin/app)\n\t  400800 main (/usr/bin/app)\n\n' \
        $((10 + i / 100)) $(( (i % 100) * 10000 )) "$f"
done > "$T/a.perf"
for i in $(seq 0 29); do
    printf 'worker 100/101 %d.%06d: 1 cpu-clock: \n\t  402000 work (/usr/bin/app)\n\t  400800 main (/usr/bin/app)\n\n' \
        $((10 + (5000 + i * 20000) / 1000000)) $(( (5000 + i * 20000) % 1000000 ))
done >> "$T/a.perf"
expect_status 0 "$KILN" convert "$T/a.perf" -o "$T/a.fxprof.json"
head -c 200 "$T/a.fxprof.json" | grep -q '"preprocessedProfileVersion":70' || fail "not version 70"
$CHECK "$T/a.fxprof.json" > "$T/a.chk" || fail "check.mjs refuses the profile"
cat "$T/a.chk"
has "$T/a.chk" '^thread app pid 100 tid 100 samples 100 weight 100 markers 0 span 990.000$'
has "$T/a.chk" '^thread worker pid 100 tid 101 samples 30 weight 30 markers 0 span 580.000$'
has "$T/a.chk" '^self app hot 60.00$'
load a "$T/a.fxprof.json"
pq a thread list --json > "$T/a.threads" || fail "thread list"
[ "$(js "$T/a.threads" 'd.threads.map((t) => t.name + "/" + t.pid + "/" + t.tid).join(" ")')" = "app/100/100 worker/100/101" ] ||
    { cat "$T/a.threads"; fail "the profiler's threads differ"; }
pq a thread functions --json > "$T/a.fn" || fail "thread functions"
[ "$(selfpct "$T/a.fn" hot)" = 60.00 ] && [ "$(selfpct "$T/a.fn" cold)" = 40.00 ] ||
    { cat "$T/a.fn"; fail "hot/cold: $(selfpct "$T/a.fn" hot)/$(selfpct "$T/a.fn" cold)% in the profiler, want 60/40"; }
pq a thread select t-1 > /dev/null || fail "thread select"
pq a thread functions --json > "$T/a.fn1" || fail "thread functions"
[ "$(selfpct "$T/a.fn1" work)" = 100.00 ] || fail "work: $(selfpct "$T/a.fn1" work)% of the worker"
pq a profile info --json > "$T/a.info" || fail "profile info"
# The root range covers the time stamps (990 ms and a little).
js "$T/a.info" 'd.context.rootRange.end - d.context.rootRange.start' > "$T/a.range"
awk '{ exit !($1 >= 990 && $1 < 1000) }' "$T/a.range" || fail "range $(cat "$T/a.range") ms, want 990"

# --- whole stacks, a recursion through one call site and inline frames:
# as kiln's collapsed output has them
printf 'main;f;g 3\nmain;h 2\nmain;f;f;f;g 5\n' > "$T/r.collapsed"
expect_status 0 "$KILN" convert "$T/r.collapsed" -o "$T/r.fxprof.json"
$CHECK "$T/r.fxprof.json" > "$T/r.chk" || fail "check.mjs refuses the recursive profile"
diff -u <(sort "$T/r.collapsed") <(awk '$1 == "stack" { print $3, $4 }' "$T/r.chk" | sort) ||
    fail "the stacks differ from the input's"
if [ -f "$KILN_SRC/tests/fixtures/demo/demo.perf.gz" ]; then
    expect_status 0 "$KILN" convert "$KILN_SRC/tests/fixtures/demo/demo.perf.gz" -o "$T/d.fxprof.json"
    expect_status 0 "$KILN" convert "$KILN_SRC/tests/fixtures/demo/demo.perf.gz" -o "$T/d.collapsed" --sample-type samples
    $CHECK "$T/d.fxprof.json" > "$T/d.chk" || fail "check.mjs refuses the demo profile"
    # (collapsed marks kernel frames _[k]; the profiler's category says it)
    diff -u <(sed 's/_\[k\]//g' "$T/d.collapsed" | sort) <(awk '$1 == "stack" { $1 = $2 = ""; sub(/^  /, ""); print }' "$T/d.chk" | sort) >/dev/null ||
        fail "the demo's stacks differ from kiln's collapsed output"
fi

# --- a profile without samples: one empty thread (the profiler refuses a
# profile without threads)
printf 'main;idle 0\n' > "$T/e.collapsed"
expect_status 0 "$KILN" convert "$T/e.collapsed" -o "$T/e.fxprof.json"
$CHECK "$T/e.fxprof.json" > "$T/e.chk" || fail "check.mjs refuses the empty profile"
has "$T/e.chk" '^thread .* samples 0 '
load e "$T/e.fxprof.json"

# --- the heap trace fixture: memory over time
FX=$KILN_SRC/tests/fixtures/heaptrace
expect_status 0 "$KILN" convert "$FX/heapbasic.trace.zst" -o "$T/h.json" --to firefox
$CHECK "$T/h.json" > "$T/h.chk" || fail "check.mjs refuses the heap profile"
expect_status 0 "$KILN" top --sample-type peak "$FX/heapbasic.trace.zst"
peak=$(sed -n 's/.* of \([0-9.]*\)\([kMG]*B\) total.*/\1 \2/p' "$T/out")
load h "$T/h.json"
pq h counter list --json > "$T/h.counters" || fail "counter list"
range=$(js "$T/h.counters" 'd.counters[0].category + " " + d.counters[0].stats.find((s) => s.source === "count-range").value')
echo "counter: $range; kiln's peak: $peak"
case $range in Memory\ *) ;; *) fail "no Memory counter: $range" ;; esac
awk -v r="${range#Memory }" -v p="$peak" 'BEGIN {
    split(p, a, " "); m = a[2] == "MB" ? 1048576 : a[2] == "kB" ? 1024 : a[2] == "GB" ? 1073741824 : 1
    d = r - a[1] * m; if (d < 0) d = -d; exit !(d <= 0.01 * r) }' ||
    fail "the memory track's range $range is not the peak $peak"

# --- states as markers: a wall profile
if "$KILN" record -q --wall -o "$T/probe.pb.gz" -- true >/dev/null 2>&1; then
    "$KILN" record -q --wall -o "$T/w.pb.gz" -- "$WL/offcpu" > "$T/m" 2>"$T/err" ||
        { cat "$T/err"; fail "kiln record --wall failed"; }
    m() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$T/m"; }
    expect_status 0 "$KILN" convert "$T/w.pb.gz" -o "$T/w.fxprof.json"
    $CHECK "$T/w.fxprof.json" > "$T/w.chk" || fail "check.mjs refuses the wall profile"
    grep -v runnable "$T/w.chk"
    # marker TID sleeping START DUR LEAF: nap's and wait_pipe's, main thread
    pid=$(m pid)
    nap=$(awk -v p="$pid" '$1 == "marker" && $2 == p && $3 == "sleeping" && $6 == "clock_nanosleep" { print $5 / 1000; exit }' "$T/w.chk")
    wait=$(awk -v p="$pid" '$1 == "marker" && $2 == p && $3 == "sleeping" && $6 == "read" { print $5 / 1000; exit }' "$T/w.chk")
    [ -n "$nap" ] && [ -n "$wait" ] || fail "no sleeping markers with nap's and wait_pipe's stacks"
    awk -v a="$nap" -v b="$(m nap)" -v c="$wait" -v e="$(m wait)" \
        'BEGIN { exit !(a > 0.95 * b && a < 1.05 * b && c > 0.95 * e && c < 1.05 * e) }' ||
        fail "markers nap ${nap}s wait ${wait}s, the program measured $(m nap)s $(m wait)s"
    load w "$T/w.fxprof.json"
    pq w thread markers --json > "$T/w.markers" || fail "thread markers"
    grep -q '"sleeping"' "$T/w.markers" || { head -50 "$T/w.markers"; fail "the profiler shows no sleeping markers"; }
    # The main thread's call tree in the profiler: clock_nanosleep's self
    # time (milliseconds) is nap's, read's is wait_pipe's.
    pq w thread list --json > "$T/w.threads" || fail "thread list"
    h=$(js "$T/w.threads" "d.threads.find((t) => t.tid === $pid).threadHandle")
    # CPU use (threadCPUDelta: the running samples' time): burn's CPU time
    # (the profiler leaves out the first sample's delta: 15%).
    cpu=$(js "$T/w.threads" "d.threads.find((t) => t.tid === $pid).cpuMs / 1000")
    awk -v a="$cpu" -v b="$(m burn_cpu)" 'BEGIN { exit !(a > 0.85 * b && a < 1.15 * b) }' ||
        fail "the profiler's CPU use of the main thread ${cpu}s, burn's CPU time $(m burn_cpu)s"
    pq w thread select "$h" > /dev/null || fail "thread select $h"
    pq w thread functions --json > "$T/w.fn" || fail "thread functions"
    self_ms() { js "$T/w.fn" "d.weightType + ' ' + d.functions.find((f) => f.name === '$1').selfSamples / 1000"; }
    echo "profiler: clock_nanosleep $(self_ms clock_nanosleep) s, read $(self_ms read) s"
    set -- $(self_ms clock_nanosleep) $(self_ms read)
    [ "$1" = tracing-ms ] || fail "weight type $1, want tracing-ms"
    awk -v a="$2" -v b="$(m nap)" -v c="$4" -v e="$(m wait)" \
        'BEGIN { exit !(a > 0.95 * b && a < 1.05 * b && c > 0.95 * e && c < 1.05 * e) }' ||
        fail "the profiler's clock_nanosleep ${2}s read ${4}s, the program measured $(m nap)s $(m wait)s"
fi

# --- the name and the help
expect_status 0 "$KILN" help convert
has "$T/out" '^  firefox +\.fxprof\.json'
expect_status 2 "$KILN" convert "$T/a.perf" -o "$T/x.fxprof.json" --sample-type nosuch
echo ok
