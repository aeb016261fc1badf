#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln serve's stack chart (/api/stackchart): a thread's runs of identical
# stacks in time order.  On a perf script of known times: consecutive
# samples of one stack are one run, another thread's samples stay out,
# a window narrower than the whole sends only what is in it, a window
# one pixel per sample sends each sample, at most one run per pixel is
# sent, the selection's filters and time range apply, bad arguments are
# refused.  Then a kiln record of the two-phase workload: every phase_a
# run ends before the first phase_b run starts, and the page shows it
# (tests/browser/stackchart.test.mjs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq

# Thread 101: a a b b b a (1 ms apart); thread 102: c.
{
    t=0
    for f in burn_a burn_a burn_b burn_b burn_b burn_a; do
        printf 'prog 100/101 [000] 1.%03d000: 1000000 cpu-clock:\n\t    401000 %s (/bin/prog)\n\t    402000 main (/bin/prog)\n\n' "$t" "$f"
        t=$((t + 1))
    done
    printf 'prog 100/102 [001] 1.002000: 1000000 cpu-clock:\n\t    403000 burn_c (/bin/prog)\n\t    402000 main (/bin/prog)\n\n'
} > "$T/seq.perf"
serve_start -q --http 127.0.0.1:0 "$T/seq.perf"

runs() { jq -r '. as $d | [.runs[] | "\(.[0] / 1e6)-\(.[1] / 1e6):\($d.stacks[.[2]] | map($d.names[$d.frames[.][0]]) | join(">")):\(.[4])"] | join(" ")' "$T/body"; }
expect_get 200 '/api/stackchart?width=1000'
[ "$(jq -c '[.pid, .tid, .name, .nthreads, .samples]' "$T/body")" = '[100,101,"prog",2,6]' ] ||
    fail "thread: $(cat "$T/body")"
[ "$(runs)" = "0-2:main>burn_a:2 2-5:main>burn_b:3 5-6:main>burn_a:1" ] || fail "runs: $(runs)"
# frames: one table, each frame once
[ "$(jq -c '[.frames[] | .[0]] | length' "$T/body")" = 3 ] || fail "frames: $(cat "$T/body")"
expect_get 200 '/api/stackchart?width=1000&tid=102&pid=100'
[ "$(runs)" = "2-3:main>burn_c:1" ] || fail "thread 102: $(runs)"
# A window: only the samples that overlap it (each with its own times).
expect_get 200 '/api/stackchart?width=1000&from=2500000&to=4000000'
[ "$(runs)" = "2-4:main>burn_b:2" ] || fail "window: $(runs)"
[ "$(jq .samples "$T/body")" = 2 ] || fail "window samples: $(cat "$T/body")"
# Two pixels over six samples: at most one run a pixel, each the
# longest of its pixel's, over what the pixel's samples covered.
expect_get 200 '/api/stackchart?width=2'
[ "$(runs)" = "0-3:main>burn_a:3 3-6:main>burn_b:3" ] || fail "2 pixels: $(runs)"
# The selection applies: ignore, labels, the time range.
expect_get 200 '/api/stackchart?width=1000&ignore=burn_b'
[ "$(runs)" = "0-2:main>burn_a:2 5-6:main>burn_a:1" ] || fail "ignore: $(runs)"
expect_get 200 '/api/stackchart?width=1000&hide=burn_b'
[ "$(runs)" = "0-2:main>burn_a:2 2-5:main:3 5-6:main>burn_a:1" ] || fail "hide: $(runs)"
expect_get 200 '/api/stackchart?width=1000&t0=1000000&t1=3000000'
[ "$(runs)" = "1-2:main>burn_a:1 2-3:main>burn_b:1" ] || fail "time range: $(runs)"
expect_get 200 '/api/stackchart?width=1000&labels=thread%3D102'
[ "$(jq .tid "$T/body")" = 102 ] || fail "labels: $(cat "$T/body")"
expect_get 400 '/api/stackchart?tid=x'
has "$T/body" "bad tid 'x'"
expect_get 404 '/api/stackchart?tid=7&pid=100'
has "$T/body" "no thread 7"
expect_get 400 '/api/stackchart?from=5&to=5'
expect_get 400 '/api/stackchart?from=x'
has "$T/body" "bad from 'x'"
serve_stop

# Samples out of time order in the file (perf script of several CPUs,
# merged): each thread's come out in time order.
{
    for t in 3 1 0 2; do
        f=burn_a; [ "$t" -ge 2 ] && f=burn_b
        printf 'prog 100/101 [000] 1.%03d000: 1000000 cpu-clock:\n\t    401000 %s (/bin/prog)\n\t    402000 main (/bin/prog)\n\n' "$t" "$f"
        printf 'prog 100/102 [001] 1.%03d500: 1000000 cpu-clock:\n\t    403000 burn_c (/bin/prog)\n\t    402000 main (/bin/prog)\n\n' "$t"
    done
} > "$T/shuffled.perf"
serve_start -q --http 127.0.0.1:0 "$T/shuffled.perf"
expect_get 200 '/api/stackchart?width=1000&tid=101&pid=100'
[ "$(runs)" = "0-2:main>burn_a:2 2-4:main>burn_b:2" ] || fail "out of order: $(runs)"
serve_stop

# A profile without times: no stack chart, said so.
printf 'main;burn_a 3\n' > "$T/plain.folded"
serve_start -q --http 127.0.0.1:0 "$T/plain.folded"
expect_get 404 '/api/stackchart'
has "$T/body" "no sample of this selection has a time"
serve_stop

# A recording of the two-phase program.
need_record
expect_status 0 "$KILN" record -q -F 999 -o "$T/tp.pb.gz" -- "$WL/twophase" 1
serve_start -q --http 127.0.0.1:0 "$T/tp.pb.gz"
expect_get 200 '/api/stackchart?width=100000'
last_a=$(jq '. as $d | [.runs[] | select($d.stacks[.[2]] | map($d.names[$d.frames[.][0]]) | index("phase_a")) | .[1]] | max' "$T/body")
first_b=$(jq '. as $d | [.runs[] | select($d.stacks[.[2]] | map($d.names[$d.frames[.][0]]) | index("phase_b")) | .[0]] | min' "$T/body")
[ "$last_a" != null ] && [ "$first_b" != null ] && [ "$last_a" -le "$first_b" ] ||
    fail "phase_a's last run ends at $last_a, phase_b's first starts at $first_b"
if command -v node >/dev/null && [ -x /usr/bin/chromium ] &&
   [ -d "$KILN_SRC/tests/browser/node_modules/playwright-core" ]; then
    SHOTS=${KILN_SHOTS:-$T}
    mkdir -p "$SHOTS"
    HOME=$T timeout 300 node "$KILN_SRC/tests/browser/stackchart.test.mjs" "$URL" "$SHOTS" ||
        fail "browser checks failed"
else
    echo "note: no chromium/playwright-core: the browser part was not run" >&2
fi
serve_stop
exit 0
