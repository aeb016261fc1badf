#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/serve.sh: `kiln serve` against the viewers it replaces (issue 14,
# "Speed"), in headless chromium (Debian's /usr/bin/chromium driven by
# playwright-core, bench/serve-bench.mjs):
#   - time from the server's start to the flame graph drawn:
#       kiln serve TEXT            (the bench's perf script text)
#       kiln serve PB.GZ           (the pprof kiln convert makes of it)
#       go tool pprof -http PB.GZ  (its /ui/flamegraph page)
#       speedscope TEXT            (its offline release from npm, served
#                                   locally with the text: #profileURL=)
#   - peak RSS of the server (VmHWM) and the page's JS heap (CDP
#     Performance.getMetrics JSHeapUsedSize), and the renderer's peak RSS;
#   - latency of zoom and search on kiln's page, from the input event to the
#     frame after the redraw: median and p95.
# Prints a markdown section on stdout and writes it to
# bench/RESULTS-serve.md (bench/run.sh appends it to RESULTS.md).
#
# The input is bench/run.sh's: perf script text from bench/gen-perfscript.c
# (SAMPLES samples over STACKS candidate stacks, SEED), reused from
# BENCH_OUT when its stamp matches, and converted to pprof by kiln convert
# (x.pb.gz, as run.sh names it).  speedscope 1.25 refuses perf script
# whose sample headers start with blanks (perf right-aligns the command
# name; so does the generator): it gets a copy with those blanks removed,
# nothing else changed.
#
# Each round runs every viewer once (kiln text, kiln pprof, pprof,
# speedscope), RUNS rounds; medians.  The browser runs with --disable-gpu
# (software compositing, as tests/browser does), except for speedscope,
# which needs WebGL: it gets a GPU emulated by SwiftShader, and kiln's page
# is run once more per round that way (kiln-pprof-gl) to show what that
# costs.  Each run has a fresh browser (started
# before the clock) and its own server, which the driver starts and stops by
# its PID.  speedscope is run again only while a run takes under a minute
# (one run at full size).
#
# Noise: the machine is shared; as bench/record.sh does, everything (the
# driver, chromium, the servers) runs at nice NICE (-10 as root) in a
# session of its own (setsid) whose scheduler autogroup gets that nice
# value, so that other sessions' jobs weigh less; every viewer alike.
#
# Environment: KILN (default build/kiln), RUNS (3), SAMPLES (1000000),
# STACKS (100000), SEED (1), BENCH_OUT (bench/out), RESULTS
# (bench/RESULTS-serve.md), INTERACT (zooms and searches per kiln run: 30),
# TIMEOUT (seconds a viewer may take to draw: 600), NICE (-10 as root,
# else 0), QUICK=1 (INTERACT 5,
# TIMEOUT 120; with SAMPLES=20000 a smoke run of a minute).  Exit status 1
# if a kiln run failed or a tool is missing; a viewer that does not draw
# in time and goals missed are reported only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
RUNS=${RUNS:-3}
SAMPLES=${SAMPLES:-1000000}
STACKS=${STACKS:-100000}
SEED=${SEED:-1}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-serve.md}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    INTERACT=${INTERACT:-5} TIMEOUT=${TIMEOUT:-120}
else
    INTERACT=${INTERACT:-30} TIMEOUT=${TIMEOUT:-600}
