# SPDX-License-Identifier: Apache-2.0
# Helpers of the heap tracer tests t800-t829 (sourced after lib.sh).
# heapcheck.py is an independent reader of the trace format: it checks
# the structure strictly and prints per-site numbers.
need_agent
need zstd
need python3
need nm

# heapcheck TRACE [EXE]: the checker's report in $T/check.txt.
heapcheck() {
    python3 "$KILN_SRC/tests/e2e/heapcheck.py" "$@" > "$T/check.txt" ||
        fail "heapcheck $* rejected the trace"
}
# site FUNC KEY: a number of the site FUNC in $T/check.txt (empty: none).
site() { awk -v f="$1" -v k="$2" '$1=="site" && $2==f { for (i=3;i<=NF;i++) { split($i,a,"="); if (a[1]==k) print a[2] } }' "$T/check.txt"; }
# total KEY: a number of the totals line.
total() { awk -v k="$1" '$1=="totals" { for (i=2;i<=NF;i++) { split($i,a,"="); if (a[1]==k) print a[2] } }' "$T/check.txt"; }
# expect_site FUNC KEY VALUE
expect_site() {
    local v
    v=$(site "$1" "$2")
    [ "$v" = "$3" ] || { cat "$T/check.txt" >&2; fail "$1 $2=${v:-none}, want $3"; }
}
expect_total() {
    local v
    v=$(total "$1")
    [ "$v" = "$2" ] || { cat "$T/check.txt" >&2; fail "total $1=${v:-none}, want $2"; }
}
# same_output WORKLOAD [ARGS]: runs it bare and under the agent with
# KILN_HEAP_TRACE=$T/h.trace (plus $HEAP_ENV), compares stdout and status.
same_output() {
    local bare_rc=0 rc=0
    "$@" > "$T/bare.txt" 2>/dev/null || bare_rc=$?
    env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP_TRACE="$T/h.trace" ${HEAP_ENV:-} \
        "$@" > "$T/agent.txt" 2> "$T/agent.err" || rc=$?
    [ "$bare_rc" -eq "$rc" ] || { cat "$T/agent.err" >&2; fail "exit status $rc under the agent, $bare_rc without"; }
    diff -u "$T/bare.txt" "$T/agent.txt" || fail "'$*' printed something else under the agent"
    [ -s "$T/h.trace" ] || fail "no trace written"
    zstd -tq "$T/h.trace" || fail "the trace is not valid zstd"
}
