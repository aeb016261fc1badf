/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heap counts as a pprof heap profile (profile stage): the one builder
 * that both the in-process heap dumps and the trace analysis use; see
 * heapprof.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "profile/heapprof.h"
#include "profile/maptab.h"
#include "profile/profile.h"
#include "util/buf.h"

double kiln_heapprof_weight(uint64_t R, uint64_t size)
{
	double p;

	if (!R)
		return 1.0;
	/* The probability that the block was reported. */
	p = -expm1(-(double)size / (double)R);
	return p > 0 ? 1.0 / p : 1.0;
}

static const char *const go_types[] = {
	"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
	"inuse_space/bytes", "peak_objects/count", "peak_space/bytes" };
static const char *const measure_types[] = {
	"allocated/bytes", "calls/count", "peak/bytes", "leaked/bytes",
	"temporary/count" };

int kiln_heapprof_init(struct kiln_heapprof *b, struct kiln_prof *p,
		       enum kiln_heapprof_layout layout, bool allocs,
		       uint64_t sample_bytes)
{
	int err;

	*b = (struct kiln_heapprof){ .p = p, .layout = layout };
	switch (layout) {
	case KILN_HEAPPROF_GO:
		err = kiln_prof_set_types_str(p, go_types, 4);
		break;
	case KILN_HEAPPROF_GO_PEAK:
		err = kiln_prof_set_types_str(p, go_types, 6);
		break;
	default:
		err = kiln_prof_set_types_str(p, measure_types, 5);
		break;
	}
	if (err)
		return err;
	if (layout == KILN_HEAPPROF_MEASURES)
		p->default_type = p->types[0].type;
	else
		p->default_type = p->types[allocs ? 1 : 3].type;
	p->period_type.type = kiln_prof_interns(p, "space");
	p->period_type.unit = kiln_prof_interns(p, "bytes");
	p->period = sample_bytes ? (int64_t)sample_bytes : 1;
	return 0;
}

static int64_t rnd(double v)
{
	return (int64_t)llround(v);
}

int kiln_heapprof_add(struct kiln_heapprof *b,
		      const struct kiln_heapprof_counts *c, const uint64_t *pcs,
		      uint32_t depth, const struct kiln_maptab *maps, long *index)
{
	int64_t v[6];
	size_t nv, j;
	int err;

	*index = -1;
	if (b->layout == KILN_HEAPPROF_MEASURES) {
		v[0] = rnd(c->alloc_space);
		v[1] = rnd(c->alloc_objects);
		v[2] = rnd(c->peak_space);
		v[3] = rnd(c->inuse_space);
		v[4] = rnd(c->temporary);
		nv = 5;
	} else {
		v[0] = rnd(c->alloc_objects);
		v[1] = rnd(c->alloc_space);
		v[2] = rnd(c->inuse_objects);
		v[3] = rnd(c->inuse_space);
		v[4] = rnd(c->peak_objects);
		v[5] = rnd(c->peak_space);
		nv = b->layout == KILN_HEAPPROF_GO_PEAK ? 6 : 4;
	}
	for (j = 0; j < nv && !v[j]; j++)
		;
	if (j == nv)
		return 0;
	err = kiln_array_grow((void **)&b->locs, &b->locs_alloc, (size_t)depth + 1,
			      sizeof(*b->locs));
	if (err)
		return err;
	for (j = 0; j < depth; j++) {
		/* A return address: the call is the byte before. */
		uint64_t a = pcs[j] ? pcs[j] - 1 : 0;

		b->locs[j] = kiln_prof_location(b->p, kiln_maptab_find(maps, a),
						a, NULL, 0);
	}
	*index = kiln_prof_add_sample(b->p, b->locs, depth, v, 0);
	return 0;
}

void kiln_heapprof_release(struct kiln_heapprof *b)
{
	free(b->locs);
	b->locs = NULL;
	b->locs_alloc = 0;
}
