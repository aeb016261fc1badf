#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# KILN_HEAP_SAMPLE=R: about one allocation per R bytes is reported, the
# estimates scale back to the true numbers, and frees are reported for the
# sampled blocks (on whatever thread frees them) so none stays live.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heaplib.sh"

HEAP_ENV=KILN_HEAP_SAMPLE=4096 same_output "$WL/heapthreads"
heapcheck "$T/h.trace" "$WL/heapthreads"
grep -q "^header .* sample=4096 " "$T/check.txt" || fail "header without the sampling rate"
n=$(site produce allocs)
# 960000 bytes in 48-byte blocks at R=4096: ~233 samples (sd ~15).
[ "${n:-0}" -gt 150 ] && [ "${n:-0}" -lt 330 ] || { cat "$T/check.txt"; fail "$n samples of produce, want ~233"; }
# The estimate of 20000 allocations has a standard deviation of ~6.5%.
within "$(site produce est_allocs)" 20000 5000 || { cat "$T/check.txt"; fail "estimate off"; }
within "$(site produce est_bytes)" 960000 240000 || { cat "$T/check.txt"; fail "estimate off"; }
expect_site produce live 0
# Blocks of 8 MiB are always sampled at R=4096.
rm -f "$T/h.trace"
HEAP_ENV=KILN_HEAP_SAMPLE=4096 same_output "$WL/heapbasic"
heapcheck "$T/h.trace" "$WL/heapbasic"
expect_site peak_big allocs 1
expect_site peak_big live 0
# 30000 sampled blocks live at once (the set grows from 3072 to 49152
# blocks while the program runs): every free found, the leak exact.
rm -f "$T/h.trace"
HEAP_ENV=KILN_HEAP_SAMPLE=1 same_output "$WL/heaplive"
heapcheck "$T/h.trace" "$WL/heaplive"
expect_total lost 0
expect_site hold_many allocs 30000
expect_site hold_many live 100
expect_site hold_many live_bytes 6400
expect_site churn allocs 30000
expect_site churn live 0
# A bad value: said so, and every allocation is traced.
rm -f "$T/h.trace"
HEAP_ENV=KILN_HEAP_SAMPLE=lots same_output "$WL/heapbasic"
has "$T/agent.err" "bad KILN_HEAP_SAMPLE 'lots'"
heapcheck "$T/h.trace" "$WL/heapbasic"
expect_site alloc_small allocs 1000
echo ok
