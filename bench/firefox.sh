#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/firefox.sh: kiln serve's call tree against the Firefox Profiler's
# own (issue 26, Speed: "against Firefox Profiler's call tree and stack
# chart on the same perf script text, loaded from its npm package if it
# can be served offline").
#
# The Firefox Profiler's web app is not published on npm, so its page
# cannot be served here.  Its processing code is: @firefox-devtools/
# profiler-cli (tests/firefox, installed by scripts/deps.sh) bundles the
# profiler's importers and call tree, run in node as a daemon that loads
# a profile once and answers queries.  It has no stack chart, so only the
# call tree is compared, and per thread (the profiler's call tree is a
# thread's; kiln's is asked with labels=thread=TID).
#
# Input: bench/gen-perfscript.c's perf script text, SAMPLES samples over
# STACKS stacks, SEED.  The generator pads the command name to 16
# columns as older perf did; the profiler's perf importer dies on that
# layout (V8 "invalid size" on a header line that starts with spaces), so
# both tools read the text with the name at the line's start, as today's
# perf script writes it.
#
# Each round: kiln serve reads the text (time to its answer of
# /api/profiles); the profiler-cli daemon loads it (`profiler-cli load`);
# then, for the THREADS busiest threads, each tool's top-down and
# inverted (bottom-up) call tree, the first of its selection.  CPU time
# of the serving process (kiln serve; the daemon) from /proc/PID/stat
# around each step, wall time around each command, peak RSS (VmHWM) at
# the end.  Medians over ROUNDS rounds.  Writes a markdown section to
# RESULTS (bench/RESULTS-firefox.md) and stdout.
# Environment: KILN (build/kiln), SAMPLES (100000), STACKS (20000), SEED
# (1), THREADS (2), ROUNDS (3), BENCH_OUT (bench/out), RESULTS.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/lib.sh"
KILN=${KILN:-$root/build/kiln}
SAMPLES=${SAMPLES:-100000}
STACKS=${STACKS:-20000}
SEED=${SEED:-1}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-firefox.md}
CLI=$root/tests/firefox/node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js
say() { echo "firefox: $*" >&2; }
die() { say "$*"; exit 1; }
[ -x "$KILN" ] || die "no kiln binary at $KILN"
[ -f "$CLI" ] || die "no profiler-cli at $CLI (scripts/deps.sh test)"
command -v node >/dev/null || die "node not found"
command -v jq >/dev/null || die "jq not found"
mkdir -p "$OUT" || exit 1

gen=$OUT/gen-perfscript
if [ ! -x "$gen" ] || [ "$here/gen-perfscript.c" -nt "$gen" ]; then
    cc -O2 -std=gnu17 -o "$gen" "$here/gen-perfscript.c" -lm || die "cannot build the generator"
fi
text=$OUT/firefox-$SAMPLES-$STACKS-$SEED.perf
if [ ! -s "$text" ]; then
    "$gen" -n "$SAMPLES" -k "$STACKS" -s "$SEED" -o "$text.raw" 2>"$text.info" || die "gen-perfscript failed"
    # Header lines only: frame lines start with a tab.
    sed -E 's/^ +([^ ])/\1/' "$text.raw" >"$text.tmp" && mv "$text.tmp" "$text" && rm -f "$text.raw" ||
        die "cannot write $text"
