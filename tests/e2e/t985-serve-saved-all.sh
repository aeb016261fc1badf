#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's saved page holds every view and sample type of the
# selection (issue 28 item 8, issue 26): a two-type pprof profile with
# readable sources and a --diff base is saved, and the page, opened from
# file:// with the network refused, switches type and shows the top table
# (kiln top's numbers, and the live page's deltas), the call tree
# (top-down and inverted), a sandwich, the source and the summary with the
# known numbers; a time range is kept; /api/calltree?min= (the saved tree) sends the levels
# down to a share.  A profile whose sources cannot be read says so.  See
# tests/browser/savedall.test.mjs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need python3
need jq

mk() { python3 "$KILN_SRC/tests/e2e/mkpprof-stacks.py" "$@" || fail "mkpprof-stacks $*"; }
mkdir -p "$T/work"
printf 'int main(void)\n{\n\twork();\n\tidle();\n}\n' > "$T/work/main.c"
printf '/* work */\nvoid work(void)\n{\n\tfor (int i = 0; i < 9; i++)\n\t\thot(i);\n}\n' > "$T/work/work.c"
printf 'void hot(int i)\n{\n\tspin(i);\n}\n' > "$T/work/hot.c"
printf 'void idle(void)\n{\n\tpause();\n}\n' > "$T/work/idle.c"
# samples: hot 30, work 10 (cum 40), idle 60; cpu: 300ms, 100ms, 50ms.
mk "$T/p.pb.gz" 'main@main.c:3;work@work.c:5;hot@hot.c:3=30,300000000' \
    'main@main.c:3;work@work.c:4=10,100000000' 'main@main.c:4;idle@idle.c:3=60,50000000'
mk "$T/base.pb.gz" 'main@main.c:3;work@work.c:5;hot@hot.c:3=10,100000000' \
    'main@main.c:3;work@work.c:4=10,100000000' 'main@main.c:4;idle@idle.c:3=80,60000000'
# The same stacks, their files nowhere on this machine.
mk "$T/nosrc.pb.gz" 'main@/nonexistent/m1.c:3;work@/nonexistent/w1.c:5=7,70' \
    'main@/nonexistent/m1.c:4;idle@/nonexistent/i1.c:3=3,30'
"$KILN" top -n 0 "$T/p.pb.gz" > "$T/top-cpu.txt" || fail "kiln top"
"$KILN" top -n 0 --sample-type samples "$T/p.pb.gz" > "$T/top-samples.txt" || fail "kiln top samples"
grep -q '300ms 66.67% 66.67%      300ms 66.67%  hot' "$T/top-cpu.txt" || fail "kiln top: $(cat "$T/top-cpu.txt")"

cd "$T/work"
# A time range is part of the selection saved (a profile with times).
DEMO=$KILN_SRC/tests/fixtures/demo/demo.perf.gz
serve_start -q --http 127.0.0.1:0 "$DEMO"
RANGE='t0=100000000&t1=300000000'
expect_get 200 "/api/download?format=html&$RANGE"
cp "$T/body" "$T/range.html"
expect_get 200 "/api/summary?$RANGE"
range_total=$(jq -r .selection.total_str "$T/body")
serve_stop
serve_start -q --http 127.0.0.1:0 --diff "$T/base.pb.gz" "$T/p.pb.gz" "$T/nosrc.pb.gz"
expect_get 200 "/api/download?format=html&p=0"
cp "$T/body" "$T/all.html"
expect_get 200 "/api/download?format=html&p=1"
cp "$T/body" "$T/nosrc.html"
# The call tree as the page saves it: /api/calltree?min=F sends every
# level down to F of the total; hot (30 of 100) is under 0.35: "more".
expect_get 200 "/api/calltree?p=0&type=samples&min=0.35"
r=$(jq -c '[.levels[] | [.path, .up, .at, [.children[] | .[1]], .more, .more_total]]' "$T/body")
[ "$r" = '[["",null,null,[100],0,0],[null,0,0,[60,40],0,0],[null,1,1,[],1,30]]' ] || fail "calltree min=0.35: $r"
# The live page's deltas, for the saved page's to equal.
expect_get 200 "/api/top?p=0&diff=1&n=0"
cp "$T/body" "$T/live-diff.json"
serve_stop
# Both types' data, the call tree's levels and the source text inlined.
has "$T/all.html" '"types":\[\{"type":"samples"'
has "$T/all.html" '\{"type":"cpu"'
has "$T/all.html" '"levels":\[\{"path":"","children"'
has "$T/all.html" ',\{"up":[0-9]+,"at":[0-9]+,"children"'
has "$T/all.html" '"text":"\\u0009spin\(i\);"'
hasnt "$T/nosrc.html" '"text":true'

if ! command -v node >/dev/null || [ ! -x /usr/bin/chromium ] ||
   [ ! -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    skip "saved pages checked as text; opening them needs node, /usr/bin/chromium and playwright-core (scripts/deps.sh)"
fi
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 300 node "$KILN_SRC/tests/browser/savedall.test.mjs" "$T/all.html" "$T/nosrc.html" \
    "$T/top-cpu.txt" "$T/top-samples.txt" "$T/live-diff.json" "$T/range.html" "$range_total" "$SHOTS" ||
    fail "browser checks failed"
exit 0