fi
if [ "$(id -u)" = 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac

say() { echo "serve-bench: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$NICE" != 0 ] && [ -z "${SERVE_BENCH_INNER:-}" ] &&
   [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] &&
   command -v setsid >/dev/null 2>&1; then
    # A background job of a non-interactive shell is no process group
    # leader, so setsid does not fork: $! is the new session's leader.
    SERVE_BENCH_INNER=1 KILN=$KILN BENCH_OUT=$OUT setsid bash "$0" "$@" &
    inner=$!
    trap 'kill -TERM -- -"$inner" 2>/dev/null' INT TERM
    wait "$inner"
    rc=$?
    # wait returns early when a trapped signal arrives: wait again
    kill -0 "$inner" 2>/dev/null && { wait "$inner"; rc=$?; }
    exit "$rc"
fi
prio=()
if [ "$NICE" != 0 ]; then
    [ -n "${SERVE_BENCH_INNER:-}" ] && { echo "$NICE" >/proc/self/autogroup 2>/dev/null ||
        say "cannot set the autogroup's nice value; timings will be noisier"; }
    prio=(nice -n "$NICE")
fi
nice_note="nice $NICE"
[ -n "${SERVE_BENCH_INNER:-}" ] && nice_note="$nice_note (own session, autogroup nice $(awk '{print $3}' /proc/self/autogroup 2>/dev/null))"

[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
command -v node >/dev/null 2>&1 || die "node not found (scripts/deps.sh test)"
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium not found (scripts/deps.sh test)"
B=$root/tests/browser
[ -d "$B/node_modules/playwright-core" ] && [ -d "$B/node_modules/speedscope/dist/release" ] ||
    die "playwright-core or speedscope missing in tests/browser/node_modules (run scripts/deps.sh test)"
gopprof=
if command -v go >/dev/null 2>&1; then
    gopprof=$(go tool -n pprof 2>/dev/null) || gopprof=
fi
[ -n "$gopprof" ] && [ -x "$gopprof" ] || die "go tool pprof not found (Debian golang-go)"
mkdir -p "$OUT" || exit 1
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u '+%Y-%m-%d %H:%M UTC')

# ---- inputs (the same files and stamps as bench/run.sh)

gen_src=$here/gen-perfscript.c
gen=$OUT/gen-perfscript
if [ ! -x "$gen" ] || [ "$gen_src" -nt "$gen" ]; then
    say "building the generator"
    cc -O2 -std=gnu17 -o "$gen" "$gen_src" -lm || die "cannot build $gen_src"
fi
text=$OUT/text.perf
stamp="$(cksum <"$gen_src" | cut -d' ' -f1) -n $SAMPLES -k $STACKS -s $SEED"
if ! { [ -f "$text" ] && [ -f "$text.stamp" ] && [ "$(cat "$text.stamp")" = "$stamp" ]; }; then
    say "generating $text ($SAMPLES samples)"
    rm -f "$text.stamp"
    "$gen" -n "$SAMPLES" -k "$STACKS" -s "$SEED" -o "$text" 2>"$text.info" || die "gen-perfscript failed"
    echo "$stamp" >"$text.stamp"
fi
pb=$OUT/x.pb.gz
if [ ! -s "$pb" ] || [ "$text" -nt "$pb" ]; then
    say "converting $text to $pb"
    "$KILN" convert -q "$text" -o "$pb" || die "kiln convert failed"
fi
# speedscope's copy: sample headers without their leading blanks.
ss=$OUT/text-speedscope.perf
if ! { [ -f "$ss" ] && [ "$(cat "$ss.stamp" 2>/dev/null)" = "$stamp" ]; }; then
    say "writing $ss (headers without leading blanks, for speedscope)"
    rm -f "$ss.stamp"
    sed -E 's/^ +//' "$text" >"$ss" || die "cannot write $ss"
    echo "$stamp" >"$ss.stamp"
fi
text_bytes=$(stat -c %s "$text")
pb_bytes=$(stat -c %s "$pb")
# Warm the page cache: every viewer reads memory, not disk.
cat "$text" "$pb" "$ss" >/dev/null

GOTMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-serve-bench.XXXXXX") || exit 1
trap 'rm -rf "$GOTMP"' EXIT
mkdir -p "$GOTMP/home" "$GOTMP/pprof"

runs=$OUT/serve-runs.jsonl
: >"$runs"
log=$OUT/serve-bench.log
: >"$log"

# view NAME VIEWER FILE [ARGS...]: one run of the driver; appends its JSON
# line (with "name") to $runs.  Returns 1 when the viewer did not draw.
view() {
    local name=$1 viewer=$2 file=$3 line
    shift 3
    line=$(cd "$B" && KILN=$KILN PPROF=$gopprof HOME=$GOTMP/home PPROF_TMPDIR=$GOTMP/pprof \
        timeout $((TIMEOUT + 120)) "${prio[@]}" node "$here/serve-bench.mjs" "$viewer" "$file" --timeout "$TIMEOUT" "$@" \
        2>>"$log")
    case $line in
    '{'*) ;;
    *) line="{\"viewer\":\"$viewer\",\"ok\":false,\"why\":\"the driver printed nothing (see $log)\"}" ;;
    esac
    echo "{\"name\":\"$name\",${line#\{}" >>"$runs"
    echo "$name: $line" | cut -c1-400 >>"$log"
    if ! echo "$line" | grep -q '"ok":true'; then
        say "$name: did not draw: $(echo "$line" | sed -n 's/.*"why":"\([^"]*\)".*/\1/p')"
        return 1
    fi
    say "$name: drawn after $(echo "$line" | sed -n 's/.*"t_drawn":\([0-9.]*\).*/\1/p') s"
}

failed=0 ss_again=1
for ((i = 0; i < RUNS; i++)); do
    say "round $((i + 1)) of $RUNS (load $(cut -d' ' -f1-3 /proc/loadavg))"
    view kiln-text kiln "$text" --interact "$INTERACT" || failed=1
    view kiln-pprof kiln "$pb" --interact "$INTERACT" || failed=1
    view kiln-pprof-gl kiln "$pb" --interact "$INTERACT" --gl swiftshader || failed=1
    view pprof pprof "$pb" || true
    if [ "$ss_again" = 1 ]; then
        t0=$(date +%s)
        view speedscope speedscope "$ss" --gl swiftshader || ss_again=0
        [ $(($(date +%s) - t0)) -lt 60 ] || ss_again=0
    fi
done

node "$here/serve-report.mjs" "$runs" \
    "$(cat "$text.info" 2>/dev/null | tr '\n' ' ')" "$text_bytes" "$pb_bytes" \
    "$date_start" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$RUNS" "$INTERACT" \
    "$TIMEOUT" "$KILN ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))" \
    "$(go version 2>/dev/null | awk '{print $3}')" \
    "$(/usr/bin/chromium --version 2>/dev/null | head -1)" \
    "$(node -p "require('$B/node_modules/speedscope/package.json').version" 2>/dev/null)" \
    "$nice_note" \
    >"$OUT/serve-results.md" || die "the report failed"
cp "$OUT/serve-results.md" "$RESULTS" || failed=1
cat "$OUT/serve-results.md"
exit "$failed"
