#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HEAP=PREFIX across exec (the same process, a new image): the image
# before the exec writes its dump first (as exit would), and the new image
# numbers its dumps on after it instead of starting again at .0001 over
# the earlier ones.  heapexec chain: three images allocating 300, 500 and
# 700 blocks (kept), every allocation counted (KILN_HEAP_SAMPLE=0).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heapdumplib.sh"

expect_status 0 env LD_PRELOAD="$KILN_HEAP_PRELOAD" KILN_HEAP="$T/hp" KILN_HEAP_SAMPLE=0 \
    KILN_LOG=info "$WL/heapexec" chain
has "$T/err" "heap profile dump 1 \(exec\)"
has "$T/err" "heap profile dump 2 \(exec\)"
has "$T/err" "heap profile dump 3 \(exit\)"
for n in 1 2 3; do [ -s "$T/hp.000$n.heap" ] || fail "no hp.000$n.heap"; done
[ ! -e "$T/hp.0004.heap" ] || fail "a fourth dump"
hexpect "$T/hp.0001.heap" alloc_objects first_image 300
hexpect "$T/hp.0002.heap" alloc_objects second_image 500
hexpect "$T/hp.0003.heap" alloc_objects third_image 700
hexpect "$T/hp.0003.heap" inuse_objects third_image 700
echo ok
