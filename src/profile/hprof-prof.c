/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap analysis (profile stage): a finished analysis as data -- one
 * stack's memory over time, and the profile of every stack's measures.
 * See hprof.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "profile/heapprof.h"
#include "profile/hprof.h"
#include "profile/maptab.h"
#include "profile/profile.h"

void kiln_hprof_site_series(const struct kiln_hprof *h, uint32_t id, double *out)
{
	const struct kiln_hprof_site *s = &h->sites[id];
	double carried = 0;
	uint32_t b, j = 0;

	for (b = 0; b < h->nbuckets; b++) {
		if (j < s->nhist && s->hist[j].bucket == b) {
			out[b] = s->hist[j].at_max;
			carried = s->hist[j].end;
			j++;
		} else {
			out[b] = carried;
		}
	}
}

int kiln_hprof_prof(const struct kiln_hprof *h, enum kiln_hprof_layout layout,
		   struct kiln_prof *p, long **sample_of)
{
	struct kiln_maptab *mc = NULL;
	struct kiln_heapprof hp;
	size_t i;
	long *so = NULL;
	int err;

	err = kiln_heapprof_init(&hp, p, layout == KILN_HPROF_GO ?
				 KILN_HEAPPROF_GO_PEAK : KILN_HEAPPROF_MEASURES,
				 false, h->sample_bytes);
	if (err)
		return err;
	p->duration_nanos = (int64_t)(h->tot.t_last - h->tot.t_first);
	mc = calloc(h->nmaps + 1, sizeof(*mc));
	so = malloc((h->nsites + 1) * sizeof(*so));
	if (!mc || !so) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 1; i <= h->nmaps; i++) {
		err = kiln_maptab_add_text(&mc[i], p, h->maps[i], h->maps_len[i]);
		if (err)
			goto out;
	}
	so[0] = -1;
	for (i = 1; i <= h->nsites; i++) {
		const struct kiln_hprof_site *s = &h->sites[i];
		const struct kiln_heapprof_counts c = {
			.alloc_objects = s->calls, .alloc_space = s->bytes,
			.inuse_objects = s->live_objs, .inuse_space = s->live_bytes,
			.peak_objects = s->peak_objs, .peak_space = s->peak_bytes,
			.temporary = s->temporary,
		};

		err = kiln_heapprof_add(&hp, &c, h->pcs + s->pc0, s->depth,
					&mc[s->maps], &so[i]);
		if (err)
			goto out;
	}
	err = kiln_prof_error(p);
out:
	if (mc)
		for (i = 0; i <= h->nmaps; i++)
			kiln_maptab_release(&mc[i]);
	free(mc);
	kiln_heapprof_release(&hp);
	if (!err && sample_of)
		*sample_of = so;
	else
		free(so);
	return err;
}
