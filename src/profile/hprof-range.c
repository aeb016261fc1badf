/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap analysis (profile stage): a time range analysed in stretches
 * (format/heaptrace-index.c reads a range from the marks of a trace's
 * time index): the counts of one stretch added to another's analysis,
 * the per-stack sums the index kept, and the peak taken from the stretch
 * that held it.  See hprof.h.
 */
#include <errno.h>
#include <stdbool.h>

#include "profile/hprof.h"

int kiln_hprof_add_counts(struct kiln_hprof *h, const struct kiln_hprof *src)
{
	size_t i;

	if (src->nsites > h->nsites)
		return -EINVAL;
	for (i = 1; i <= src->nsites; i++) {
		h->sites[i].calls += src->sites[i].calls;
		h->sites[i].bytes += src->sites[i].bytes;
		h->sites[i].temporary += src->sites[i].temporary;
	}
	h->tot.calls += src->tot.calls;
	h->tot.allocated += src->tot.allocated;
	h->tot.temporary += src->tot.temporary;
	h->tot.cross_thread += src->tot.cross_thread;
	h->tot.reported += src->tot.reported;
	h->tot.frees += src->tot.frees;
	h->tot.lost += src->tot.lost;
	h->tot.late += src->tot.late;
	h->tot.unknown_frees += src->tot.unknown_frees;
	return 0;
}

int kiln_hprof_add_site(struct kiln_hprof *h, uint32_t id, double calls,
			double bytes, double temporary)
{
	if (!id || id > h->nsites)
		return -EINVAL;
	h->sites[id].calls += calls;
	h->sites[id].bytes += bytes;
	h->sites[id].temporary += temporary;
	return 0;
}

void kiln_hprof_take_peak(struct kiln_hprof *h, const struct kiln_hprof *src)
{
	size_t i;

	h->tot.peak = src->tot.peak;
	h->tot.peak_objs = src->tot.peak_objs;
	h->tot.peak_t = src->tot.peak_t;
	for (i = 1; i <= h->nsites; i++) {
		bool in = i <= src->nsites;

		h->sites[i].peak_bytes = in ? src->sites[i].peak_bytes : 0;
		h->sites[i].peak_objs = in ? src->sites[i].peak_objs : 0;
	}
}
