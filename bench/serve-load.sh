#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/serve-load.sh: `kiln serve` under load (issue 23, item 7; a bench,
# not a timed test).  CLIENTS clients (default 50) each send requests one
# after another for DURATION seconds (default 60) to one `kiln serve` of the bench
# profile (bench/gen-perfscript.c's SAMPLES samples over STACKS stacks,
# converted to pprof by kiln convert, as bench/run.sh makes it): a mix of
# /api/flame, /api/top, /api/sandwich, /api/calltree and /api/profiles
# with focus, ignore and focus+ignore selections and time ranges
# (bench/serve-load.py, Python's standard library).  Reports the requests
# served, errors (any answer but 200, a cut connection, a request over
# TIMEOUT s), latency p50/p99/max per view, the server's RSS idle (after
# the input is read), at its peak and after the load (read every second for
# up to 30 s until back within 10% of idle).  Goal (issue 23): p50 < 200 ms,
# p99 < 1 s, RSS back within 10% of idle.
# Prints a markdown section and writes it to RESULTS (bench/RESULTS-serve-load.md).
# Environment: KILN (build/kiln), CLIENTS (50), DURATION (seconds, 60), SAMPLES
# (1000000), STACKS (100000), SEED (1), BENCH_OUT (bench/out), TIMEOUT (120).
# Exit status 1 when a request failed or a tool is missing; goals missed are
# reported only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
KILN=${KILN:-$root/build/kiln}
CLIENTS=${CLIENTS:-50}
DURATION=${DURATION:-60}
SAMPLES=${SAMPLES:-1000000}
STACKS=${STACKS:-100000}
SEED=${SEED:-1}
OUT=${BENCH_OUT:-$here/out}
TIMEOUT=${TIMEOUT:-120}
RESULTS=${RESULTS:-$here/RESULTS-serve-load.md}

say() { echo "serve-load: $*" >&2; }
die() { say "$*"; exit 1; }

command -v python3 >/dev/null || die "python3 is missing"
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
mkdir -p "$OUT" || exit 1

# ---- the input: generated once, kept while its stamp matches
gen=$OUT/gen-perfscript
if [ ! -x "$gen" ] || [ "$here/gen-perfscript.c" -nt "$gen" ]; then
    cc -O2 -std=gnu17 -o "$gen" "$here/gen-perfscript.c" -lm || die "cannot build the generator"
fi
pb=$OUT/serve-load.pb.gz
stamp="$(cksum <"$here/gen-perfscript.c" | cut -d' ' -f1) -n $SAMPLES -k $STACKS -s $SEED"
if [ ! -s "$pb" ] || [ "$(cat "$pb.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "generating $pb ($SAMPLES samples)"
    rm -f "$pb.stamp"
    "$gen" -n "$SAMPLES" -k "$STACKS" -s "$SEED" -o "$OUT/serve-load.perf" 2>/dev/null ||
        die "the generator failed"
    "$KILN" convert -q "$OUT/serve-load.perf" -o "$pb" || die "kiln convert failed"
    rm -f "$OUT/serve-load.perf"
    echo "$stamp" >"$pb.stamp"
fi

# ---- the server: an ephemeral port, URL read from its stdout
tmp=$(mktemp -d) || exit 1
trap 'kill -INT $pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkfifo "$tmp/url"
"$KILN" serve "$pb" --http 127.0.0.1:0 >"$tmp/url" 2>"$tmp/serve.err" &
pid=$!
exec 9<"$tmp/url"
read -r -t 120 -u 9 _ _ url || true
case $url in http://*) ;; *) cat "$tmp/serve.err" >&2; die "kiln serve printed no URL" ;; esac
curl -s --max-time 600 -o /dev/null "${url}api/profiles" || die "the input was not read"

say "$CLIENTS clients for $DURATION s against $url"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
python3 "$here/serve-load.py" "$url" "$pid" "$CLIENTS" "$DURATION" "$TIMEOUT" >"$tmp/res"
rc=$?
grep -q "^requests " "$tmp/res" || { cat "$tmp/res"; die "the load client failed"; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill -INT "$pid"
wait "$pid"
src=$?
[ "$src" = 0 ] || { say "kiln serve exited $src"; rc=1; }

v() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/res"; }
ms() { awk -v s="$1" 'BEGIN { printf "%.0f", s * 1000 }'; }
lat() { awk -v k="$1" -v c="$2" '$1 == "lat" && $2 == k { print $c }' "$tmp/res"; }
goal_le() { awk -v v="$1" -v g="$2" 'BEGIN { print (v <= g ? "met" : "**missed**") }'; }
idle=$(v rss_idle_kb) peak=$(v rss_peak_kb) after=$(v rss_after_kb)
p50=$(lat all 4) p99=$(lat all 5)
back=$(awk -v a="$after" -v i="$idle" 'BEGIN { printf "%.1f", (i > 0 ? (a / i - 1) * 100 : 0) }')
{
    echo "## kiln serve under load ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "\`bench/serve-load.sh\`: $CLIENTS clients x $DURATION s, mixed views with focus/ignore/range"
    echo "selections, on the bench profile ($SAMPLES samples, $STACKS stacks, seed $SEED, $(stat -c %s "$pb") bytes of pprof);"
    echo "kiln $(git -C "$root" rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs, load average $load_before at the start, $load_after at the end"
    echo "(the machine is shared: the clients run on it too)."
    echo
    echo "| | value | goal |"
    echo "|---|---|---|"
    echo "| requests served | $(v requests) in $(v wall) s | |"
    echo "| errors | $(v errors) | 0 |"
    echo "| latency p50 (all) | $(ms "$p50") ms | < 200 ms: $(goal_le "$p50" 0.2) |"
    echo "| latency p99 (all) | $(ms "$p99") ms | < 1000 ms: $(goal_le "$p99" 1.0) |"
    echo "| RSS idle / peak / after | $((idle / 1024)) / $((peak / 1024)) / $((after / 1024)) MB ($back% over idle after $(v settle_s) s) | within 10%: $(goal_le "$back" 10) |"
    echo
    echo "| view | requests | p50 | p99 | max |"
    echo "|---|---|---|---|---|"
    awk '$1 == "lat" { printf "| %s | %d | %.0f ms | %.0f ms | %.0f ms |\n", $2, $3, $4 * 1000, $5 * 1000, $6 * 1000 }' "$tmp/res"
    grep '^error_example' "$tmp/res" | sed 's/^error_example /\n    /'
} | tee "$RESULTS"
exit $rc
