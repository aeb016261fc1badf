# SPDX-License-Identifier: Apache-2.0
# Helpers for the perf.data tests (sourced after lib.sh).
# perf's build-id cache goes under $T, not the caller's home.
export HOME=$T
unset PERF_BUILDID_DIR

# perf report's flat table of perf.data $1: "PCT SAMPLES NAME" lines.
perf_flat() {
    perf report -i "$1" --stdio --no-children -n --sort sym -g none 2>/dev/null |
        awk '$1 ~ /%$/ && $2 ~ /^[0-9]+$/ { p=$1; sub("%","",p); n=$2;
             $1=""; $2=""; $3=""; sub("^ +",""); print p, n, $0 }'
}

# In perf_flat output $1: the share and the whole name of the hot JS
# function ("JS:*kilnHotLoop FILE:L:C"), "SHARE NAME"; nothing if absent.
perf_hot_js() {
    awk '$3 ~ /^JS:.kilnHotLoop$/ { p = $1; $1 = ""; $2 = ""; sub("^ +", ""); print p, $0; exit }' "$1"
}
# In kiln top output $1: the flat% of the line that ends in name $2 (a
# name with spaces).
name_pct() { awk -v f="$2" 'index($0, f) && substr($0, length($0) - length(f) + 1) == f {
    gsub("%","",$2); print $2; exit }' "$1"; }

# Compares kiln's reading of perf.data $1 with perf report's: the same
# number of samples, and burn_a/burn_b/burn_c (or the functions named in
# $2) with the same names and shares within 1 point.
compare_with_perf() {
    local f=$1 names=${2:-"burn_a burn_b burn_c"} want got total n
    perf_flat "$f" > "$T/perf.flat"
    [ -s "$T/perf.flat" ] || fail "perf report read nothing from $f"
    total=$(awk '{ s += $2 } END { print s }' "$T/perf.flat")
    expect_status 0 "$KILN" top -n 0 --sample-type samples "$f"
    cp "$T/out" "$T/kiln.samples"
    has "$T/kiln.samples" "of $total total"
    expect_status 0 "$KILN" top -n 0 "$f"
    cp "$T/out" "$T/kiln.top"
    for n in $names; do
        want=$(awk -v f="$n" '$3 == f { print $1; exit }' "$T/perf.flat")
        got=$(top_pct "$T/kiln.top" "$n")
        [ -n "$want" ] || fail "perf report has no $n"
        [ -n "$got" ] || { cat "$T/kiln.top" >&2; fail "kiln has no $n"; }
        within "$got" "$want" 1 ||
            fail "$n: kiln $got%, perf report $want% (more than 1 point apart)"
        # Self sample counts are equal too (the same samples, named alike).
        want=$(awk -v f="$n" '$3 == f { print $2; exit }' "$T/perf.flat")
        got=$(top_pct "$T/kiln.samples" "$n" 1)
        [ "$got" = "$want" ] || fail "$n: kiln counts $got samples, perf report $want"
    done
}
