#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/offcpu.sh: the cost of off-CPU and wall recording on a database
# under load (issue 27 item 6).  A PostgreSQL cluster (Debian's, fsync on,
# in a temporary folder, run as user postgres: initdb refuses root) serves
# pgbench's TPC-B-like script with CLIENTS clients for DUR seconds, in
# adjacent rounds of four runs:
#   bare   no recorder
#   perf   perf record -e sched:sched_switch -g -p POSTMASTER (follows the
#          backends it forks; frame-pointer stacks, perf.data written)
#   off    kiln record --off-cpu -p POSTMASTER (kiln's defaults)
#   wall   kiln record --wall -p POSTMASTER (kiln's defaults)
# The order rotates each round.  Reported: pgbench's tps of each run against
# the bare run of its round (medians over ROUNDS), and each recorder's own
# CPU time (user+sys, /usr/bin/time) and max RSS, recorders stopped with
# SIGINT when pgbench ends.  perf's CPU is what it takes to write perf.data;
# kiln's includes symbolizing and writing its profile.
#
# Goal: kiln's tps ratio within 3 points of perf's, kiln's CPU and RSS <=
# perf's.  Prints a markdown section and writes it to RESULTS.
#
# Environment: KILN (build/kiln), PERF (perf), ROUNDS (3), DUR (20), CLIENTS
# (4), SCALE (1: pgbench -i -s), PGBIN (/usr/lib/postgresql/15/bin),
# KILN_ARGS (extra kiln record options), BENCH_OUT (bench/out/offcpu),
# RESULTS (bench/RESULTS-offcpu.md).  Root is needed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
KILN=${KILN:-$root/build/kiln}
PERF=${PERF:-perf}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-20}
CLIENTS=${CLIENTS:-4}
SCALE=${SCALE:-1}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
KILN_ARGS=${KILN_ARGS:-}
OUT=${BENCH_OUT:-$root/bench/out/offcpu}
RESULTS=${RESULTS:-$here/RESULTS-offcpu.md}
case $KILN in /*) ;; *) KILN=$PWD/$KILN ;; esac
. "$here/lib.sh"

say() { echo "offcpu: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (sched_switch and -p of postgres)"
[ -x "$KILN" ] || die "no kiln binary at $KILN (build it first, or set KILN)"
command -v "$PERF" >/dev/null 2>&1 || die "no perf ($PERF) in PATH"
command -v pgbench >/dev/null 2>&1 || die "no pgbench (Debian postgresql-client)"
[ -x "$PGBIN/initdb" ] || die "no initdb under '$PGBIN' (Debian postgresql)"
[ -x /usr/bin/time ] || die "no /usr/bin/time (Debian package time)"
id postgres >/dev/null 2>&1 || die "no user postgres"
mkdir -p "$OUT" || exit 1
rm -f "$OUT"/*.runs "$OUT"/*.time "$OUT"/*.pgb "$OUT"/*.data "$OUT"/*.pb.gz
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD -- src 2>/dev/null || echo ' (with uncommitted changes)')"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

pg=$(mktemp -d /tmp/kiln-offcpu-pg.XXXXXX) || exit 1
chown postgres: "$pg"
as_pg() { runuser -u postgres -- "$@"; }
port=$(( 20000 + RANDOM % 20000 ))
stop_pg() {
    as_pg "$PGBIN/pg_ctl" -D "$pg/data" -m fast stop >/dev/null 2>&1
    rm -rf "$pg"
}
trap stop_pg EXIT
as_pg "$PGBIN/initdb" -D "$pg/data" -A trust >"$OUT/initdb.log" 2>&1 ||
    die "initdb failed (see $OUT/initdb.log)"
as_pg "$PGBIN/pg_ctl" -D "$pg/data" -l "$pg/log" -w \
    -o "-k $pg -p $port -c listen_addresses=''" start >/dev/null ||
    die "postgres did not start ($(tail -3 "$pg/log"))"
postmaster=$(head -1 "$pg/data/postmaster.pid")
pgb() { as_pg pgbench -h "$pg" -p "$port" "$@" postgres; }
pgb -i -q -s "$SCALE" >"$OUT/init.log" 2>&1 || die "pgbench -i failed"

# run NAME ROUND: one pgbench run under recorder NAME; appends
# "NAME ROUND TPS CPU_S RSS_KB" to $OUT/all.runs.
run() {
    local name=$1 r=$2 tpid= rec= tps cpu=0 rss=0 i
    local tf=$OUT/$name.$r.time
    case $name in
    bare) ;;
    perf) /usr/bin/time -f '%U %S %M' -o "$tf" "$PERF" record -q \
              -e sched:sched_switch -g -p "$postmaster" -o "$OUT/$name.$r.data" \
              >/dev/null 2>"$OUT/$name.$r.err" & tpid=$! ;;
    off)  /usr/bin/time -f '%U %S %M' -o "$tf" "$KILN" record -q --off-cpu \
              $KILN_ARGS -p "$postmaster" -o "$OUT/$name.$r.pb.gz" \
              >/dev/null 2>"$OUT/$name.$r.err" & tpid=$! ;;
    wall) /usr/bin/time -f '%U %S %M' -o "$tf" "$KILN" record -q --wall \
              $KILN_ARGS -p "$postmaster" -o "$OUT/$name.$r.pb.gz" \
              >/dev/null 2>"$OUT/$name.$r.err" & tpid=$! ;;
    esac
    if [ -n "$tpid" ]; then
        # The recorder is time's child; give it a moment to attach (its
        # events are open once it has opened the rings: no readiness
        # signal is needed for a 20 s run, a late attach only shortens it).
        for i in $(seq 50); do
            rec=$(pgrep -P "$tpid" | head -1)
            [ -n "$rec" ] && break
            sleep 0.1
        done
        sleep 1
    fi
    pgb -c "$CLIENTS" -j 2 -T "$DUR" >"$OUT/$name.$r.pgb" 2>&1 ||
        say "pgbench failed in $name round $r"
    if [ -n "$tpid" ]; then
        [ -n "$rec" ] && kill -INT "$rec" 2>/dev/null
        # perf record exits 130 after SIGINT: judged by its output.
        wait "$tpid" || [ -s "$OUT/$name.$r.data" ] ||
            say "$name failed in round $r: $(tail -2 "$OUT/$name.$r.err")"
        read -r u s rss < <(tail -1 "$tf")
        cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    fi
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$OUT/$name.$r.pgb" | head -1)
    echo "$name $r ${tps:-0} $cpu $rss" >>"$OUT/all.runs"
    say "round $r $name: tps ${tps:-?} cpu ${cpu}s rss ${rss}KB"
}

names=(bare perf off wall)
for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < 4; k++)); do
        run "${names[(k + r - 1) % 4]}" "$r"
    done
done

# Per-round ratios to the round's bare run.
# Recorder CPU per 1000 transactions (the runs' tps differ with the load).
awk -v d="$DUR" '$3 > 0 { print $1, $4 * 1000 * 1000 / ($3 * d) }' \
    "$OUT/all.runs" >"$OUT/cpuktx.runs"
awk '$1 == "bare" { b[$2] = $3 } { t[$1, $2] = $3 }
     END { for (k in t) { split(k, a, SUBSEP);
           if (b[a[2]] > 0) print a[1], t[k] / b[a[2]] } }' \
    "$OUT/all.runs" >"$OUT/ratio.runs"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
row() {
    printf '| %s | %.0f | %.2f | %s | %.1f | %s |\n' "$1" "$(bench_med "$OUT/all.runs" "$1" 3)" \
        "$(bench_med "$OUT/ratio.runs" "$1" 2)" \
        "$(bench_med "$OUT/all.runs" "$1" 4)" \
        "$(bench_med "$OUT/cpuktx.runs" "$1" 2)" \
        "$(awk -v k="$(bench_med "$OUT/all.runs" "$1" 5)" 'BEGIN { printf "%.0f", k / 1024 }')"
}
{
    echo "## kiln record --off-cpu / --wall on PostgreSQL under pgbench"
    echo
    echo "$(date -u +%Y-%m-%d), kiln $commit, $(nproc) CPUs, $(uname -r)," \
         "postgres $("$PGBIN/postgres" --version | awk '{ print $3 }')," \
         "pgbench -c $CLIENTS -j 2 -T $DUR, scale $SCALE, $ROUNDS rounds of" \
         "adjacent runs (order rotating), load average $load_start at the" \
         "start, $load_end at the end: the machine is shared, medians."
    echo "kiln options: --off-cpu / --wall ${KILN_ARGS:-(defaults)} -p POSTMASTER;" \
         "perf: record -e sched:sched_switch -g -p POSTMASTER."
    echo
    echo "| recorder | tps (median) | tps / bare (median of rounds) | recorder CPU s | CPU ms / 1000 tx | max RSS MB |"
    echo "|---|---|---|---|---|---|"
    row bare; row perf; row off; row wall
    echo
    echo "Every run (name round tps cpu_s rss_kb):"
    echo
    echo '```'
    cat "$OUT/all.runs"
    echo '```'
} | tee "$RESULTS.new"
mv "$RESULTS.new" "$RESULTS"
