#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln convert and flame never write over an input file.
. "$(dirname "$0")/lib.sh"

cp "$KILN_SRC/tests/fixtures/demo/demo.perf.gz" "$T/in.perf.gz"
sum=$(md5sum < "$T/in.perf.gz")
ln -s "$T/in.perf.gz" "$T/link.perf.gz"
expect_status 2 "$KILN" convert "$T/in.perf.gz" -o "$T/link.perf.gz" --to perf-script
has "$T/err" "refusing to write over the input"
expect_status 2 "$KILN" flame "$T/in.perf.gz" -o "$T/in.perf.gz"
has "$T/err" "refusing to write over the input"
[ "$(md5sum < "$T/in.perf.gz")" = "$sum" ] || fail "input changed"
echo ok
