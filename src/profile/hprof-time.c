/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap analysis, memory over time (profile stage): the buckets' closing
 * and coarsening, for hprof.c (which opens them as the clock moves, see
 * there).  Split from hprof.c, whose per-event code is the rest.
 */
#include <errno.h>
#include <stdlib.h>

#include "profile/hprof.h"
#include "profile/hprofint.h"

/*
 * Halves the resolution: buckets 2i and 2i+1 become bucket i.  Only with
 * no bucket open (no dirty stacks).  A stack's value at the merged
 * bucket's maximum is its value at the larger of the two maxima.
 */
int kiln_hprof_coarsen(struct kiln_hprof *h)
{
	uint32_t n = h->nbuckets, i, j, k;
	size_t total = 0;
	uint8_t *pick = calloc(n / 2 + 1, 1);

	/* Without it the merged buckets would silently take other values
	 * than with it: out of memory is said, not guessed around. */
	if (!pick)
		return -ENOMEM;

	for (i = 0; i < (n + 1) / 2; i++) {
		double mx = h->total_max[2 * i];

		if (2 * i + 1 < n) {
			if (h->total_max[2 * i + 1] > mx) {
				mx = h->total_max[2 * i + 1];
				pick[i] = 1;
			}
			h->total_end[i] = h->total_end[2 * i + 1];
		} else {
			h->total_end[i] = h->total_end[2 * i];
		}
		h->total_max[i] = mx;
		h->calls_n[i] = h->calls_n[2 * i] +
				(2 * i + 1 < n ? h->calls_n[2 * i + 1] : 0);
		h->temp_n[i] = h->temp_n[2 * i] +
			       (2 * i + 1 < n ? h->temp_n[2 * i + 1] : 0);
	}
	for (i = (n + 1) / 2; i < n; i++)
		h->total_end[i] = h->total_max[i] = h->calls_n[i] =
			h->temp_n[i] = 0;
	h->nbuckets = (n + 1) / 2;
	h->bucket_ns *= 2;
	for (k = 1; k <= h->nsites; k++) {
		struct kiln_hprof_site *s = &h->sites[k];
		float prev_end = 0;
		uint32_t m = 0;

		for (j = 0; j < s->nhist; j++) {
			struct kiln_hprof_pt e = s->hist[j];
			uint32_t nb = e.bucket / 2;
			bool second = e.bucket & 1;
			bool want_second = pick[nb];

			if (m && s->hist[m - 1].bucket == nb) {
				/* both halves: the first is already in */
				if (want_second)
					s->hist[m - 1].at_max = e.at_max;
				s->hist[m - 1].end = e.end;
			} else {
				struct kiln_hprof_pt o = { nb, e.at_max, e.end };

				if (second && !want_second)
					o.at_max = prev_end;	/* unchanged in 2i */
				else if (!second && want_second && 2 * nb + 1 < n)
					o.at_max = e.end;	/* carried into 2i+1 */
				s->hist[m++] = o;
			}
			prev_end = e.end;
		}
		s->nhist = m;
		total += m;
	}
	h->hist_total = total;
	free(pick);
	return 0;
}

/* Closes the open bucket: a point for each stack that changed in it. */
int kiln_hprof_close_bucket(struct kiln_hprof *h)
{
	uint32_t b = h->nbuckets - 1;
	size_t i;

	for (i = 0; i < h->ndirty; i++) {
		struct kiln_hprof_site *s = &h->sites[h->dirty[i]];
		struct kiln_hprof_pt *e;

		if (s->nhist == s->hist_alloc) {
			uint32_t na = s->hist_alloc ? s->hist_alloc * 2 : 4;
			void *q = realloc(s->hist, na * sizeof(*s->hist));

			if (!q)
				return -ENOMEM;
			s->hist = q;
			s->hist_alloc = na;
		}
		e = &s->hist[s->nhist++];
		e->bucket = b;
		e->at_max = (float)(s->bsnap_epoch == h->bepoch ? s->bsnap
							       : s->live_bytes);
		e->end = (float)s->live_bytes;
		s->dirty = 0;
		h->hist_total++;
	}
	h->ndirty = 0;
	return 0;
}
