#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sample times are a column of their own (docs/design.md, "Sample
# times"): a perf script input of 10,000 samples of 3 distinct stacks on
# one thread, 1 ms apart, gives a model of 3 samples with 10,000 times
# (kiln serve's /api/profiles counts the model's samples, /api/summary
# the records), the timeline counts every millisecond, a time range
# keeps exactly its samples, and the Firefox and perf script outputs
# still have one record per sample at its time.  pprof: by default the
# times are written as labels (go tool pprof -tags shows them, kiln reads
# them back into the column); with --no-times the file holds 3 samples.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl

awk 'BEGIN {
  split("leaf_a mid main|leaf_b mid main|leaf_c main", st, "|")
  for (i = 0; i < 10000; i++) {
    printf "prog   100/100   %d.%06d:     250000 cpu-clock:pppH: \n", 1000 + int(i / 1000), (i % 1000) * 1000
    n = split(st[(i * 7 + int(i / 13)) % 3 + 1], f, " ")
    for (j = 1; j <= n; j++) printf "\t            %x %s+0x%x (/usr/bin/prog)\n", 4096 * j + length(f[j]), f[j], j
    printf "\n"
  } }' > "$T/in.perf"

serve_start -q --http 127.0.0.1:0 "$T/in.perf"
expect_get 200 "/api/profiles"
/usr/bin/python3 - "$T/body" <<'PY' || { cat "$T/body"; fail "model: 3 samples"; }
import json, sys
p = json.load(open(sys.argv[1]))["profiles"][0]
assert p["samples"] == 3 and p["times"] is True, p
PY
expect_get 200 "/api/summary?type=samples"
/usr/bin/python3 - "$T/body" <<'PY' || { cat "$T/body"; fail "summary: 10,000 times"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["records"] == 10000 and d["time_span"] == [0, 9999 * 1000000], d
PY
# 100 buckets of 100 ms: 100 samples in each; 1 ms buckets: one each.
expect_get 200 "/api/timeline?buckets=100&type=samples"
/usr/bin/python3 - "$T/body" <<'PY' || { head -c 800 "$T/body"; fail "timeline"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bucket_ns"] == 100000000 and d["buckets"] == 100 and d["untimed"] == 0, d
assert d["nthreads"] == 1 and d["threads"][0]["tid"] == 100, d
assert d["total"] == [100] * 100 and d["threads"][0]["values"] == [100] * 100, d
PY
expect_get 200 "/api/timeline?buckets=10000&type=samples"
/usr/bin/python3 - "$T/body" <<'PY' || { head -c 800 "$T/body"; fail "timeline, 1 ms"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bucket_ns"] == 1000000 and d["total"] == [1] * 10000, (d["bucket_ns"], d["buckets"])
PY
# A range of 2.5 s from 1 s: 2,500 samples, in the stacks' shares.
expect_get 200 "/api/summary?type=samples&t0=1000000000&t1=3500000000"
/usr/bin/python3 - "$T/body" <<'PY' || { cat "$T/body"; fail "range"; }
import json, sys
d = json.load(open(sys.argv[1]))["selection"]
assert d["total"] == 2500 and d["records"] == 2500, d
PY
serve_stop

# Firefox and perf script: one record per sample, at its millisecond.
"$KILN" convert "$T/in.perf" -o "$T/out.perf" 2>/dev/null || fail "convert to perf script"
[ "$(grep -c cpu-clock "$T/out.perf")" = 10000 ] || fail "perf script: not 10000 records"
grep -q '^prog 100/100 1.002000: 250000 cpu-clock:' "$T/out.perf" ||
    { head -20 "$T/out.perf"; fail "perf script: sample 2 not at 1.002 s"; }
"$KILN" convert "$T/in.perf" -o "$T/out.fxprof.json" 2>/dev/null || fail "convert to firefox"
/usr/bin/python3 - "$T/out.fxprof.json" <<'PY' || fail "firefox: 10000 samples at their times"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["threads"][0]["samples"]
assert s["length"] == 10000, s["length"]
assert s["time"][:3] == [0.0, 1.0, 2.0] and s["time"][-1] == 9999.0, s["time"][:3]
PY

# pprof: times as labels by default (read back: 3 samples, 10,000 times),
# 3 samples without them.
"$KILN" convert "$T/in.perf" -o "$T/t.pb.gz" 2>/dev/null || fail "convert to pprof"
"$KILN" convert "$T/in.perf" --no-times -o "$T/n.pb.gz" 2>/dev/null || fail "convert --no-times"
"$KILN" convert "$T/t.pb.gz" -o "$T/rt.perf" 2>/dev/null || fail "pprof back to perf script"
cmp -s "$T/out.perf" "$T/rt.perf" || fail "pprof round trip lost times"
"$KILN" top -n 0 "$T/n.pb.gz" > "$T/n.top" 2>/dev/null || fail "top of --no-times"
"$KILN" top -n 0 "$T/t.pb.gz" > "$T/t.top" 2>/dev/null || fail "top of times"
cmp -s "$T/n.top" "$T/t.top" || fail "--no-times changed the shares"
[ "$(stat -c %s "$T/n.pb.gz")" -lt "$(stat -c %s "$T/t.pb.gz")" ] || fail "--no-times not smaller"
if command -v go >/dev/null; then
    go tool pprof -raw "$T/n.pb.gz" 2>/dev/null > "$T/n.raw" || fail "go tool pprof -raw --no-times"
    [ "$(awk '/^Samples:/ {on=1; next} /^Locations/ {on=0} on && /: /' "$T/n.raw" | wc -l)" = 3 ] ||
        { cat "$T/n.raw"; fail "go tool pprof: not 3 samples"; }
fi
exit 0
