#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Broken perf script and collapsed files: exit status 2 and a message that
# names the file, the format it was read as, and the line.
. "$(dirname "$0")/lib.sh"

: > "$T/empty.perf"
expect_status 2 "$KILN" top "$T/empty.perf"
has "$T/err" "^kiln: '.*empty.perf': .*empty"

printf '\t    11aa burn_a+0x29 (/bin/shares)\n\n' > "$T/orphan.perf"
expect_status 2 "$KILN" convert "$T/orphan.perf" -o "$T/out.pb.gz"
has "$T/err" "^kiln: '.*orphan.perf': read as perf-script: line 1: a stack frame line before any sample header"
[ ! -e "$T/out.pb.gz" ] || fail "output written for bad input"

# A header without a time stamp is one (perf script -F without time), a
# line that has no event either is not.
printf 'shares 12 1.000001: 1001001 cpu-clock: \n\t 11aa burn_a+0x29 (/bin/shares)\n\nshares 12 cpu-clock: \n\t 11aa burn_a (/bin/shares)\n' > "$T/notime.perf"
expect_status 0 "$KILN" top "$T/notime.perf"
has "$T/out" " burn_a$"
printf 'shares 12 1.000001: 1001001 cpu-clock: \n\t 11aa burn_a+0x29 (/bin/shares)\n\nshares 12 burning\n\t 11aa burn_a (/bin/shares)\n' > "$T/nohdr.perf"
expect_status 2 "$KILN" top "$T/nohdr.perf"
has "$T/err" "'.*nohdr.perf': read as perf-script: line 4: not a sample header"

printf 'shares 12 1.000001: 1001001 cpu-clock: \n\t 11aa burn_a+0x29 (/bin/shares)\n\tthis is not a frame\n\tnor this\n' > "$T/garbage.perf"
expect_status 2 "$KILN" flame "$T/garbage.perf" -o "$T/out.svg"
has "$T/err" "'.*garbage.perf': read as perf-script: line 3: not a stack frame"

# One malformed line among good ones (a line cut by a full disk, a stray
# message in the dump): skipped, counted in one warning, the rest read.
printf 'shares 12 1.000001: 1001001 cpu-clock: \n\t 11aa burn_a+0x29 (/bin/shares)\n\tcut-off-li\n\t 11bb main+0x9 (/bin/shares)\n\nshares 12 1.000002: 1001001 cpu-clock: \n\t 11aa burn_a+0x29 (/bin/shares)\n\t 11bb main+0x9 (/bin/shares)\n\n' > "$T/onebad.perf"
expect_status 0 "$KILN" top --cum "$T/onebad.perf"
has "$T/err" "^kiln: warning: '.*onebad.perf': skipped 1 malformed line, first at line 3: not a stack frame"
has "$T/out" "100.00% *main$"

printf 'main;run;burn_a 12\nmain;run;burn_b\n' > "$T/nocount.collapsed"
expect_status 2 "$KILN" top "$T/nocount.collapsed"
has "$T/err" "'.*nocount.collapsed': read as collapsed: line 2: no count at the end"

printf 'main;run;burn_a 12\nmain;run;burn_b 99999999999999999999999\n' > "$T/big.collapsed"
expect_status 2 "$KILN" top "$T/big.collapsed"
has "$T/err" "read as collapsed: line 2: the count .* is too large"
# Counts that fit one by one but not added up: refused as the pprof reader
# refuses them (kiln's own pprof of them could not be read back).
printf 'main;a 5000000000000000000\nmain;b 5000000000000000000\n' > "$T/sum.collapsed"
expect_status 2 "$KILN" top "$T/sum.collapsed"
has "$T/err" "read as collapsed: line 2: the count 5000000000000000000 makes the total overflow 64 bits"

# Random text (no binary bytes, so it may be a text format): no reader
# takes it, and the message lists the formats tried and why the likeliest
# two refused it, naming none as the format it "was read as".
head -c 3000 /dev/urandom | base64 > "$T/random.txt"
expect_status 2 "$KILN" top "$T/random.txt"
has "$T/err" "'.*random.txt': no reader accepts it \(formats tried: .*pprof.*speedscope.*cpuprofile.*perf-script.*collapsed\); not collapsed: line 1: no count.*; not perf-script: line 1: "
hasnt "$T/err" "read as"
# Source code: a line, then indented lines, as perf script's header and
# frames are; but no frame, so not "read as perf-script" either.
printf 'def main():\n    return 1\n\nmain()\n' > "$T/prog.py"
expect_status 2 "$KILN" flame "$T/prog.py" -o "$T/out.svg"
has "$T/err" "'.*prog.py': no reader accepts it \(formats tried: .*\); not perf-script: line 1: .*; not collapsed: line 1: "
hasnt "$T/err" "read as"
# JSON of no profile's shape.
printf '{"hello": [1, 2, 3]}\n' > "$T/other.json"
expect_status 2 "$KILN" top "$T/other.json"
has "$T/err" "'.*other.json': no reader accepts it \(formats tried: .*\); not speedscope: .*; not cpuprofile: "
# Broken JSON that plainly is speedscope's: where it broke.
printf '{"$schema": "https://www.speedscope.app/file-format-schema.json",\n "profiles": [\n' > "$T/cut.speedscope.json"
expect_status 2 "$KILN" top "$T/cut.speedscope.json"
has "$T/err" "'.*cut.speedscope.json': read as speedscope: line [23], column [0-9]+: not JSON: "
# Random bytes.
head -c 4096 /dev/urandom > "$T/random.bin"
expect_status 2 "$KILN" top "$T/random.bin"
has "$T/err" "'.*random.bin'"
echo ok
