#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/heaptrace.sh: the cost of full heap tracing (issue 27 item 1, goal:
# traced / bare <= 2.0x on bench/mallocloop.c, heaptrack in the same run),
# measured two ways that hold on a loaded machine, before and after a
# change to the hooks:
#
#   1. perf stat -r REPS CPU time (task-clock: every thread of the process,
#      the writer included) and wall time (duration_time), in adjacent
#      groups: each round runs bare, kiln BEFORE, kiln AFTER and heaptrack
#      back to back (the order turning each round), so that the load of
#      the moment weighs on all of them; the ratios are per round (against
#      the bare run of the same round), and their medians are reported.
#   2. callgrind instruction counts of the whole process (one thread, a
#      short run: valgrind serializes threads), which the load does not
#      change at all, and the heaviest functions of AFTER.
#
# BEFORE and AFTER are directories holding libkiln.so and
# libkiln-malloc.so (AFTER defaults to build/, BEFORE to AFTER: set it to
# a copy of an older build).  BEFORE_ENV and AFTER_ENV: more variables
# for each (e.g. BEFORE_ENV=KILN_HEAP_CLOCK=monotonic: one build, two
# settings).  Environment: ROUNDS (5), REPS (3), THREADS
# (2), OPS (2000000), CG_OPS (100000), HEAPTRACK (heaptrack, skipped when
# missing), OUT (bench/out/heaptrace), RESULTS (bench/RESULTS-heaptrace.md).
# Prints the markdown section and writes it to RESULTS.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
AFTER=${AFTER:-$root/build}
BEFORE=${BEFORE:-$AFTER}
BEFORE_ENV=${BEFORE_ENV:-}
AFTER_ENV=${AFTER_ENV:-}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
OPS=${OPS:-2000000}
CG_OPS=${CG_OPS:-100000}
HEAPTRACK=${HEAPTRACK:-heaptrack}
OUT=${OUT:-$root/bench/out/heaptrace}
RESULTS=${RESULTS:-$here/RESULTS-heaptrace.md}

die() { echo "heaptrace-bench: $*" >&2; exit 1; }
for d in "$BEFORE" "$AFTER"; do
    [ -f "$d/libkiln.so" ] && [ -f "$d/libkiln-malloc.so" ] ||
        die "no libkiln.so and libkiln-malloc.so in '$d'"
done
command -v perf >/dev/null || die "perf is needed (Debian linux-perf)"
mkdir -p "$OUT" || exit 1
bin=$OUT/mallocloop
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$bin" "$here/mallocloop.c" ||
    die "cannot build mallocloop"
have_ht=0
command -v "$HEAPTRACK" >/dev/null && have_ht=1

configs=(bare before after)
[ "$have_ht" = 1 ] && configs+=(heaptrack)

# run_cfg CONFIG: the command line of one configuration (in cmd[]).
run_cfg() {
    local lib extra
    case $1 in
    bare) cmd=(env "$bin" "$THREADS" "$OPS") ;;
    before | after)
        [ "$1" = before ] && lib=$BEFORE extra=$BEFORE_ENV || lib=$AFTER extra=$AFTER_ENV
        # shellcheck disable=SC2206
        cmd=(env "LD_PRELOAD=$lib/libkiln-malloc.so $lib/libkiln.so" $extra
             "KILN_HEAP_TRACE=$OUT/$1.trace" "$bin" "$THREADS" "$OPS") ;;
    heaptrack) cmd=("$HEAPTRACK" -o "$OUT/ht" "$bin" "$THREADS" "$OPS") ;;
    esac
}

