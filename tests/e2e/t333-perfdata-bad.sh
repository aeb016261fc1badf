#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Truncated and corrupt perf.data files: exit status 2 and a message
# naming the file, perf.data and the byte offset (tests/unit/test-perfdata.c
# cuts and flips a real file at many more places).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

perf_record -q -F 999 -g -o "$T/ok.data" -- "$WL/shares" 0.2 >/dev/null 2>&1 ||
    fail "perf record failed"
size=$(stat -c %s "$T/ok.data")
for cut in 12 60 300 $((size / 2)) $((size - 9)); do
    head -c "$cut" "$T/ok.data" > "$T/cut.data"
    expect_status 2 "$KILN" top "$T/cut.data"
    has "$T/err" "^kiln: .*'$T/cut.data': read as perf.data: byte [0-9]+: "
done
# A record size field of 4 in the first record of the data section.
off=$(perf report -i "$T/ok.data" --header-only 2>/dev/null | awk '/data offset/ { print $NF }')
[ -n "$off" ] || fail "no data offset in perf report's header"
cp "$T/ok.data" "$T/bad.data"
printf '\004\000' | dd of="$T/bad.data" bs=1 seek=$((off + 6)) conv=notrunc status=none
expect_status 2 "$KILN" top "$T/bad.data"
has "$T/err" "read as perf.data: byte $off: a record of 4 bytes"
# Not a perf.data: the older format is named.
printf 'PERFFILE' > "$T/old.data"; head -c 200 /dev/zero >> "$T/old.data"
expect_status 2 "$KILN" top "$T/old.data"
exit 0
