#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Inputs that would take all memory or block: a limit on what is held in
# memory (KILN_MAX_INPUT; 4 GiB by default) for decompressed data and
# inputs that are not regular files, with exit 2 and a message naming the
# file and the limit; files a profile names (to symbolize) opened only if
# regular and never waited on; --no-local-symbols opens none.
. "$(dirname "$0")/lib.sh"
F=$KILN_SRC/tests/fixtures

# An endless input.  (With the default limit it ends the same way after
# 4 GiB; 16 MiB keeps the test quick.)
KILN_MAX_INPUT=16M expect_status 2 "$KILN" top /dev/zero
has "$T/err" "^kiln: '/dev/zero': more than 16 MiB of input, the limit .*KILN_MAX_INPUT"
hasnt "$T/err" "out of memory"
# The same through a pipe.
KILN_MAX_INPUT=1M expect_status 2 sh -c "head -c 3000000 /dev/zero | \"\$0\" top -" "$KILN"
has "$T/err" "'-': more than 1 MiB of input"

# A gzip bomb in miniature: 50 MB of zeros in 50 KB.
head -c 50000000 /dev/zero | gzip -9 > "$T/bomb.gz"
KILN_MAX_INPUT=10M expect_status 2 "$KILN" top "$T/bomb.gz"
has "$T/err" "^kiln: '.*bomb.gz': read as gzip: byte [0-9]+: the data inflates to more than 10 MiB, the limit for decompressed input \(set KILN_MAX_INPUT to raise it\)"
# Under the limit (and by default) the same file is read, as zeros.
KILN_MAX_INPUT=64M expect_status 2 "$KILN" top "$T/bomb.gz"
hasnt "$T/err" "inflates to more than"
expect_status 2 env KILN_MAX_INPUT=lots "$KILN" top "$T/bomb.gz"
has "$T/err" "bad KILN_MAX_INPUT 'lots'"
"$KILN" help top | grep -q "KILN_MAX_INPUT=SIZE" || fail "kiln help top does not document KILN_MAX_INPUT"

# A profile whose maps name a FIFO as the program: read without waiting
# on it (open(2) of a FIFO blocks until a writer comes).  `timeout` is
# only a backstop, far beyond what reading takes, so that a hang fails
# the test instead of stalling the suite.
mkfifo "$T/prog"
w() { printf "$(printf '%016x' "$1" | sed -E 's/(..)(..)(..)(..)(..)(..)(..)(..)/\\x\8\\x\7\\x\6\\x\5\\x\4\\x\3\\x\2\\x\1/')"; }
{
    w 0; w 3; w 0; w 10000; w 0
    w 5; w 2; w $((0x401234)); w $((0x401300))
    w 0; w 1; w 0
    echo "00400000-00402000 r-xp 00000000 08:01 1 $T/prog"
} > "$T/fifo.prof"
expect_status 0 timeout 300 "$KILN" top --addresses "$T/fifo.prof"
has "$T/out" " 0000000000401234 \[prog\]$"

# --no-local-symbols: the C library frames of a gperftools profile stay
# unnamed, "[libc.so.6]" (without it they are named from this machine's libc).
expect_status 0 "$KILN" top -n 0 "$F/gperf/shares-250hz.prof"
has "$T/out" "__libc_start_main"
expect_status 0 "$KILN" top -n 0 --no-local-symbols "$F/gperf/shares-250hz.prof"
hasnt "$T/out" "__libc_start_main"
has "$T/out" " \[libc.so.6\]$"
KILN_NO_LOCAL_SYMBOLS=1 expect_status 0 "$KILN" flame "$F/gperf/shares-250hz.prof" -o "$T/f.svg"
hasnt "$T/f.svg" "__libc_start_main"
echo ok
