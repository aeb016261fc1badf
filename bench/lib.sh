# SPDX-License-Identifier: Apache-2.0
# bench/lib.sh: what the benchmarks share (sourced; bash).  Runs files hold
# one run a line, "NAME VALUE..." separated by blanks.
#
# bench_med FILE NAME COLUMN: the median (the lower middle of an even
#   count) of COLUMN over FILE's lines whose first field is NAME.
# bench_ratio A B: A / B to one decimal, 0 when B is not positive.
# bench_goal VALUE GOAL: "met" when VALUE >= GOAL, else "**missed**".
# bench_gopprof: the path of go tool pprof's binary, or nothing.
# bench_serve KILN INPUT LOG: starts `KILN serve` of INPUT on a free
#   loopback port (its output to LOG), waits until it has read INPUT;
#   sets bench_pid and bench_url.  Non-zero when it did not read INPUT.

bench_med() {
    awk -v n="$2" -v c="$3" '$1 == n { print $c }' "$1" | sort -g |
        awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }
bench_goal() { awk -v v="$1" -v g="$2" 'BEGIN { print (v >= g ? "met" : "**missed**") }'; }
bench_gopprof() {
    local p=
    if command -v go >/dev/null 2>&1; then
        p=$(go tool -n pprof 2>/dev/null) || p=
    fi
    [ -n "$p" ] && [ -x "$p" ] && echo "$p"
}

bench_serve() {
    local port=$((20000 + RANDOM % 20000))
    "$1" serve -q --http "127.0.0.1:$port" "$2" >"$3" 2>&1 &
    bench_pid=$!
    bench_url=http://127.0.0.1:$port/
    for _ in $(seq 1 600); do
        curl -s -o /dev/null "${bench_url}api/status" && break
        sleep 0.05
    done
    curl -s --max-time 900 -o /dev/null "${bench_url}api/profiles"
}
