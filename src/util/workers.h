/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How many threads kiln's own work may use (util stage): the readers
 * that split a large input over threads (format/perfscript-par.c) ask
 * here.  By default the CPUs this process may run on; the CLI sets it
 * from KILN_THREADS (1: everything on one thread).
 */
#ifndef KILN_UTIL_WORKERS_H
#define KILN_UTIL_WORKERS_H

#include <stddef.h>

/* The number of threads to use, at least 1. */
size_t kiln_workers(void);
/* Sets it; 0 goes back to the CPU count. */
void kiln_workers_set(size_t n);

#endif
