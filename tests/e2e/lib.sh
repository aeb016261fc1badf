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
