#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/report.sh: turns bench/run.sh's results.tsv into bench/RESULTS.md.
# usage: report.sh RESULTS.TSV OUTDIR RESULTS.MD KILN TEXT
# results.tsv columns: name, status (ok|failed|skipped), median wall
# seconds, median peak RSS KiB, input bytes, run times (ok) or the reason,
# median CPU (user + system) seconds.
set -u
res=$1 out=$2 md=$3 kiln=$4 text=$5
root=$(cd "$(dirname "$0")/.." && pwd)

# field NAME COLUMN: a column of a result line ("" when absent).
field() { awk -F'\t' -v n="$1" -v c="$2" '$1==n {print $c; exit}' "$res"; }
status() { field "$1" 2; }
secs() { field "$1" 3; }
rss() { field "$1" 4; }
bytes() { field "$1" 5; }
info() { field "$1" 6; }
cpu() { field "$1" 7; }
ok() { [ "$(status "$1")" = ok ]; }

fmt_s() { awk -v s="$1" 'BEGIN { if (s < 1) printf "%.0f ms", s*1000; else printf "%.2f s", s }'; }
fmt_mb() { awk -v k="$1" 'BEGIN { printf "%.0f MB", k/1024 }'; }
# cell NAME: "1.23 s (CPU 1.20 s)" or "failed (why)" or "not run: why"
cell() {
    case $(status "$1") in
    ok) echo "$(fmt_s "$(secs "$1")") (CPU $(fmt_s "$(cpu "$1")"))" ;;
    failed) echo "**failed** ($(info "$1"))" ;;
    skipped) echo "not run: $(info "$1")" ;;
    *) echo "not run" ;;
    esac
}
rss_cell() { ok "$1" && fmt_mb "$(rss "$1")" || echo "–"; }
# MB/s of input by wall time, and by CPU time
mbs_num() { ok "$1" && awk -v b="$(bytes "$1")" -v s="$(secs "$1")" 'BEGIN { printf "%.0f", b/1e6/s }'; }
mbs_cpu_num() { ok "$1" && awk -v b="$(bytes "$1")" -v s="$(cpu "$1")" 'BEGIN { if (s > 0) printf "%.0f", b/1e6/s }'; }
mbs() { ok "$1" && echo "$(mbs_num "$1") (CPU: $(mbs_cpu_num "$1"))" || echo "–"; }
# ratio_num OTHER KILN [COL]: how many times faster kiln is (wall, or CPU).
ratio_num() {
    local col=${3:-3}
    if ok "$1" && ok "$2"; then
        awk -v a="$(field "$1" "$col")" -v b="$(field "$2" "$col")" 'BEGIN { if (b > 0) printf "%.1f", a/b }'
    fi
}
ratio() {
    local w c
    w=$(ratio_num "$1" "$2") c=$(ratio_num "$1" "$2" 7)
    [ -n "$w" ] && echo "${w}× (CPU: ${c:-?}×)" || echo "–"
}
# first table row's name in a pprof-style top table
top_name() {
    [ -s "$1" ] || return 0
    awk '/flat%/ {hdr=1; next} hdr && NF >= 6 { for (i = 1; i <= 5; i++) $i = ""; sub(/^ +/, ""); print; exit }' "$1"
}
distinct() { sed -n 's/.* \([0-9]*\) distinct stacks.*/\1/p' "$out/$1.info" 2>/dev/null; }

runs=$(awk -F'\t' '$2=="ok" {print split($6, a, " "); exit}' "$res")
gen_info=$(sed 's/^gen-perfscript: //' "$text.info" 2>/dev/null)
text_mb=$(awk -v b="$(stat -c %s "$text" 2>/dev/null || echo 0)" 'BEGIN { printf "%.1f", b/1e6 }')
pb_mb=$(awk -v b="$(bytes kiln-top-pprof)" 'BEGIN { if (b) printf "%.1f MB", b/1e6; else print "–" }')
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD -- src 2>/dev/null || rev="$rev + uncommitted changes"

