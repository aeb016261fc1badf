/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of heap allocation sites (profile stage), for the charts and
 * tables that show several sites side by side: kiln heap's summary and
 * .heap.svg, kiln serve's heap views.  One naming, so that a site reads
 * the same everywhere.
 */
#ifndef KILN_PROFILE_HEAPSITE_H
#define KILN_PROFILE_HEAPSITE_H

#include <stddef.h>
#include <stdint.h>

struct kiln_prof;
struct kiln_hprof;

/*
 * Labels for n sites, samples[i] the sample of site i in p (symbolized;
 * -1: none, named "?"): "leaf (file.c:12) <- caller <- caller <- caller
 * <- ...", allocator frames (operator new, ...) skipped.  Labels that
 * would be equal are made distinct: more callers, then every frame's
 * file:line, then the leaf's address, then " #k".  *out gets n strings
 * (kiln_heapsite_labels_free() them).  0 or -ENOMEM.
 */
int kiln_heapsite_labels(struct kiln_prof *p, const long *samples, size_t n,
			 char ***out);
void kiln_heapsite_labels_free(char **labels, size_t n);

/*
 * The sites of a finished analysis that held the most memory at any time
 * (their largest value in kiln_hprof_site_series()), most first, ties
 * by stack id: up to n stack ids into ids.  How many sites held any
 * memory at all (may be more than n), or -ENOMEM.
 */
long kiln_heapsite_top(const struct kiln_hprof *h, size_t n, uint32_t *ids);

#endif
