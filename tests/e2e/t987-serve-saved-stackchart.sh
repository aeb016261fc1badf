#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The saved page carries the stack chart (issue 26): kiln serve's "save as
# one HTML file" holds, for each sample type, /api/stackchart's answer for
# each of the 16 busiest threads over the selection's span at 4000 pixels
# (docs/kiln-serve.md "The saved page").  On a perf script of 20 threads:
# 16 saved, the busiest first; a thread of 9000 alternating samples is
# saved as at most 4000 runs (the size bound); threads past the 4 MiB cap
# are left out, the busiest kept; a time range saves that range.  A profile without times saves none.  Then the saved page of a
# kiln record of the two-phase workload, opened from file:// with the
# network refused, draws phase_a before phase_b, zooms, holds the
# disassembly of the hot functions (burn_a's), and the page without times
# says it has no stack chart (tests/browser/savedstack.test.mjs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need python3

# The data a saved page embeds, as JSON.
data() {
    python3 -c '
import sys
s = open(sys.argv[1]).read()
a = s.index("window.KILN_OFFLINE = ") + len("window.KILN_OFFLINE = ")
sys.stdout.write(s[a:s.index(";\n</script>", a)])' "$1" > "$2" || fail "no data in $1"
}

# Thread 101: burn_a, burn_b, burn_a, ... 1 ms apart (9000 samples);
# threads 201..219: 30 - i samples of burn_c each.
awk 'BEGIN {
    fmt = "prog 100/%d [000] %.6f: 1000000 cpu-clock:\n\t    40%d000 %s (/bin/prog)\n\t    402000 main (/bin/prog)\n\n"
    for (k = 0; k < 9000; k++)
        printf fmt, 101, 1 + k / 1000, k % 2, (k % 2 ? "burn_b" : "burn_a")
    for (i = 1; i < 20; i++)
        for (k = 0; k < 30 - i; k++)
            printf fmt, 200 + i, 1 + k / 1000 + i / 100000, 3, "burn_c"
}' > "$T/many.perf"
serve_start -q --http 127.0.0.1:0 "$T/many.perf"
expect_get 200 "/api/download?format=html"
data "$T/body" "$T/many.json"
expect_get 200 "/api/download?format=html&t0=2000000000&t1=3000000000"
data "$T/body" "$T/range.json"
serve_stop
# The stack chart part of the first sample type.
sc() { jq -c ".types[0].stackchart | $2" "$T/$1.json"; }
[ "$(sc many '[(.by_thread | length), .threads, .cut, .width]')" = '[16,16,0,4000]' ] ||
    fail "threads saved: $(sc many '[(.by_thread | length), .threads, .cut, .width]')"
[ "$(sc many '[.by_thread[] | .tid]')" = '[101,201,202,203,204,205,206,207,208,209,210,211,212,213,214,215]' ] ||
    fail "busiest first: $(sc many '[.by_thread[] | .tid]')"
# Thread 101 over its whole run, merged at 4000 pixels: at most one run a
# pixel, and as many as its samples allow.
r=$(sc many '.by_thread[0] | [.from, .to == .end, (.runs | length) <= 4000, (.runs | length) > 1000, .samples]')
[ "$r" = '[0,true,true,true,9000]' ] || fail "thread 101: $r $(sc many '.by_thread[0].runs | length')"
[ "$(jq '.stackchart_max' "$T/many.json")" = $((4 << 20)) ] || fail "no stackchart_max"
# A time range: its span saved.
r=$(sc range '.by_thread[0] | [.from, .to, .samples]')
[ "$r" = '[2000000000,3000000000,1000]' ] || fail "range: $r"

# The cap: 20 threads of 4000 samples 1 ms apart, each a different one of
# 500 functions (4000 runs, about 150 KB a thread at 4000 pixels), fill a
# type's share of the 4 MiB (2 MiB each of its two types) before the
# 16th: the busiest kept, the rest cut.
awk 'BEGIN {
    fmt = "prog 100/%d [000] %.6f: 1000000 cpu-clock:\n\t    401000 fn_%d (/bin/prog)\n\t    402000 main (/bin/prog)\n\n"
    for (i = 1; i <= 20; i++)
        for (k = 0; k < 4000 - i; k++)
            printf fmt, 300 + i, 1 + k / 1000 + i / 100000, (k * 7) % 500
}' > "$T/big.perf"
serve_start -q --http 127.0.0.1:0 "$T/big.perf"
expect_get 200 "/api/download?format=html"
data "$T/body" "$T/big.json"
serve_stop
r=$(jq -c '[.types[] | .stackchart | [(.by_thread | length) + .cut, .cut > 0, (.by_thread | tostring | length) <= 2097152, .by_thread[0].tid]]' "$T/big.json")
[ "$r" = '[[16,true,true,301],[16,true,true,301]]' ] || fail "cap: $r"