{
cat <<EOF
# kiln offline tools: speed benchmark results

Written by \`bench/run.sh\` (\`make bench\`); bench/README.md says what each
row measures.  Times are the **median of ${runs:-?} runs** of wall-clock
time, with the median CPU time (user + system) beside it; peak RSS is
\`/usr/bin/time -v\`'s "Maximum resident set size" (median of the runs).
kiln runs pinned to one core (\`taskset -c 0\`); go tool pprof runs unpinned
(it is multi-threaded), so the wall-clock ratios are conservative for kiln.

## Machine

| | |
|---|---|
| date | $(date -u '+%Y-%m-%d %H:%M UTC') |
| nproc | $(nproc) |
| CPU | $(lscpu 2>/dev/null | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}') |
| memory | $(free -g | awk '/^Mem:/ {print $2 " GiB"}') |
| kernel | $(uname -r) |
| load average at the start / end | ${BENCH_LOAD_START:-?} / $(cut -d' ' -f1-3 /proc/loadavg) |
| kiln | $kiln ($rev) |
| go tool pprof | $(go version 2>/dev/null | cut -d' ' -f3 || echo "not installed") |
| graphviz | $(dot -V 2>&1 | sed 's/.*version \([0-9.]*\).*/\1/' || echo "not installed") |

The machine is shared with other jobs (compilers and test suites of
parallel work), so wall-clock numbers are noisy: a run pinned to core 0
waits whenever another job runs there.  The ratios are taken in the same
run; the CPU-time figures show what the work costs without the waiting.

## Input

\`bench/gen-perfscript\` (seed ${SEED:-1}): $gen_info, written as
\`perf script -F +pid\` text (${text_mb} MB).  \`kiln convert\` turned it into
the pprof file given to both \`kiln top\`/\`kiln flame\` and \`go tool pprof\`
($pb_mb).

## Results

| task | kiln | other tool | kiln faster by (wall) | kiln MB/s of input | kiln peak RSS | other peak RSS |
|---|---|---|---|---|---|---|
| perf script text → flame graph SVG | \`kiln flame TEXT\`: $(cell kiln-flame-text) | FlameGraph \`stackcollapse-perf.pl \| flamegraph.pl\`: $(cell flamegraph-pl-text) | $(ratio flamegraph-pl-text kiln-flame-text) | $(mbs kiln-flame-text) | $(rss_cell kiln-flame-text) | $(rss_cell flamegraph-pl-text) |
| text → SVG (kiln) vs pprof → SVG (go) | \`kiln flame TEXT\`: $(cell kiln-flame-text) | \`go tool pprof -svg PB\`: $(cell pprof-svg-pprof) | $(ratio pprof-svg-pprof kiln-flame-text) | $(mbs kiln-flame-text) | $(rss_cell kiln-flame-text) | $(rss_cell pprof-svg-pprof) |
| pprof → SVG (same file) | \`kiln flame PB\`: $(cell kiln-flame-pprof) | \`go tool pprof -svg PB\`: $(cell pprof-svg-pprof) | $(ratio pprof-svg-pprof kiln-flame-pprof) | – | $(rss_cell kiln-flame-pprof) | $(rss_cell pprof-svg-pprof) |
| pprof → top table (same file) | \`kiln top PB\`: $(cell kiln-top-pprof) | \`go tool pprof -top PB\`: $(cell pprof-top-pprof) | $(ratio pprof-top-pprof kiln-top-pprof) | – | $(rss_cell kiln-top-pprof) | $(rss_cell pprof-top-pprof) |
| perf script text → pprof | \`kiln convert TEXT\`: $(cell kiln-convert-text) | (no other tool reads perf script text into pprof) | – | $(mbs kiln-convert-text) | $(rss_cell kiln-convert-text) | – |

Notes: \`go tool pprof\` cannot read perf script text, so its SVG rows start
from the pprof file kiln wrote (which favours go); its SVG is a call graph
laid out by graphviz, kiln's a flame graph.  Both top tables use each tool's
default row count.  go runs as the pprof binary that \`go tool pprof\` execs
(\`go tool -n pprof\`), so the go command's own start-up is not counted;
its CPU time includes its garbage collector's threads and graphviz.
EOF

kt=$(top_name "$out/kiln-top.txt") pt=$(top_name "$out/pprof-top.txt")
if [ -n "$kt$pt" ]; then
    echo
    if [ "$kt" = "$pt" ]; then
        echo "Check: both top tables start with \`$kt\`."
    else
        echo "Check: the top tables **differ** in their first row: kiln \`$kt\`, go tool pprof \`$pt\`."
    fi
fi

cat <<EOF

## Memory against distinct stacks

Same generator, same seed: a quarter of the samples over the same stack set,
and the full sample count over 4× as many candidate stacks.  kiln maps its
input file, and the file pages it has read count in "Maximum resident set
size" (they are page cache, which the kernel drops under pressure), so that
column follows the input size.  The last columns are the process's own
memory: the peak of \`RssAnon\` in /proc/PID/status, polled every 20 ms
during one more run.

| input | samples, distinct stacks | size | \`kiln flame\` time | MB/s | peak RSS | peak RssAnon | RssAnon per distinct stack |
|---|---|---|---|---|---|---|---|
EOF
for row in "kiln-flame-quarter:text-quarter.perf" "kiln-flame-text:text.perf" "kiln-flame-4xstacks:text-4xstacks.perf"; do
    n=${row%%:*} f=${row#*:}
    [ -f "$out/$f.info" ] || continue
    gi=$(sed 's/^gen-perfscript: //; s/, [0-9]* functions.*//; s/ (of [0-9]*)//' "$out/$f.info")
    sz=$(awk -v b="$(stat -c %s "$out/$f")" 'BEGIN { printf "%.0f MB", b/1e6 }')
    per="–"
    ok "$n-anon" && per=$(awk -v k="$(rss "$n-anon")" -v d="$(distinct "$f")" 'BEGIN { printf "%.2f KiB", k/d }')
    echo "| $f | $gi | $sz | $(cell "$n") | $(mbs "$n") | $(rss_cell "$n") | $(rss_cell "$n-anon") | $per |"
done

cat <<EOF

## Goals (foundation issue, "Speed")

| goal | measured | |
|---|---|---|
EOF
# verdict VALUE GOAL [CPU_VALUE]
verdict() {
    awk -v v="$1" -v g="$2" -v c="${3:-}" 'BEGIN {
        if (v == "") print "not measured";
        else if (v + 0 >= g) print "**met**";
        else if (c != "" && c + 0 >= g) print "**not met** by wall time, met by CPU time (loaded machine: run again when idle)";
        else print "**not met**" }'
}
r1=$(ratio_num pprof-top-pprof kiln-top-pprof) r1c=$(ratio_num pprof-top-pprof kiln-top-pprof 7)
r2=$(ratio_num pprof-svg-pprof kiln-flame-pprof) r2c=$(ratio_num pprof-svg-pprof kiln-flame-pprof 7)
mb=$(mbs_num kiln-flame-text) mbc=$(mbs_cpu_num kiln-flame-text)
echo "| ≥ 10× faster than \`go tool pprof -top\` (same pprof file) | ${r1:+$r1× wall, }${r1c:-–}${r1c:+× CPU} | $(verdict "$r1" 10 "$r1c") |"
echo "| ≥ 10× faster than \`go tool pprof -svg\` (same pprof file) | ${r2:+$r2× wall, }${r2c:-–}${r2c:+× CPU} | $(verdict "$r2" 10 "$r2c") |"
echo "| ≥ 200 MB/s of perf script text into a flame graph, one core | ${mb:+$mb MB/s wall, }${mbc:-–}${mbc:+ MB/s CPU} | $(verdict "$mb" 200 "$mbc") |"
if ok kiln-flame-quarter-anon && ok kiln-flame-text-anon; then
    dq=$(distinct text-quarter.perf) dt=$(distinct text.perf)
    g=$(awk -v a="$(rss kiln-flame-text-anon)" -v b="$(rss kiln-flame-quarter-anon)" 'BEGIN { printf "%.2f", a/b }')
    gd=$(awk -v a="$dt" -v b="$dq" 'BEGIN { printf "%.2f", a/b }')
    gr=$(awk -v a="$(rss kiln-flame-text)" -v b="$(rss kiln-flame-quarter)" 'BEGIN { printf "%.2f", a/b }')
    v=$(awk -v g="$g" -v d="$gd" 'BEGIN { print (g <= 1.5 * d ? "**met** for kiln'"'"'s own memory (RssAnon); peak RSS follows the mapped input" : "**not met** (memory grows faster than distinct stacks)") }')
    echo "| memory proportional to distinct stacks | 4× the input, ${gd}× the distinct stacks: RssAnon ×$g, peak RSS ×$gr | $v |"
else
    echo "| memory proportional to distinct stacks | – | not measured |"
fi

cat <<EOF

## All steps

| step | status | median wall | median CPU | runs, wall (s) | peak RSS | input |
|---|---|---|---|---|---|---|
EOF
awk -F'\t' '{
    if ($2 == "ok" && $5 != "")
        printf "| %s | ok | %.3f s | %.2f s | %s | %.0f MB | %.1f MB |\n", $1, $3, $7, $6, $4/1024, $5/1e6
    else if ($2 == "ok")
        printf "| %s | ok | – | – | one polled run | %.0f MB (RssAnon) | – |\n", $1, $4/1024
    else
        printf "| %s | %s | – | – | %s | – | – |\n", $1, $2, $6
}' "$res"
} >"$md.tmp.$$" && mv "$md.tmp.$$" "$md"
