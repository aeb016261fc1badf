#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A perf.data whose binary was deleted after recording: the frames are
# named from perf's build-id cache (~/.debug, which perf record fills);
# without the cache they are named by their module, "[shares]", the
# addresses kept (kiln top --addresses).  A mapping whose file
# is now a FIFO is not opened (the file is hostile input).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perfdatalib.sh"
need_perf

mkdir -p "$T/bin"
cp "$WL/shares" "$T/bin/shares"
perf_record -q -F 999 -g -o "$T/del.data" -- "$T/bin/shares" 1 >/dev/null 2>&1 ||
    fail "perf record failed"
ls "$T"/.debug/.build-id/*/*/elf >/dev/null 2>&1 || skip "perf did not fill its build-id cache"
rm "$T/bin/shares"
compare_with_perf "$T/del.data"

# Without the cache: named by the module, apart by address.
PERF_BUILDID_DIR=$T/none "$KILN" top -n 5 "$T/del.data" > "$T/nocache.top" 2>&1 ||
    fail "kiln top without the cache failed"
has "$T/nocache.top" ' \[shares\]$'
hasnt "$T/nocache.top" 'burn_a'
PERF_BUILDID_DIR=$T/none "$KILN" top -n 0 --addresses "$T/del.data" > "$T/nocache-a.top" 2>&1 ||
    fail "kiln top --addresses without the cache failed"
[ "$(grep -Ec ' [0-9a-f]{16} \[shares\]$' "$T/nocache-a.top")" -gt 1 ] ||
    fail "kiln top --addresses shows one address of shares"

# --no-local-symbols: not even the cache is opened.
"$KILN" top -n 5 --no-local-symbols "$T/del.data" > "$T/nolocal.top" 2>&1 ||
    fail "kiln top --no-local-symbols failed"
has "$T/nolocal.top" ' \[shares\]$'

# The same path, now a FIFO: never opened (opening it would block).
mkfifo "$T/bin/shares"
PERF_BUILDID_DIR=$T/none timeout 60 "$KILN" top -n 5 "$T/del.data" > "$T/fifo.top" 2>&1 ||
    fail "kiln top with a FIFO in place of the binary failed (status $?)"
has "$T/fifo.top" ' \[shares\]$'
exit 0
