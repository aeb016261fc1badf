#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An empty recording is explained (issue 22 item 6): a command that ends
# before one sample period says so with the period and what to do, and
# kiln top of an empty profile (or of one emptied by --focus) says why the
# table is empty instead of printing an empty table alone.
. "$(dirname "$0")/lib.sh"
need_record

# `true` uses far less than 1/99 s of CPU.
"$KILN" record -F 99 -o "$T/e.pb.gz" -- true 2> "$T/rec.err" || fail "kiln record true failed"
has "$T/rec.err" "0 samples"
has "$T/rec.err" "the profile is empty: the command used less CPU time than one sample period \(99 Hz: 10.1 ms\)"
"$KILN" top "$T/e.pb.gz" > "$T/top.txt" 2> "$T/top.err" || fail "kiln top failed"
has "$T/top.err" "'$T/e.pb.gz' holds no samples$"

"$KILN" top --focus no_such_function "$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz" \
    > "$T/f.txt" 2> "$T/f.err" || fail "kiln top --focus failed"
has "$T/f.err" "holds no samples once --focus/--ignore are applied"
# A profile with samples says nothing of the kind.
"$KILN" top "$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz" > "$T/g.txt" 2> "$T/g.err"
hasnt "$T/g.err" "holds no"
echo ok
