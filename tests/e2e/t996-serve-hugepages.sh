#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# kiln serve's views are big arrays mapped whole and dropped per request;
# on a kernel that gives transparent huge pages where asked (THP
# "madvise", Debian's default) and glibc >= 2.35, kiln serve starts itself
# again with glibc.malloc.hugetlb=1 so that glibc asks for them
# (cli.h, kiln_serve_hugepages()): a transformed view of 150,000 distinct
# stacks is then backed by huge pages (AnonHugePages), the user's own
# tunables kept and their value saved for what kiln serve starts.  A user who names the tunable keeps it as given, and
# nothing is started again.  (ASan's allocator ignores glibc's tunables.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"

grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null ||
    skip "transparent huge pages not in madvise mode here"
v=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
[ "$(printf '%s\n2.35\n' "$v" | sort -V | head -1)" = 2.35 ] || skip "glibc $v < 2.35"

# 150,000 distinct stacks of depth 12: the copy's stacks alone 7 MB.
awk 'BEGIN { for (i = 0; i < 150000; i++) {
    s = "main"; for (d = 0; d < 11; d++) s = s ";f" (int(i / (3 ^ d)) % 3) "_" d;
    print s ";leaf" i, 1 + i % 7 } }' > "$T/big.collapsed"

# environ PID: the process's environment as it was started, a line each.
environ() { tr '\0' '\n' < "/proc/$1/environ"; }

export GLIBC_TUNABLES=glibc.malloc.perturb=0
serve_start -q "$T/big.collapsed"
serve_loaded
environ "$SERVE_PID" > "$T/env"
# (glibc rewrites GLIBC_TUNABLES in place as it parses it: only the
# saved value can be read back as given.)
has "$T/env" '^KILN_SERVE_TUNABLES==glibc\.malloc\.perturb=0$'
before=$(awk '/^thp_fault_alloc /{print $2}' /proc/vmstat)
expect_get 200 "/api/flame?p=0&tf=mf:main"
huge=$(awk '/^AnonHugePages:/{print $2}' "/proc/$SERVE_PID/smaps_rollup")
after=$(awk '/^thp_fault_alloc /{print $2}' /proc/vmstat)
if [ "${huge:-0}" -eq 0 ]; then
    [ "${after:-0}" -gt "${before:-0}" ] || skip "the kernel gave no huge page (memory fragmented?)"
    fail "the view has no huge page (AnonHugePages 0)"
fi
serve_stop

# The user's own value of the tunable stands; no second start.
export GLIBC_TUNABLES=glibc.malloc.hugetlb=0
serve_start -q "$T/big.collapsed"
serve_loaded
environ "$SERVE_PID" > "$T/env0"
has "$T/env0" '^GLIBC_TUNABLES=glibc\.malloc\.hugetlb=0$'
! grep -q '^KILN_SERVE_TUNABLES' "$T/env0" || fail "started again though the user named the tunable"
expect_get 200 "/api/flame?p=0&tf=mf:main"
huge=$(awk '/^AnonHugePages:/{print $2}' "/proc/$SERVE_PID/smaps_rollup")
[ "${huge:-0}" -eq 0 ] || fail "huge pages ($huge kB) where the user turned them off"
serve_stop
exit 0
