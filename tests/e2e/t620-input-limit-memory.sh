#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# What an input stopped at KILN_MAX_INPUT costs in memory: the limit and a
# small constant, not twice the limit.  kiln top of /dev/zero (an endless
# input), a gzip bomb and a zstd bomb, with KILN_MAX_INPUT=256M, in a
# process whose address space is limited to 256 MiB + 96 MiB (kiln itself
# takes under 60): each stops with exit 2 and the limit's message.
# (Before: the buffer doubled past the limit, to 512 MiB, and the reading
# ended with "out of memory", exit 1.)  noasan: ASan's shadow memory needs
# terabytes of address space.
. "$(dirname "$0")/lib.sh"

head -c 400000000 /dev/zero | gzip -1 > "$T/bomb.gz"
limited() { (ulimit -v $((352 * 1024)) && KILN_MAX_INPUT=256M exec "$KILN" top "$@"); }
expect_status 2 limited /dev/zero
has "$T/err" "^kiln: '/dev/zero': more than 256 MiB of input, the limit"
expect_status 2 limited "$T/bomb.gz"
has "$T/err" "the data inflates to more than 256 MiB, the limit for decompressed input"
if command -v zstd > /dev/null; then
    head -c 400000000 /dev/zero | zstd -q -1 > "$T/bomb.zst"
    expect_status 2 limited "$T/bomb.zst"
    has "$T/err" "inflates to more than 256 MiB|more than 256 MiB"
fi
hasnt "$T/err" "out of memory"
echo ok
