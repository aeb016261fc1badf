#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln's command line: help, usage errors and exit statuses.
. "$(dirname "$0")/lib.sh"

expect_status 0 "$KILN" help
has "$T/out" "top"
has "$T/out" "flame"
has "$T/out" "convert"
for c in top flame convert; do
    expect_status 0 "$KILN" help $c
    has "$T/out" "^usage: kiln $c"
    expect_status 0 "$KILN" $c --help
    has "$T/out" "^usage: kiln $c"
done
expect_status 2 "$KILN"
expect_status 2 "$KILN" frobnicate
has "$T/err" "no command 'frobnicate'"
expect_status 2 "$KILN" help frobnicate
expect_status 2 "$KILN" top
has "$T/err" "no input file"
expect_status 2 "$KILN" top --bogus x
expect_status 2 "$KILN" top -n abc x
has "$T/err" "bad -n 'abc'"
expect_status 2 "$KILN" convert in.perf
has "$T/err" "no output file"
expect_status 2 "$KILN" convert in.perf -o out.unknownext
has "$T/err" "cannot tell the output format"
expect_status 2 "$KILN" convert in.perf -o x --to gif
has "$T/err" "cannot write format 'gif'"
expect_status 2 "$KILN" top "$T/does-not-exist"
has "$T/err" "cannot read '.*does-not-exist': No such file or directory"
echo ok
