# SPDX-License-Identifier: Apache-2.0
# bench/lib.sh: what the benchmarks share (sourced; bash).  Runs files hold
# one run a line, "NAME VALUE..." separated by blanks.
#
# bench_med FILE NAME COLUMN: the median (the lower middle of an even
#   count) of COLUMN over FILE's lines whose first field is NAME.
# bench_ratio A B: A / B to one decimal, 0 when B is not positive.
# bench_goal VALUE GOAL: "met" when VALUE >= GOAL, else "**missed**".
# bench_gopprof: the path of go tool pprof's binary, or nothing.

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
