#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# -x SEP and --json: parsed by a CSV and a JSON reader, every event is
# there with perf's fields (counter-value, unit, event, event-runtime,
# pcnt-running, metric-value, metric-unit), <not supported> included.
. "$(dirname "$0")/lib.sh"
need python3
"$KILN" stat -e task-clock -- true >/dev/null 2>"$T/probe" ||
    skip "kiln stat cannot count here: $(head -1 "$T/probe")"
EVS="task-clock,context-switches,cpu-migrations,page-faults,minor-faults,cycles,instructions,{cpu-clock,faults}"

expect_status 0 "$KILN" stat -x';' -e "$EVS" -o "$T/s.csv" -- "$WL/statload" cpu 0.1
[ ! -s "$T/err" ] || { cat "$T/err"; fail "-o FILE still wrote to stderr"; }
expect_status 0 "$KILN" stat --json -e "$EVS" -- "$WL/statload" cpu 0.1
cp "$T/err" "$T/s.json"
python3 - "$T/s.csv" "$T/s.json" <<'PY' || fail "CSV/JSON check"
import csv, json, sys
want = ["task-clock", "context-switches", "cpu-migrations", "page-faults",
        "minor-faults", "cycles", "instructions", "cpu-clock", "faults"]
rows = list(csv.reader(open(sys.argv[1]), delimiter=";"))
assert [r[2] for r in rows] == want, rows
for r in rows:
    assert len(r) == 7, r
    if r[0].startswith("<"):
        assert r[0] in ("<not supported>", "<not counted>"), r
        continue
    float(r[0]); int(r[3]); float(r[4])
tc = [r for r in rows if r[2] == "task-clock"][0]
assert tc[1] == "msec" and 80 <= float(tc[0]) <= 200 and tc[6] == "CPUs utilized", tc
objs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert [o["event"] for o in objs] == want, objs
keys = {"counter-value", "unit", "event", "event-runtime", "pcnt-running",
        "metric-value", "metric-unit"}
for o in objs:
    assert keys <= set(o), o
    assert isinstance(o["counter-value"], str) and isinstance(o["event-runtime"], int)
pf = [o for o in objs if o["event"] == "page-faults"][0]
assert float(pf["counter-value"]) > 10 and pf["metric-unit"].endswith("/sec"), pf
cyc = [o for o in objs if o["event"] == "cycles"][0]
assert cyc["counter-value"] in ("<not supported>",) or float(cyc["counter-value"]) > 0, cyc
print("csv and json ok:", len(rows), len(objs))
PY
# perf's own reader of the same format: the field order matches perf stat -x.
if command -v perf >/dev/null && perf stat -e task-clock -- true >/dev/null 2>&1; then
    perf stat -x';' -e "$EVS" -o "$T/p.csv" -- "$WL/statload" cpu 0.1 >/dev/null
    grep -v '^#' "$T/p.csv" | grep . | cut -d';' -f2,3 > "$T/p.cols"; cut -d';' -f2,3 "$T/s.csv" > "$T/k.cols"
    diff -u "$T/p.cols" "$T/k.cols" || fail "unit/event columns differ from perf stat -x"
fi
echo ok
