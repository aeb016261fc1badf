/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap analysis's own functions across its files (profile stage):
 * hprof.c (the events), hprof-time.c (memory over time's buckets) and
 * hprof-marks.c (time-index marks, resuming).
 * Not for other modules: hprof.h is the interface.
 */
#ifndef KILN_PROFILE_HPROFINT_H
#define KILN_PROFILE_HPROFINT_H

#include "profile/hprof.h"

/* A live block, in the table h->live. */
struct kiln_hprof_live {
	uint64_t ptr;		/* 0: empty slot */
	uint64_t size;
	uint64_t t;		/* allocated then (the allocation list) */
	uint32_t stack;
	uint32_t tid;		/* | its mark generation, LIVE_IN_RANGE */
};

/* Thread ids stay below 2^22 (pid_max); above them a block keeps the
 * number of time-index marks taken before it was allocated (its
 * generation, kiln_hprof_mark()), and the top bit marks blocks allocated
 * inside the window of a windowed analysis. */
#define LIVE_TID 0x003fffffu
#define LIVE_GEN_SHIFT 22
#define LIVE_GEN(tid) (((tid) >> LIVE_GEN_SHIFT) & 0xffu)
#define LIVE_IN_RANGE 0x80000000u
#define LIVE_FLAGS (~LIVE_TID)

/* The window opens: the heap as it is now is the range's first peak
 * candidate, and only what follows counts. */
void kiln_hprof_enter_window(struct kiln_hprof *h);

/* Halves the resolution of memory over time: buckets 2i and 2i+1 become
 * bucket i (no bucket open).  0 or -ENOMEM (nothing changed). */
int kiln_hprof_coarsen(struct kiln_hprof *h);

/* Closes the open bucket: a history point for each stack that changed
 * in it.  0 or -ENOMEM. */
int kiln_hprof_close_bucket(struct kiln_hprof *h);

#endif
