#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Unreadable input: a clear message naming the file (and format/position
# where there is one), exit status 2, nothing written.
. "$(dirname "$0")/lib.sh"

: > "$T/empty"
expect_status 2 "$KILN" top "$T/empty"
has "$T/err" "^kiln: '.*empty': the file is empty"

# A gzip file cut short.
seq 1 20000 | sed 's/^/main;f/; s/$/ 1/' | gzip > "$T/full.gz"
head -c 3000 "$T/full.gz" > "$T/cut.gz"
expect_status 2 "$KILN" top "$T/cut.gz"
has "$T/err" "'.*cut.gz': read as gzip: byte [0-9]+: .*truncated"

# Random bytes.
head -c 4096 /dev/urandom > "$T/random"
expect_status 2 "$KILN" convert "$T/random" -o "$T/out.pb.gz"
has "$T/err" "'.*random'"
[ ! -e "$T/out.pb.gz" ] || fail "output written for bad input"

# A directory.
expect_status 2 "$KILN" top "$T"
has "$T/err" "Is a directory"
echo ok
