# Shared helpers for the end-to-end tests (sourced, not run).
# Environment from CTest: KILN (the kiln binary), KILN_SRC (source tree),
# KILN_BUILD (build tree, workloads in $KILN_BUILD/workloads),
# KILN_SANITIZE (ON under ASan+UBSan).
set -u
: "${KILN:?run through ctest (KILN unset)}"
WL=$KILN_BUILD/workloads
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-e2e.XXXXXX")
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
need() { command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"; }
# Runs a command expecting exit status $1; keeps stdout in $T/out, stderr in $T/err.
expect_status() {
    local want=$1; shift
    local rc=0
    "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -eq "$want" ] || { cat "$T/err" >&2; fail "'$*' exited $rc, expected $want"; }
}
# Asserts that file $1 contains the extended regex $2.
has() { grep -Eq -- "$2" "$1" || { echo "--- $1:" >&2; head -50 "$1" >&2; fail "'$1' lacks /$2/"; }; }
hasnt() { ! grep -Eq -- "$2" "$1" || fail "'$1' has /$2/"; }
# perf_event_open allowed?
need_perf() {
    need perf
    perf record -q -o "$T/probe.data" -- true >/dev/null 2>&1 || skip "perf record is not allowed here"
}
# Percentage of the value in column $3 (flat% by default) for function $2 in `kiln top` output $1.
top_pct() { awk -v f="$2" -v c="${3:-2}" '$NF==f { gsub("%","",$c); print $c; exit }' "$1"; }
# Within: within A B TOL  (|A-B| <= TOL)
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d=a-b; if (d<0) d=-d; exit !(d<=t) }'; }
# kiln record must be allowed to use perf_event_open here.
need_record() {
    "$KILN" record -q -o "$T/probe.pb.gz" -- true >/dev/null 2>"$T/probe.err" ||
        skip "kiln record cannot sample here: $(head -1 "$T/probe.err")"
}
# Checks the 60/30/10 split of the shares workload in profile $1 (±$2 points).
check_shares() {
    local f=$1 tol=${2:-3} a b c
    "$KILN" top -n 0 "$f" > "$T/top.txt" || fail "kiln top $f"
    a=$(top_pct "$T/top.txt" burn_a); b=$(top_pct "$T/top.txt" burn_b); c=$(top_pct "$T/top.txt" burn_c)
    within "${a:-0}" 60 "$tol" || { cat "$T/top.txt"; fail "burn_a at ${a:-none}%, want 60±$tol"; }
    within "${b:-0}" 30 "$tol" || { cat "$T/top.txt"; fail "burn_b at ${b:-none}%, want 30±$tol"; }
    within "${c:-0}" 10 "$tol" || { cat "$T/top.txt"; fail "burn_c at ${c:-none}%, want 10±$tol"; }
}
# Checks that the call chains of the shares workload are whole in profile $1.
check_chains() {
    "$KILN" convert "$1" -o "$T/chains.collapsed" || fail "kiln convert $1"
    for x in a b c; do
        has "$T/chains.collapsed" "(^|;)main;run;stage_$x;burn_$x "
    done
}
# The preload agent: libkiln.so, not under ASan (an ASan library cannot be
# preloaded into programs built without it).
need_agent() {
    [ "${KILN_SANITIZE:-OFF}" != ON ] || skip "preload tests do not run under ASan"
    [ -e "$KILN_LIB" ] || skip "libkiln.so was not built"
}
# Cum% of function $2 in `kiln top` output $1.
cum_pct() { awk -v f="$2" '$NF==f { gsub("%","",$5); print $5; exit }' "$1"; }
# Checks the 60/30/10 split of cpuserver in profile $1 by cum% (±$2).
check_server_split() {
    local f=$1 tol=${2:-3} a b c
    "$KILN" top -n 0 "$f" > "$T/split.txt" || fail "kiln top $f"
    a=$(cum_pct "$T/split.txt" burn_a); b=$(cum_pct "$T/split.txt" burn_b); c=$(cum_pct "$T/split.txt" burn_c)
    within "${a:-0}" 60 "$tol" || { cat "$T/split.txt"; fail "burn_a at ${a:-none}%, want 60±$tol"; }
    within "${b:-0}" 30 "$tol" || { cat "$T/split.txt"; fail "burn_b at ${b:-none}%, want 30±$tol"; }
    within "${c:-0}" 10 "$tol" || { cat "$T/split.txt"; fail "burn_c at ${c:-none}%, want 10±$tol"; }
}
