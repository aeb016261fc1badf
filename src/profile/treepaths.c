/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A selection's stacks as paths of frame names (profile stage), from
 * which kiln serve's call tree makes only the levels a page opens
 * (kiln_tree_expand() in tree.c).  See tree.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "util/buf.h"

void kiln_tree_paths_release(struct kiln_tree_paths *ps)
{
	free(ps->names);
	free(ps->off);
	free(ps->sample);
	free(ps->value);
	memset(ps, 0, sizeof(*ps));
}

size_t kiln_tree_paths_bytes(const struct kiln_tree_paths *ps)
{
	return ps->off ? ps->off[ps->n] * sizeof(*ps->names) +
			 (ps->n + 1) * sizeof(*ps->off) +
			 ps->n * (sizeof(*ps->sample) + sizeof(*ps->value)) : 0;
}

/* Each location's frame names, innermost first: location l's are
 * (*names)[(*at)[l] .. (*at)[l + 1]).  One pass over the locations
 * instead of their lines and functions for every frame of every sample
 * (those reads missed the cache on a big profile).  0 or -ENOMEM. */
static int loc_names(struct kiln_prof *p, uint32_t **names, uint32_t **at)
{
	struct kiln_frame *fr = NULL;
	size_t cap = 0, ncap = 0, n = 0, l;
	long nf, k;
	int err = 0;

	*names = NULL;
	*at = malloc((p->nlocations + 2) * sizeof(**at));
	if (!*at)
		return -ENOMEM;
	(*at)[0] = (*at)[1] = 0;
	for (l = 1; l <= p->nlocations && !err; l++) {
		nf = kiln_prof_loc_frames(p, (uint32_t)l, &fr, &cap);
		if (nf < 0 || n + (size_t)nf > UINT32_MAX ||
		    KILN_GROW(*names, ncap, n + (size_t)nf + 1, 1024)) {
			err = nf < 0 ? (int)nf : -ENOMEM;
			break;
		}
		for (k = 0; k < nf; k++)
			(*names)[n++] = fr[k].name;
		(*at)[l + 1] = (uint32_t)n;
	}
	free(fr);
	return err;
}

int kiln_tree_paths_build(struct kiln_tree_paths *ps, struct kiln_prof *p,
			  int type, bool reverse)
{
	return kiln_tree_paths_build_w(ps, p, type, reverse, NULL);
}

int kiln_tree_paths_build_w(struct kiln_tree_paths *ps, struct kiln_prof *p,
			    int type, bool reverse, const int64_t *w)
{
	uint32_t *ln = NULL, *lat = NULL;
	size_t ncap = 0, ocap = 0, scap = 0, i, used = 0;
	int err = 0;

	kiln_tree_paths_release(ps);
	ps->reverse = reverse;
	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	err = loc_names(p, &ln, &lat);
	for (i = 0; i < p->nsamples && !err; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const uint32_t *locs = kiln_prof_sample_locs(p, s);
		int64_t v = kiln_prof_weight(p, i, type, w);
		size_t nf = 0, k, j;

		if (v <= 0)
			continue;
		for (k = 0; k < s->depth; k++)
			nf += lat[locs[k] + 1] - lat[locs[k]];
		if (used + nf > UINT32_MAX ||
		    KILN_GROW(ps->names, ncap, used + nf, 1024) ||
		    KILN_GROW(ps->off, ocap, ps->n + 2, 256) ||
		    KILN_GROW(ps->sample, scap, ps->n + 1, 256)) {
			err = -ENOMEM;
			break;
		}
		ps->off[ps->n] = (uint32_t)used;
		/* The frames leaf first are the locations' in order, each
		 * innermost first; from the root, all of it backwards. */
		for (k = 0; k < s->depth; k++) {
			uint32_t l = locs[reverse ? k : s->depth - 1 - k];

			if (reverse)
				for (j = lat[l]; j < lat[l + 1]; j++)
					ps->names[used++] = ln[j];
			else
				for (j = lat[l + 1]; j-- > lat[l];)
					ps->names[used++] = ln[j];
		}
		ps->sample[ps->n] = (uint32_t)i;
		ps->n++;
		ps->total = kiln_sat_add(ps->total, v);
	}
	free(ln);
	free(lat);
	if (!err && !(ps->value = malloc((ps->n + 1) * sizeof(*ps->value))))
		err = -ENOMEM;
	if (!err && KILN_GROW(ps->off, ocap, ps->n + 1, 256))
		err = -ENOMEM;
	if (err) {
		kiln_tree_paths_release(ps);
		return err;
	}
	ps->off[ps->n] = (uint32_t)used;
	for (i = 0; i < ps->n; i++)
		ps->value[i] = kiln_prof_weight(p, ps->sample[i], type, w);
	return 0;
}

size_t kiln_tree_paths_narrow(const struct kiln_tree_paths *ps, uint32_t *sel,
			      size_t n, uint32_t depth, uint32_t name)
{
	size_t i, m = 0;

	for (i = 0; i < n; i++) {
		uint32_t e = sel[i];

		if (ps->off[e] + depth < ps->off[e + 1] &&
		    ps->names[ps->off[e] + depth] == name)
			sel[m++] = e;
	}
	return m;
}
