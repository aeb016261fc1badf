/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap analysis's own functions across its files (profile stage):
 * hprof.c (the events) and hprof-time.c (memory over time's buckets).
 * Not for other modules: hprof.h is the interface.
 */
#ifndef KILN_PROFILE_HPROFINT_H
#define KILN_PROFILE_HPROFINT_H

#include "profile/hprof.h"

/* Halves the resolution of memory over time: buckets 2i and 2i+1 become
 * bucket i (no bucket open).  0 or -ENOMEM (nothing changed). */
int kiln_hprof_coarsen(struct kiln_hprof *h);

/* Closes the open bucket: a history point for each stack that changed
 * in it.  0 or -ENOMEM. */
int kiln_hprof_close_bucket(struct kiln_hprof *h);

#endif
