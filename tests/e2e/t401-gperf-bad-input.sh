#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad gperftools CPU profiles: exit 2 with the file name, the format and
# the byte offset where the file goes wrong; nothing written.
. "$(dirname "$0")/lib.sh"

# A small valid 64-bit profile: header, one record, trailer, maps.
w() { printf "$(printf '%016x' "$1" | sed -E 's/(..)(..)(..)(..)(..)(..)(..)(..)/\\x\8\\x\7\\x\6\\x\5\\x\4\\x\3\\x\2\\x\1/')"; }
{
    w 0; w 3; w 0; w 10000; w 0
    w 5; w 2; w $((0x401234)); w $((0x401300))
    w 0; w 1; w 0
    echo "00400000-00402000 r-xp 00000000 08:01 1 /nonexistent/prog"
} > "$T/good.prof"
expect_status 0 "$KILN" top "$T/good.prof"
has "$T/out" " \[prog\]$"
has "$T/out" "50ms"
expect_status 0 "$KILN" top --addresses "$T/good.prof"
has "$T/out" " 0000000000401234 \[prog\]$"

# Cut inside the record.
head -c 60 "$T/good.prof" > "$T/cut.prof"
expect_status 2 "$KILN" top "$T/cut.prof"
has "$T/err" "^kiln: '.*cut.prof': read as gperftools: byte 40: record truncated"

# Cut before the trailer.
head -c 72 "$T/good.prof" > "$T/notrailer.prof"
expect_status 2 "$KILN" convert "$T/notrailer.prof" -o "$T/out.pb.gz"
has "$T/err" "'.*notrailer.prof': read as gperftools: byte 72: .*trailer"
[ ! -e "$T/out.pb.gz" ] || fail "output written for bad input"

# Cut inside the header.
head -c 20 "$T/good.prof" > "$T/hdr.prof"
expect_status 2 "$KILN" top "$T/hdr.prof"
has "$T/err" "'.*hdr.prof': read as gperftools: byte [0-9]+: header truncated"

# A real profile cut in the middle.
PROFILER=/usr/lib/x86_64-linux-gnu/libprofiler.so
if [ -e "$PROFILER" ]; then
    LD_PRELOAD=$PROFILER CPUPROFILE=$T/real CPUPROFILE_FREQUENCY=250 \
        "$WL/shares" 0.3 2>/dev/null
    head -c 200 "$T/real" > "$T/real-cut"
    expect_status 2 "$KILN" top "$T/real-cut"
    has "$T/err" "'.*real-cut': read as gperftools: byte [0-9]+: "
fi
echo ok
