#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Chrome trace events that hold durations and no CPU profile (what clang
# -ftime-trace, chrome://tracing and Perfetto's JSON export write) are
# read as speedscope reads them: each thread's "X"/"B"/"E" events nest
# into stacks weighing their self time.  clang makes the trace here; the
# compiler's own total (ExecuteCompiler's "dur") must be what kiln counts
# for it, through top, convert (go tool pprof reads the result) and flame.
. "$(dirname "$0")/lib.sh"
need clang
need python3

clang -ftime-trace -O2 -c "$KILN_SRC/tests/workloads/shares.c" -o "$T/shares.o" ||
    fail "clang -ftime-trace failed"
[ -s "$T/shares.json" ] || skip "this clang wrote no -ftime-trace file"

# The truth from the file itself: ExecuteCompiler's duration in us.
want=$(python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(sum(e["dur"] for e in ev if e.get("ph") == "X" and e["name"] == "ExecuteCompiler"))
' "$T/shares.json")
[ "${want:-0}" -gt 0 ] || fail "no ExecuteCompiler event in clang's trace"

# Its cum in wall/nanoseconds, from the collapsed output (exact numbers).
expect_status 0 "$KILN" convert "$T/shares.json" -o "$T/t.collapsed"
# (printf: mawk prints a sum past 2^31 -- a compile of over 2.1 s, as
# under ASan on a loaded machine -- as 2.18274e+09.)
got=$(awk '$0 ~ /^ExecuteCompiler(;| )/ { s += $NF } END { printf "%.0f\n", s }' "$T/t.collapsed")
[ "$got" = "$((want * 1000))" ] ||
    fail "ExecuteCompiler weighs $got ns, clang's trace says ${want} us"
has "$T/t.collapsed" "^ExecuteCompiler;Frontend;"

expect_status 0 "$KILN" top --cum "$T/shares.json"
has "$T/out" "^Type: wall"
has "$T/out" " ExecuteCompiler$"
expect_status 0 "$KILN" top --sample-type events "$T/shares.json"
has "$T/out" "^Type: events"

expect_status 0 "$KILN" convert "$T/shares.json" -o "$T/t.pb.gz"
if command -v go >/dev/null; then
    go tool pprof -top -cum "$T/t.pb.gz" > "$T/pprof.txt" 2>&1 ||
        { cat "$T/pprof.txt"; fail "go tool pprof cannot read the converted trace"; }
    has "$T/pprof.txt" "ExecuteCompiler"
fi
expect_status 0 "$KILN" flame "$T/shares.json" -o "$T/t.svg"
has "$T/t.svg" "<title>ExecuteCompiler "