fi
# The busiest threads: "COMM PID/TID TIME: ..." header lines, COMM may
# hold spaces, so the field before the time.
tids=$(awk '/^[^\t ]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) { split($i, a, "/"); n[a[2]]++; break } }
            END { for (t in n) print n[t], t }' "$text" | sort -rn | head -n "$THREADS" | awk '{ print $2 }')
[ -n "$tids" ] || die "no threads found in $text"

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hwm() { awk '/VmHWM/ { print int($2 / 1024) }' "/proc/$1/status"; }
now() { date +%s.%N; }
ms() { echo "$1 $2" | awk '{ printf "%.0f", ($2 - $1) * 1000 }'; }
tk_ms() { echo $(( ($2 - $1) * 1000 / $(getconf CLK_TCK) )); }
med() { sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT

round() {
    local r=$1 t0 t1 c0 c1 pid url tid h
    # kiln serve
    t0=$(now)
    bench_serve "$KILN" "$text" "$data/serve.out" || die "kiln serve did not read $text"
    t1=$(now)
    pid=$bench_pid
    url=$bench_url
    echo "load kiln $(tk_ms 0 "$(ticks "$pid")") $(ms "$t0" "$t1")" >>"$data/m"
    for tid in $tids; do
        for dir in top-down bottom-up; do
            rev=0; [ $dir = bottom-up ] && rev=1
            c0=$(ticks "$pid"); t0=$(now)
            curl -s -o "$data/k.json" "${url}api/calltree?open=20&reverse=$rev&labels=thread=$tid"
            t1=$(now); c1=$(ticks "$pid")
            echo "$dir kiln $(tk_ms "$c0" "$c1") $(ms "$t0" "$t1") $tid $(jq -r .total "$data/k.json")" >>"$data/m"
        done
    done
    t0=$(now); curl -s -o /dev/null "${url}api/status"; t1=$(now)
    echo "floor kiln 0 $(ms "$t0" "$t1")" >>"$data/m"
    echo "rss kiln $(hwm "$pid")" >>"$data/m"
    kill -INT "$pid"; wait "$pid" 2>/dev/null
    # The Firefox Profiler's daemon (its session files under its HOME).
    h=$data/home$r
    mkdir -p "$h"
    t0=$(now)
    HOME=$h node "$CLI" load "$text" >"$data/ff.out" 2>&1 || { cat "$data/ff.out" >&2; die "profiler-cli load failed"; }
    t1=$(now)
    pid=$(jq -r .pid "$h"/.profiler-cli/*.json | head -1)
    echo "load firefox $(tk_ms 0 "$(ticks "$pid")") $(ms "$t0" "$t1")" >>"$data/m"
    HOME=$h node "$CLI" thread list --json >"$data/threads.json"
    for tid in $tids; do
        handle=$(jq -r --argjson t "$tid" '.threads[] | select(.tid == $t) | .threadHandle' "$data/threads.json" | head -1)
        [ -n "$handle" ] || die "the profiler has no thread $tid"
        HOME=$h node "$CLI" thread select "$handle" >/dev/null
        for dir in top-down bottom-up; do
            c0=$(ticks "$pid"); t0=$(now)
            HOME=$h node "$CLI" thread samples-$dir --include-idle --json --max-lines 100 >"$data/f.json"
            t1=$(now); c1=$(ticks "$pid")
            tot=$(jq -r '(.regularCallTree // .invertedCallTree // .callTree // {}).totalSamples // "?"' "$data/f.json")
            echo "$dir firefox $(tk_ms "$c0" "$c1") $(ms "$t0" "$t1") $tid $tot" >>"$data/m"
        done
    done
    c0=$(ticks "$pid"); t0=$(now)
    HOME=$h node "$CLI" status >/dev/null
    t1=$(now); c1=$(ticks "$pid")
    echo "floor firefox $(tk_ms "$c0" "$c1") $(ms "$t0" "$t1")" >>"$data/m"
    echo "rss firefox $(hwm "$pid")" >>"$data/m"
    HOME=$h node "$CLI" stop --all >/dev/null 2>&1
}

for r in $(seq 1 "$ROUNDS"); do
    say "round $r/$ROUNDS"
    round "$r"
done

col() { awk -v s="$1" -v t="$2" -v c="$3" '$1 == s && $2 == t { print $c }' "$data/m" | med; }
info=$(cat "$text.info" 2>/dev/null)
size=$(stat -c %s "$text")
{
    echo "## kiln serve's call tree against the Firefox Profiler's (issue 26, Speed)"
    echo
    echo "Generated by \`bench/firefox.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kiln $(git -C "$root" rev-parse --short HEAD 2>/dev/null),"
    echo "@firefox-devtools/profiler-cli $(jq -r .version "$(dirname "$(dirname "$CLI")")/package.json"), node $(node --version)."
    echo "Input: ${info#gen-perfscript: } ($size bytes as read; command names at the line's start)."
    echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "Medians of $ROUNDS rounds.  CPU: the serving process's (kiln serve; the profiler-cli daemon,"
    echo "which runs the Firefox Profiler's importer and call tree in node), ms from /proc/PID/stat."
    echo "Wall: ms around each command (curl; the profiler-cli client, a node process of its own whose"
    echo "start is in every Firefox wall time: the floor row is a command that computes nothing)."
    echo
    echo "| step | thread | kiln CPU | kiln wall | Firefox CPU | Firefox wall | CPU ratio |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    kc=$(col load kiln 3); kw=$(col load kiln 4); fc=$(col load firefox 3); fw=$(col load firefox 4)
    echo "| load the text | all | $kc | $kw | $fc | $fw | $(echo "$fc $kc" | awk '{ printf $2 ? "%.1fx" : "-", $1 / $2 }') |"
    echo '| floor (`status`, computes nothing) | - | - | '"$(col floor kiln 4) | $(col floor firefox 3) | $(col floor firefox 4) | - |"
    for tid in $tids; do
        for dir in top-down bottom-up; do
            k=$(awk -v d=$dir -v t="$tid" '$1 == d && $2 == "kiln" && $5 == t' "$data/m")
            f=$(awk -v d=$dir -v t="$tid" '$1 == d && $2 == "firefox" && $5 == t' "$data/m")
            kc=$(echo "$k" | awk '{ print $3 }' | med); kw=$(echo "$k" | awk '{ print $4 }' | med)
            fc=$(echo "$f" | awk '{ print $3 }' | med); fw=$(echo "$f" | awk '{ print $4 }' | med)
            ks=$(echo "$k" | awk 'NR == 1 { print $6 }'); fs=$(echo "$f" | awk 'NR == 1 { print $6 }')
            echo "| $dir call tree (first) | $tid ($fs samples; kiln total $ks ns) | $kc | $kw | $fc | $fw | $(echo "$fc $kc" | awk '{ printf $2 ? "%.1fx" : "(kiln < 1 tick)", $1 / $2 }') |"
        done
    done
    echo
    echo "Peak RSS: kiln serve $(col rss kiln 3) MB, the profiler-cli daemon $(col rss firefox 3) MB."
} | tee "$RESULTS"
