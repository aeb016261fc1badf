/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How many threads kiln's own work may use (util stage): the readers
 * that split a large input over threads (format/perfscript-par.c, a heap
 * trace's analysis beside its decoding in format/heaptrace-stream.c) ask
 * here.  By default the CPUs this process may run on; the CLI sets it
 * from KILN_THREADS (1: everything in the calling thread).
 */
#ifndef KILN_UTIL_WORKERS_H
#define KILN_UTIL_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

/* The number of threads to use, at least 1. */
size_t kiln_workers(void);
/* Sets it; 0 goes back to the CPU count. */
void kiln_workers_set(size_t n);
/* Whether it was set (not 0): readers then use that many threads whether
 * or not it pays (tests; a user who knows the machine). */
bool kiln_workers_given(void);

#endif
