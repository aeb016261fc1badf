/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap tracer's clock (heap stage, libkiln.so): which clock the hooks
 * stamp their events with (kheap_stamp(), heapint.h) and the readings of
 * both clocks that let the writer turn those stamps into CLOCK_MONOTONIC
 * nanoseconds (format/heapenc.h, kiln_henc_clock()).
 *
 * clock_gettime(CLOCK_MONOTONIC) was 14% of the hooked program's CPU time
 * (two reads per malloc/free pair, bench/RESULTS-heaptrace.md).  When the
 * kernel itself keeps CLOCK_MONOTONIC on the TSC (its clocksource is
 * "tsc": it found the counter invariant and in step across CPUs), the
 * hooks read the TSC and the writer, once per round, reads both clocks
 * together: the events between two such readings are placed on the line
 * through them.  See docs/heap.md "Clock" for the precision this gives.
 */
#include <cpuid.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "heap/heapint.h"
#include "heap/traceint.h"
#include "runtime/env.h"
#include "util/buf.h"
#include "util/file.h"

/* The CPU's TSC runs at one rate in every P- and C-state. */
static bool tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return false;
	return d & (1u << 8);
#else
	return false;
#endif
}

/* The kernel keeps CLOCK_MONOTONIC on the TSC. */
static bool kernel_on_tsc(void)
{
	struct kiln_buf b = KILN_BUF_INIT;
	bool yes;

	yes = kiln_read_proc(AT_FDCWD,
			     "/sys/devices/system/clocksource/clocksource0/current_clocksource",
			     &b) == 0 &&
	      b.len >= 3 && !memcmp(b.data, "tsc", 3) && (b.len == 3 || b.data[3] == '\n');
	kiln_buf_release(&b);
	return yes;
}

const char *kheap_clock_choose(void)
{
	int want = kiln_env()->heap_clock;

	kheap_tsc = false;
#if defined(__x86_64__)
	/* KILN_HEAP_CLOCK=tsc: the user vouches for the TSC (valgrind, for
	 * one, does not report it invariant). */
	if (want == KILN_ENV_CLOCK_TSC ||
	    (want == KILN_ENV_CLOCK_AUTO && tsc_invariant() && kernel_on_tsc()))
		kheap_tsc = true;
#endif
	return kheap_tsc ? "tsc" : "monotonic";
}

/* The tightest pair of TSC reads around a clock_gettime() seen so far. */
static uint64_t best_gap = UINT64_MAX;

bool kheap_clock_pair(uint64_t *raw, uint64_t *ns)
{
	uint64_t a, b, m, gap = UINT64_MAX;
	int i;

	if (!kheap_tsc) {
		*raw = *ns = kheap_now();
		return true;
	}
	/*
	 * The TSC on both sides of a clock_gettime(): the middle is taken
	 * as the moment it read, off by half the gap at most.  A
	 * preemption between the reads (a crowded machine) widens the gap
	 * to milliseconds: up to 8 tries, the tightest kept, until one is
	 * within 4 times the tightest ever seen (about 50 ns here).
	 */
	for (i = 0; i < 8; i++) {
		a = kheap_stamp();
		m = kheap_now();
		b = kheap_stamp();
		if (b - a < gap) {
			gap = b - a;
			*raw = a + gap / 2;
			*ns = m;
		}
		if (gap < best_gap)
			best_gap = gap;
		if (gap <= 4 * best_gap)
			return true;
	}
	return false;
}
