#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/legacy.sh: reading a legacy text heap profile, `kiln top` against
# `go tool pprof -top` on the same file (issue 24, "Speed": the legacy
# text formats read at least 10x faster than go tool pprof -top on a 100 MB
# generated heap profile).  Prints a markdown section on stdout and writes
# it to bench/RESULTS-legacy.md.
#
# The input is a tcmalloc heap profile (`heap profile: ... @ heap_v2/524288`,
# so both tools unsample every record) made by a seeded generator below:
# records of 4-16 return addresses drawn from 3000 function addresses of
# one mapped binary that does not exist here, so that neither tool finds a
# file to symbolize with (pprof runs with -symbolize=none, kiln with
# --no-local-symbols: both print addresses).  The runs alternate (kiln,
# pprof, kiln, ...) RUNS times each; medians, with user+system CPU time.
#
# Environment: KILN (default build/kiln), RUNS (3), MB (100), SEED (1),
# BENCH_OUT (bench/out), RESULTS (bench/RESULTS-legacy.md).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
RUNS=${RUNS:-3}
MB=${MB:-100}
SEED=${SEED:-1}
OUT=${BENCH_OUT:-$here/out}
RESULTS=${RESULTS:-$here/RESULTS-legacy.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac

. "$here/lib.sh"
say() { echo "legacy-bench: $*" >&2; }
die() { say "$*"; exit 1; }

[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time, Debian time) is needed"
gopprof=$(bench_gopprof)
[ -n "$gopprof" ] || die "go tool pprof not found (Debian golang-go)"
command -v python3 >/dev/null 2>&1 || die "python3 is needed for the generator"
mkdir -p "$OUT" || exit 1

in=$OUT/legacy-$MB.heap
if [ ! -s "$in" ]; then
    say "generating $MB MB of tcmalloc heap profile into $in"
    python3 - "$in" "$MB" "$SEED" <<'PY' || die "the generator failed"
import random, sys
path, mb, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
funcs = ["0x%x" % (0x400000 + 0x40 * i + rnd.randrange(0x30)) for i in range(3000)]
stacks = [" ".join(rnd.choice(funcs) for _ in range(rnd.randint(4, 16)))
          for _ in range(20000)]
lines, size, tin, tbin, tal, tbal = [], 0, 0, 0, 0, 0
while size < mb * 1000000:
    alloc = rnd.randint(1, 50)
    inuse = rnd.randint(0, alloc)
    sz = rnd.choice((16, 32, 64, 128, 1024, 4096, 65536))
    l = "%6d: %8d [%6d: %8d] @ %s\n" % (inuse, inuse * sz, alloc, alloc * sz, rnd.choice(stacks))
    lines.append(l)
    size += len(l)
    tin += inuse; tbin += inuse * sz; tal += alloc; tbal += alloc * sz
with open(path, "w") as f:
    f.write("heap profile: %6d: %8d [%6d: %8d] @ heap_v2/524288\n" % (tin, tbin, tal, tbal))
    f.writelines(lines)
    f.write("\nMAPPED_LIBRARIES:\n00400000-00500000 r-xp 00000000 08:01 1234 /nonexistent/kiln-bench-server\n")
PY
fi
in_bytes=$(stat -c %s "$in")
cat "$in" >/dev/null

GOTMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-legacy-go.XXXXXX") || exit 1
trap 'rm -rf "$GOTMP"' EXIT
mkdir -p "$GOTMP/home" "$GOTMP/pprof"
export PPROF_TMPDIR=$GOTMP/pprof

# run NAME CMD...: one timed run; appends "NAME wall_s rss_kib cpu_s".
run() {
    local name=$1 t0 t1 rc
    shift
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$OUT/legacy-time.txt" "$@" >"$OUT/legacy-$name.txt" 2>"$OUT/legacy-stderr.txt"
    rc=$?
    t1=$(date +%s%N)
    if [ "$rc" -ne 0 ] || ! grep -q 'flat%' "$OUT/legacy-$name.txt"; then
        say "$name failed (exit $rc): $(head -c 300 "$OUT/legacy-stderr.txt")"
        return 1
    fi
    printf '%s %s %s %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" \
        "$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/legacy-time.txt")" \
        "$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$OUT/legacy-time.txt")" \
        >>"$OUT/legacy-runs.txt"
    say "$(tail -1 "$OUT/legacy-runs.txt")"
}

: >"$OUT/legacy-runs.txt"
failed=0
for ((i = 0; i < RUNS; i++)); do
    run kiln "$KILN" top -q --no-local-symbols --sample-type inuse_space -n 10 "$in" || failed=1
    run pprof env HOME="$GOTMP/home" "$gopprof" -top -symbolize=none \
        -sample_index=inuse_space -nodecount=10 "$in" || failed=1
done
[ "$failed" = 0 ] || die "a run failed (see above)"

med() { bench_med "$OUT/legacy-runs.txt" "$1" "$2"; }
kw=$(med kiln 2) kr=$(med kiln 3) kc=$(med kiln 4)
pw=$(med pprof 2) pr=$(med pprof 3) pc=$(med pprof 4)
speed=$(bench_ratio "$pw" "$kw") cpu=$(bench_ratio "$pc" "$kc") mem=$(bench_ratio "$pr" "$kr")
# Both totals, as each prints them: they must agree.
ktot=$(grep -o 'of [^ ]* total' "$OUT/legacy-kiln.txt" | head -1)
ptot=$(grep -o 'of [^ ]* total' "$OUT/legacy-pprof.txt" | head -1)

{
    echo "## Legacy text heap profile: kiln top against go tool pprof -top"
    echo
    echo "Input: a generated tcmalloc heap profile (heap_v2/524288, unsampled by"
    echo "both), $in_bytes bytes, seed $SEED (bench/legacy.sh). Totals of inuse_space:"
    echo "kiln \`$ktot\`, pprof \`$ptot\`."
    echo "$RUNS runs each, alternating; medians. $(date -u '+%Y-%m-%d %H:%M UTC'),"
    echo "kiln $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'),"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs."
    echo
    echo "| tool | wall s | CPU s (user+sys) | peak RSS MiB |"
    echo "|---|---|---|---|"
    echo "| \`kiln top --no-local-symbols\` | $kw | $kc | $(awk -v k="$kr" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo "| \`go tool pprof -top -symbolize=none\` | $pw | $pc | $(awk -v k="$pr" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo
    echo "| measure | ratio (pprof / kiln) | goal | |"
    echo "|---|---|---|---|"
    echo "| wall time | ${speed}x | >= 10x | $(bench_goal "$speed" 10) |"
    echo "| CPU time | ${cpu}x | | |"
    echo "| peak RSS | ${mem}x | | |"
    echo
    echo "Runs (tool, wall s, peak RSS KiB, CPU s):"
    echo
    sed 's/^/    /' "$OUT/legacy-runs.txt"
} >"$OUT/legacy-results.md"
cp "$OUT/legacy-results.md" "$RESULTS" || failed=1
cat "$OUT/legacy-results.md"
exit "$failed"