# perf stat -r REPS of one configuration: "cpu_ms wall_ms".
measure() {
    local csv=$OUT/$1.csv cpu wall
    run_cfg "$1"
    rm -f "$OUT"/*.trace* "$OUT"/ht*
    perf stat -x, -r "$REPS" -e task-clock,duration_time -o "$csv" \
        "${cmd[@]}" >/dev/null 2>"$OUT/$1.err" || die "$1 failed (see $OUT/$1.err)"
    cpu=$(awk -F, '$3 ~ /^task-clock/ { print $1 }' "$csv")
    wall=$(awk -F, '$3 ~ /^duration_time/ { printf "%.3f", $1 / 1e6 }' "$csv")
    echo "$cpu $wall"
}

declare -A cpu wall
for ((r = 0; r < ROUNDS; r++)); do
    n=${#configs[@]}
    for ((k = 0; k < n; k++)); do
        c=${configs[$(((k + r) % n))]}
        read -r cpu[$c,$r] wall[$c,$r] < <(measure "$c")
        echo "heaptrace-bench: round $r $c: cpu ${cpu[$c,$r]} ms, wall ${wall[$c,$r]} ms" >&2
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratios() {	# ratios CONFIG cpu|wall: per-round ratios against bare
    local c=$1 what=$2 r
    for ((r = 0; r < ROUNDS; r++)); do
        if [ "$what" = cpu ]; then
            awk -v a="${cpu[$c,$r]}" -v b="${cpu[bare,$r]}" 'BEGIN { printf "%.4f\n", a / b }'
        else
            awk -v a="${wall[$c,$r]}" -v b="${wall[bare,$r]}" 'BEGIN { printf "%.4f\n", a / b }'
        fi
    done
}

# callgrind: instruction counts (one thread); heaptrack not.
cg() {
    local c=$1 f=$OUT/cg.$1.out pre=()
    case $c in
    # shellcheck disable=SC2206
    before) pre=(env "LD_PRELOAD=$BEFORE/libkiln-malloc.so $BEFORE/libkiln.so" $BEFORE_ENV
                 "KILN_HEAP_TRACE=$OUT/cg.trace") ;;
    # shellcheck disable=SC2206
    after) pre=(env "LD_PRELOAD=$AFTER/libkiln-malloc.so $AFTER/libkiln.so" $AFTER_ENV
                "KILN_HEAP_TRACE=$OUT/cg.trace") ;;
    esac
    rm -f "$OUT"/cg.trace*
    "${pre[@]}" valgrind --tool=callgrind --callgrind-out-file="$f" \
        "$bin" 1 "$CG_OPS" >/dev/null 2>"$OUT/cg.$c.err" || { echo "-"; return; }
    awk '/^summary:/ { print $2 }' "$f"
}
have_cg=0
command -v valgrind >/dev/null && have_cg=1
declare -A ir
if [ "$have_cg" = 1 ]; then
    for c in bare before after; do ir[$c]=$(cg "$c"); done
fi

{
    echo "## Full heap tracing: cost of the hooks (bench/heaptrace.sh)"
    echo
    echo "Generated on $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs, load average" \
         "$(cut -d' ' -f1-3 /proc/loadavg) at the end; \`bench/mallocloop.c\`" \
         "$THREADS threads x $OPS ops (gcc -O2 -g -fno-omit-frame-pointer)."
    echo "before: \`$BEFORE\` ${BEFORE_ENV:+(\`$BEFORE_ENV\`)}; after: \`$AFTER\` ${AFTER_ENV:+(\`$AFTER_ENV\`)}."
    echo "$ROUNDS rounds; each runs every configuration under \`perf stat -r $REPS\`," \
         "back to back, in a turning order; ratios per round against that round's bare" \
         "run, medians over the rounds.  CPU = task-clock of every thread (kiln's writer" \
         "included)."
    echo
    echo "| configuration | CPU (ms), median | CPU / bare, median | per round | wall (ms), median | wall / bare, median |"
    echo "|---|---:|---:|---|---:|---:|"
    for c in "${configs[@]}"; do
        mc=$(for ((r = 0; r < ROUNDS; r++)); do echo "${cpu[$c,$r]}"; done | median)
        mw=$(for ((r = 0; r < ROUNDS; r++)); do echo "${wall[$c,$r]}"; done | median)
        if [ "$c" = bare ]; then
            echo "| bare | $mc | - | - | $mw | - |"
        else
            rc=$(ratios "$c" cpu | median)
            rw=$(ratios "$c" wall | median)
            pr=$(ratios "$c" cpu | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 }')
            echo "| $c | $mc | ${rc}x | $pr | $mw | ${rw}x |"
        fi
    done
    if [ "$have_cg" = 1 ]; then
        echo
        echo "Instructions (callgrind, whole process, 1 thread x $CG_OPS ops):"
        echo
        echo "| configuration | instructions | / bare |"
        echo "|---|---:|---:|"
        for c in bare before after; do
            echo "| $c | ${ir[$c]} | $(awk -v a="${ir[$c]}" -v b="${ir[bare]}" 'BEGIN { if (a + 0 && b + 0) printf "%.2fx", a / b; else print "-" }') |"
        done
        if [ -f "$OUT/cg.after.out" ]; then
            echo
            echo "Heaviest functions of after (self instructions):"
            echo
            echo '```'
            callgrind_annotate "$OUT/cg.after.out" 2>/dev/null |
                awk '/file:function/ { on = 1; getline; next } on && NF { print } on && !NF && n++ > 0 { exit }' |
                head -16 | sed 's|/[^ ]*/src/|src/|; s| \[[^]]*\]||'
            echo '```'
        fi
    fi
} | tee "$RESULTS"
