#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Kernel frames ([kernel.kallsyms]) and frames without symbols ([unknown],
# a stripped copy of the workload): kernel frames keep their kind (the
# collapsed output marks them _[k]); unknown frames are named by their
# module, "[stripped-shares]" as FlameGraph names them, never a bare
# address, and kiln top --addresses keeps their addresses apart.
. "$(dirname "$0")/lib.sh"
need_perf
[ "$(id -u)" = 0 ] || skip "kernel frames need root"

cp "$WL/shares" "$T/stripped-shares"
# Without the build ID perf cannot find the unstripped copy in its cache.
strip --remove-section=.note.gnu.build-id "$T/stripped-shares" 2>/dev/null || skip "strip is not installed"
# A system call loop would do too; the page faults of a fresh process and
# timer interrupts give kernel frames in any CPU-bound run as root.
perf_record -q -F 999 -g -o "$T/perf.data" -- "$T/stripped-shares" 1 >/dev/null 2>&1 ||
    fail "perf record failed"
perf script -i "$T/perf.data" > "$T/x.perf" 2>/dev/null || fail "perf script failed"
has "$T/x.perf" '\[unknown\] \(.*/stripped-shares\)'
grep -q '(\[kernel.kallsyms\])' "$T/x.perf" || skip "no kernel frames recorded here"

expect_status 0 "$KILN" top -n 0 "$T/x.perf"
has "$T/out" ' \[stripped-shares\]$'
[ "$(grep -c 'stripped-shares' "$T/out")" = 1 ] || fail "more than one row for stripped-shares"
hasnt "$T/out" ' 0x[0-9a-f]+$'
hasnt "$T/out" '\+0x[0-9a-f]+|burn_a\+0x'
expect_status 0 "$KILN" top -n 0 --addresses "$T/x.perf"
[ "$(grep -Ec ' [0-9a-f]{16} \[stripped-shares\]$' "$T/out")" -gt 1 ] ||
    fail "kiln top --addresses merged the addresses of stripped-shares"

expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/x.collapsed"
has "$T/x.collapsed" '_\[k\]'
# The _[k] marks round-trip: read back, kernel names come without them.
expect_status 0 "$KILN" top -n 0 "$T/x.collapsed"
hasnt "$T/out" '_\[k\]$'
k=$(grep -o '[A-Za-z_0-9.]*_\[k\]' "$T/x.collapsed" | head -1 | sed 's/_\[k\]$//')
has "$T/out" " $k\$"
# pprof keeps the kernel mapping name.
expect_status 0 "$KILN" convert "$T/x.perf" -o "$T/x.pb.gz"
zcat "$T/x.pb.gz" | grep -aq 'kernel.kallsyms' || fail "no kernel mapping in the pprof file"
echo ok