# A profile without times: no stack chart saved.
printf 'main;burn_a 3\n' > "$T/plain.folded"
serve_start -q --http 127.0.0.1:0 "$T/plain.folded"
expect_get 200 "/api/download?format=html"
cp "$T/body" "$T/plain.html"
serve_stop
data "$T/plain.html" "$T/plain.json"
[ "$(sc plain '.')" = 'null' ] || fail "plain: $(sc plain '.')"

# The saved page of a recording of the two-phase program.
need_record
expect_status 0 "$KILN" record -q -F 999 -o "$T/tp.pb.gz" -- "$WL/twophase" 1
serve_start -q --http 127.0.0.1:0 "$T/tp.pb.gz"
expect_get 200 "/api/download?format=html"
cp "$T/body" "$T/tp.html"
serve_stop
data "$T/tp.html" "$T/tp.json"
[ "$(jq '[.types[] | .stackchart | select(.) | .by_thread | length] | min' "$T/tp.json")" -ge 1 ] ||
    fail "no stack chart saved: $(jq -c '[.types[] | .stackchart]' "$T/tp.json" | head -c 300)"
# The disassembly of the hot functions, burn_a's among them (kiln serve
# reads the workload's binary); none for collapsed stacks (no addresses).
[ "$(jq '[.types[] | .disasm.by_fn.burn_a.insns | length > 0] | all' "$T/tp.json")" = true ] ||
    fail "no disassembly of burn_a: $(jq -c '[.types[] | .disasm.by_fn | keys]' "$T/tp.json")"
[ "$(jq -c '[.types[] | .disasm.by_fn]' "$T/plain.json")" = '[{}]' ] || fail "plain disasm: $(jq -c '[.types[] | .disasm]' "$T/plain.json")"
[ "$(jq '.disasm_max' "$T/tp.json")" = $((2 << 20)) ] || fail "no disasm_max"
# The hottest function has no binary to disassemble (a library that is
# not there), the next has: it alone is saved, and the data still reads
# (a separator was once left before it: '{"by_fn":{,"burn_a"', a script
# error that broke the whole saved page).
a=$(nm "$WL/shares" | awk '$3 == "burn_a" { print $1 }')
awk -v a="$a" -v b="$WL/shares" 'BEGIN {
    for (k = 0; k < 300; k++)
        printf "prog 100/100 [000] %.6f: 1000000 cpu-clock:\n\t    1010 ghost+0x0 (/nonexistent/libghost.so)\n\n", 1 + k / 1000
    for (k = 0; k < 100; k++)
        printf "prog 100/100 [000] %.6f: 1000000 cpu-clock:\n\t    %s burn_a+0x0 (%s)\n\n", 2 + k / 1000, a, b
}' > "$T/ghost.perf"
serve_start -q --http 127.0.0.1:0 "$T/ghost.perf"
expect_get 200 "/api/download?format=html"
serve_stop
data "$T/body" "$T/ghost.json"
[ "$(jq '[.types[] | .disasm.by_fn | keys == ["burn_a"]] | all' "$T/ghost.json" 2>&1)" = true ] ||
    fail "ghost then burn_a: $(jq -c '[.types[] | .disasm.by_fn | keys]' "$T/ghost.json" 2>&1 | head -c 300)"

if ! command -v node >/dev/null || [ ! -x /usr/bin/chromium ] ||
   [ ! -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    skip "saved stack charts checked as data; opening them needs node, /usr/bin/chromium and playwright-core (scripts/deps.sh)"
fi
SHOTS=${KILN_SHOTS:-$T}
mkdir -p "$SHOTS"
HOME=$T timeout 300 node "$KILN_SRC/tests/browser/savedstack.test.mjs" "$T/tp.html" "$T/plain.html" "$SHOTS" ||
    fail "browser checks failed"
exit 0
