#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's disassembly (/api/disasm) of a kiln record of the shares
# workload: burn_a's instructions, decoded from the binary, with its loop
# (from a backward jump's target to the jump) carrying most of its samples
# and the loop's source line interleaved; a caller's time at its call
# instruction; the selection (transforms) honoured; the errors: no such
# function, a profile without addresses, a binary changed since the
# recording (build ID: 409) or gone (404).  Then the page in headless
# chromium (tests/browser/disasm.test.mjs): from the flame graph's menu and
# the source view.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need python3
need_record

cp "$WL/shares" "$T/shares"
"$KILN" record -q -o "$T/sh.pb.gz" -- "$T/shares" 1 || fail "kiln record shares"
printf 'main;run;stage_a;burn_a 600\n' > "$T/s.collapsed"
serve_start -q --http 127.0.0.1:0 "$T/sh.pb.gz" "$T/s.collapsed"

expect_get 200 '/api/disasm?fn=burn_a'
cp "$T/body" "$T/burn_a.json"
python3 - "$T/burn_a.json" <<'PY' || fail "burn_a's disassembly: $(cat "$T/burn_a.json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d['symbol'] == 'burn_a' and d['arch'] == 'x86-64', d['symbol']
assert d['file'].endswith('/shares') and d['build_id'], d['file']
ins = d['insns']
addr = [int(i[0], 16) for i in ins]
start, end = int(d['start'], 16), int(d['end'], 16)
assert addr[0] == start and all(start <= a < end for a in addr)
assert any(i[1].startswith('ret') for i in ins)
# The loop: a backward jump inside the function, to its target.
loops = []
for a, i in zip(addr, ins):
    m = re.match(r'j\w+ 0x([0-9a-f]+)$', i[1])
    if m and start <= int(m.group(1), 16) < a:
        loops.append((int(m.group(1), 16), a))
assert loops, [i[1] for i in ins]
lo, hi = loops[0]
inloop = sum(i[2] for a, i in zip(addr, ins) if lo <= a <= hi)
self = sum(i[2] for i in ins)
assert self == d['self'] and self > 0, (self, d['self'])
print(f"burn_a: loop 0x{lo:x}-0x{hi:x} holds {inloop} of {self} ({100 * inloop / self:.1f}%)")
assert inloop * 2 > self, (inloop, self)
# The loop body's source line, with its text.
lines = [d['sources'][i[4]]['lines'].get(str(i[5]), '') for a, i in zip(addr, ins) if lo <= a <= hi and i[4] >= 0]
assert any('6364136223846793005ul' in t for t in lines), lines
PY
# A caller: stage_a's time is at its call of burn_a -- at least 90% of
# it (a sample may land in stage_a's own code after the call: its self,
# once in a CI run), and no other instruction holds a callee's time.
expect_get 200 '/api/disasm?fn=stage_a'
call="call $(jq -r '.start' "$T/burn_a.json")"
jq -e --arg call "$call" '([.insns[] | select(.[1] == $call) | .[3]] | add) as $c |
    $c * 10 >= .cum * 9 and all(.insns[] | select(.[1] != $call); .[3] == .[2])' "$T/body" > /dev/null ||
    fail "stage_a's total is not at its call: $(cat "$T/body")"
[ "$(jq '.self' "$T/body")" = 0 ] || fail "stage_a has self time: $(jq .self "$T/body")"
# The selection holds: with burn_a merged away its time is stage_a's own.
expect_get 200 '/api/disasm?fn=stage_a&tf=mf:burn_a'
[ "$(jq '.self > 0' "$T/body")" = true ] || fail "tf=mf:burn_a: stage_a has no self: $(cat "$T/body")"
# Errors.
expect_get 400 '/api/disasm'
expect_get 404 '/api/disasm?fn=nosuch'
has "$T/body" "no function 'nosuch'"
expect_get 404 '/api/disasm?fn=burn_a&p=1'
has "$T/body" 'carry no addresses'
# The binary changed since the recording: another build ID.
cp "$WL/callgraph" "$T/shares"
expect_get 409 '/api/disasm?fn=burn_a'
has "$T/body" 'changed since the profile was taken'
rm "$T/shares"
expect_get 404 '/api/disasm?fn=burn_a'
has "$T/body" 'cannot open'
cp "$WL/shares" "$T/shares"

if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/disasm.test.mjs" "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
