#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln diff's outputs and errors: the text table, JSON (every function with
# both columns, intervals, verdicts, the regression named), the Markdown
# comment, the differential flame graph saved beside (kiln flame --diff's
# colours: burn_c red), collapsed and pprof inputs compared alike, any
# sample type (--sample-type), exit 0 without --fail-on, and exit 2 on
# usage errors, unreadable inputs and profiles of different types.
. "$(dirname "$0")/lib.sh"
need python3
GEN="$(dirname "$0")/diffgen.py"
cd "$T" || fail "no $T"

python3 "$GEN" base.pb.gz 11 4000 burn_a=50 burn_b=30 burn_c=20
python3 "$GEN" new.pb.gz 12 4000 burn_a=40 burn_b=25 burn_c=35

# Text: the table, the verdict naming burn_c, the graph's path.
expect_status 1 "$KILN" diff --fail-on 5% base.pb.gz new.pb.gz
has out '^cpu/nanoseconds: 1 base profile \(4000 samples\) against 1 new profile \(4000 samples\)'
has out '95% simultaneous intervals over [0-9]+ tested columns'
has out '^REGRESSION: burn_c flat share'
has out 'REGRESSION +burn_c$'
has out 'shrank +burn_a$'
has out '^Differential flame graph: new.diff.svg$'
[ -s new.diff.svg ] || fail "no new.diff.svg beside"
has new.diff.svg 'Differential Flame Graph \(kiln diff\)'
# burn_c grew: drawn red (more red than blue), burn_a shrank: blue.
rgb() { grep -o "<g class=\"f\"[^>]*><title>$1 ([^<]*</title><rect [^>]*>" new.diff.svg | head -1 |
        sed -n 's/.*fill="rgb(\([0-9]*\),\([0-9]*\),\([0-9]*\))".*/\1 \2 \3/p'; }
read -r r g b <<<"$(rgb burn_c)"
[ -n "$r" ] && [ "$r" -gt "$b" ] || fail "burn_c is not red in the diff graph: $r $g $b"
read -r r g b <<<"$(rgb burn_a)"
[ -n "$r" ] && [ "$b" -gt "$r" ] || fail "burn_a is not blue in the diff graph: $r $g $b"

# Without --fail-on: the same table, no verdict, exit 0.
expect_status 0 "$KILN" diff --no-svg base.pb.gz new.pb.gz
has out 'No --fail-on: no verdict'
hasnt out 'Differential flame graph'
# A growth under the threshold does not fail the gate.
expect_status 0 "$KILN" diff --no-svg --fail-on 30 base.pb.gz new.pb.gz
has out 'No regression'

# JSON: read by python; every field a CI script needs.
expect_status 1 "$KILN" diff --json --svg d.svg --fail-on 5% base.pb.gz new.pb.gz
python3 - out <<'PY' || fail "bad JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["type"] == "cpu/nanoseconds", d["type"]
assert d["regression"] is True and d["regressions"] == ["burn_c", "stage_c"], d["regressions"]
assert d["fail_on"] == 5 and d["svg"] == "d.svg" and d["confidence"] == 0.95
assert d["base"] == {"profiles": 1, "samples": 4000}, d["base"]
f = {x["name"]: x for x in d["functions"]}
c = f["burn_c"]["flat"]
assert c["verdict"] == "grew" and c["regression"] and c["low"] > 0 < c["change"], c
assert abs(c["change"] - (c["new"] - c["base"])) < 1e-6, c
assert 10 < c["change"] < 20 and c["low"] < c["change"] < c["high"], c
assert f["burn_a"]["flat"]["verdict"] == "shrank", f["burn_a"]
assert f["main"]["cum"]["verdict"] == "untested" and f["main"]["cum"]["low"] is None
PY
[ -s d.svg ] || fail "--svg d.svg not written"

# Markdown: a heading with the verdict, a table with a row per function.
expect_status 1 "$KILN" diff --markdown --no-svg --fail-on 5% -o comment.md base.pb.gz new.pb.gz
has comment.md '^### kiln diff: 2 regressions$'
has comment.md '^REGRESSION: <code>burn_c</code> flat share'
has comment.md '^\| function \| flat base \| flat new \|'
has comment.md '^\| <code>burn_c</code> \| .*\*\*\+[0-9.]+\*\* \[\+[0-9.]+, \+[0-9.]+\] \|.* REGRESSION \|$'

# Any input kiln reads: the same profiles as collapsed stacks give the
# same numbers (the samples type; the seed fixed).
"$KILN" convert base.pb.gz -o base.collapsed --sample-type samples || fail "convert"
"$KILN" convert new.pb.gz -o new.collapsed --sample-type samples || fail "convert"
"$KILN" diff --no-svg --sample-type samples base.pb.gz new.pb.gz > a.txt || fail "diff pprof"
"$KILN" diff --no-svg base.collapsed new.collapsed > b.txt || fail "diff collapsed"
diff <(sed 1d a.txt) <(sed 1d b.txt) || fail "collapsed and pprof inputs compared differently"
has a.txt '^samples/count: '
# The same seed, the same numbers; another seed, the same table shape.
"$KILN" diff --no-svg --seed 7 base.pb.gz new.pb.gz > s7.txt || fail "--seed 7"
"$KILN" diff --no-svg --seed 7 base.pb.gz new.pb.gz > s7b.txt || fail "--seed 7"
cmp -s s7.txt s7b.txt || fail "the same seed gave two reports"
has s7.txt 'seed 7\)'

# Usage errors and unreadable inputs: exit 2 with a message.
expect_status 2 "$KILN" diff base.pb.gz
has err 'want BASE and NEW'
expect_status 2 "$KILN" diff base.pb.gz new.pb.gz new.pb.gz
has err 'BASE\.\.\. -- NEW\.\.\.'
expect_status 2 "$KILN" diff base.pb.gz --
has err 'at least one profile on each side'
expect_status 2 "$KILN" diff --fail-on lots base.pb.gz new.pb.gz
has err "bad --fail-on 'lots'"
expect_status 2 "$KILN" diff --confidence 2 base.pb.gz new.pb.gz
expect_status 2 "$KILN" diff --format xml base.pb.gz new.pb.gz
expect_status 2 "$KILN" diff --no-svg base.pb.gz missing.pb.gz
has err "missing.pb.gz"
printf 'not a profile\x00\x01' > junk.pb
expect_status 2 "$KILN" diff --no-svg base.pb.gz junk.pb
has err 'junk.pb'
# A CPU profile against a heap profile: no common type.
python3 "$(dirname "$0")/mkpprof.py" heap.pb.gz burn_a=a.c:1=10 2>/dev/null ||
    python3 "$KILN_SRC/tests/e2e/mkpprof.py" heap.pb.gz burn_a=a.c:1=10
expect_status 2 "$KILN" diff --no-svg base.pb.gz heap.pb.gz
has err 'pick one with --sample-type'
# Never written over an input.
expect_status 2 "$KILN" diff --svg base.pb.gz base.pb.gz new.pb.gz
has err 'refusing to write over the input'
# Help.
expect_status 0 "$KILN" help diff
has out '--fail-on PCT'
exit 0
