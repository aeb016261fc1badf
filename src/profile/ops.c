/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-profile operations (profile stage): merging two profiles, or
 * some of one's samples into another (a selection's copy), and taking
 * the samples out to add them again (filter.c's operations).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

/* Maps of src ids to dst ids, filled lazily; nloc and nlset count the
 * src locations and label sets mapped. */
struct remap {
	uint32_t *str, *func, *map, *loc, *lset;
	size_t nloc, nlset;
};

static uint32_t rstr(struct kiln_prof *dst, const struct kiln_prof *src,
		     struct remap *r, uint32_t id)
{
	if (!id)
		return 0;
	if (!r->str[id])
		r->str[id] = kiln_prof_intern(dst, kiln_prof_str(src, id),
					      kiln_prof_strlen(src, id));
	return r->str[id];
}

static uint32_t rfunc(struct kiln_prof *dst, const struct kiln_prof *src,
		      struct remap *r, uint32_t id)
{
	const struct kiln_function *f = &src->functions[id];

	if (!id)
		return 0;
	if (!r->func[id])
		r->func[id] = kiln_prof_function(dst, rstr(dst, src, r, f->name),
						 rstr(dst, src, r, f->system_name),
						 rstr(dst, src, r, f->filename),
						 f->start_line);
	return r->func[id];
}

static uint32_t rmap(struct kiln_prof *dst, const struct kiln_prof *src,
		     struct remap *r, uint32_t id)
{
	struct kiln_mapping m;

	if (!id)
		return 0;
	if (!r->map[id]) {
		m = src->mappings[id];
		m.file = rstr(dst, src, r, m.file);
		m.build_id = rstr(dst, src, r, m.build_id);
		r->map[id] = kiln_prof_mapping(dst, &m);
	}
	return r->map[id];
}

static uint32_t rloc(struct kiln_prof *dst, const struct kiln_prof *src,
		     struct remap *r, uint32_t id)
{
	const struct kiln_location *l = &src->locations[id];
	struct kiln_line stackbuf[16], *lines = stackbuf;
	uint32_t i;

	if (r->loc[id])
		return r->loc[id];
	if (l->nlines > 16) {
		lines = malloc(l->nlines * sizeof(*lines));
		if (!lines) {
			dst->err = -ENOMEM;
			return 0;
		}
	}
	for (i = 0; i < l->nlines; i++) {
		lines[i].function = rfunc(dst, src, r,
					  src->lines[l->line0 + i].function);
		lines[i].line = src->lines[l->line0 + i].line;
	}
	r->loc[id] = kiln_prof_location(dst, rmap(dst, src, r, l->mapping),
					l->address, lines, l->nlines);
	if (r->loc[id]) {
		dst->locations[r->loc[id]].is_folded = l->is_folded;
		r->nloc++;
	}
	if (lines != stackbuf)
		free(lines);
	return r->loc[id];
}

static uint32_t rlset(struct kiln_prof *dst, const struct kiln_prof *src,
		      struct remap *r, uint32_t id)
{
	const struct kiln_labelset *s = &src->labelsets[id];
	struct kiln_label *l;
	uint32_t i;

	if (!id)
		return 0;
	if (r->lset[id])
		return r->lset[id];
	l = malloc(s->n * sizeof(*l));
	if (!l) {
		dst->err = -ENOMEM;
		return 0;
	}
	for (i = 0; i < s->n; i++) {
		const struct kiln_label *a = &src->labels[s->first + i];

		l[i].key = rstr(dst, src, r, a->key);
		l[i].str = rstr(dst, src, r, a->str);
		l[i].num = a->num;
		l[i].unit = rstr(dst, src, r, a->unit);
	}
	r->lset[id] = kiln_prof_labelset(dst, l, s->n);
	r->nlset += r->lset[id] != 0;
	free(l);
	return r->lset[id];
}

/*
 * Interns in dst the strings of src's label set id as if it had a time
 * label (before a "state" label, else last): where kiln kept times as
 * labels, merging interned them there, and the string table written
 * (pprof) keeps that order.
 */
static void rtime_strs(struct kiln_prof *dst, const struct kiln_prof *src,
		       struct remap *r, uint32_t id)
{
	const struct kiln_labelset *s = &src->labelsets[id];
	uint32_t kstate = kiln_prof_find_str(src, "state", 5);
	uint32_t i, n = id ? s->n : 0;
	bool done = false;

	for (i = 0; i <= n; i++) {
		const struct kiln_label *a = i < n ? &src->labels[s->first + i] : NULL;

		if (!done && (!a || (kstate && a->key == kstate))) {
			rstr(dst, src, r, kiln_prof_find_str(src, "time", 4));
			rstr(dst, src, r, kiln_prof_find_str(src, "nanoseconds", 11));
			done = true;
		}
		if (a) {
			rstr(dst, src, r, a->key);
			rstr(dst, src, r, a->str);
			rstr(dst, src, r, a->unit);
		}
	}
}

/*
 * The samples of dst added again one by one, so that equal ones become
 * one (after kiln_prof_append_sample() of samples that turned out equal);
 * smap (n src samples to dst samples) follows.  dst has no events yet.
 * *fresh false when two became one.
 */
static int dedupe(struct kiln_prof *dst, long *smap, size_t n, bool *fresh)
{
	struct kiln_prof_samples o = kiln_prof_take_samples(dst);
	size_t i;

	for (i = 0; i < o.n && o.map; i++)
		kiln_prof_readd(dst, &o, i, o.stacks + o.samples[i].stack,
				o.samples[i].depth, o.values + i * dst->ntypes,
				o.samples[i].labels);
	for (i = 0; i < n && o.map; i++)
		if (smap[i] >= 0)
			smap[i] = o.map[smap[i]];
	if (dst->nsamples != o.n)
		*fresh = false;
	kiln_prof_samples_free(dst, &o);
	return dst->err;
}

int kiln_prof_merge(struct kiln_prof *dst, const struct kiln_prof *src,
		    struct kiln_diag *d)
{
	return kiln_prof_merge_some(dst, src, NULL, NULL, NULL, d);
}


int kiln_prof_merge_some(struct kiln_prof *dst, const struct kiln_prof *src,
			 const uint8_t *keep, kiln_prof_stop_fn stop,
			 void *arg, struct kiln_diag *d)
{
	struct remap r = { 0 };
	uint32_t *locs = NULL;
	long *smap = NULL;	/* src sample -> dst sample */
	size_t first_timed = SIZE_MAX, base = dst->nsamples, added = 0;
	size_t i, j, cap = 0, loc0, lset0;
	/* Each kept sample a new one of an empty dst: no two events can
	 * come to share a sample and a bucket, and no tidying is needed. */
	bool fresh = !dst->nsamples;
	/* Into an empty dst, src's samples (distinct) are appended without
	 * looking for equals: they stay distinct unless two locations or
	 * label sets of src became one of dst (then dedupe()). */
	bool append = fresh;
	int err = 0;

	if (!dst->nsamples && !dst->ntypes) {
		struct kiln_value_type *t = calloc(src->ntypes + 1, sizeof(*t));

		if (!t)
			return -ENOMEM;
		r.str = calloc(src->nstrs + 1, sizeof(*r.str));
		if (!r.str) {
			free(t);
			return -ENOMEM;
		}
		for (i = 0; i < src->ntypes; i++) {
			t[i].type = rstr(dst, src, &r, src->types[i].type);
			t[i].unit = rstr(dst, src, &r, src->types[i].unit);
		}
		err = dst->err ? dst->err : kiln_prof_set_types(dst, t, src->ntypes);
		free(t);
		if (err)
			goto out_free;
		dst->period_type.type = rstr(dst, src, &r, src->period_type.type);
		dst->period_type.unit = rstr(dst, src, &r, src->period_type.unit);
		dst->period = src->period;
		dst->default_type = rstr(dst, src, &r, src->default_type);
		dst->time_nanos = src->time_nanos;
	} else {
		if (dst->ntypes != src->ntypes)
			return kiln_diag(d, "the profiles have different sample types (%zu and %zu)",
					 dst->ntypes, src->ntypes);
		for (i = 0; i < src->ntypes; i++) {
			const char *a = kiln_prof_str(dst, dst->types[i].type);
			const char *b = kiln_prof_str(src, src->types[i].type);
			const char *au = kiln_prof_str(dst, dst->types[i].unit);
			const char *bu = kiln_prof_str(src, src->types[i].unit);

			if (strcmp(a, b) || strcmp(au, bu))
				return kiln_diag(d, "sample type %zu differs: %s/%s and %s/%s",
						 i, a, au, b, bu);
		}
		r.str = calloc(src->nstrs + 1, sizeof(*r.str));
		if (!r.str)
			return -ENOMEM;
	}
	r.func = calloc(src->nfunctions + 1, sizeof(*r.func));
	r.map = calloc(src->nmappings + 1, sizeof(*r.map));
	r.loc = calloc(src->nlocations + 1, sizeof(*r.loc));
	r.lset = calloc(src->nlabelsets + 1, sizeof(*r.lset));
	smap = malloc((src->nsamples + 1) * sizeof(*smap));
	if (!r.func || !r.map || !r.loc || !r.lset || !smap) {
		err = -ENOMEM;
		goto out_free;
	}
	/* The first sample with a time. */
	for (i = 0; i < src->nevents; i++)
		if (src->events[i].sample < first_timed)
			first_timed = src->events[i].sample;
	dst->duration_nanos += src->duration_nanos;
	loc0 = dst->nlocations;
	lset0 = dst->nlabelsets;
	for (i = 0; i < src->ncomments; i++) {
		err = kiln_prof_add_comment(dst, kiln_prof_str(src, src->comments[i]));
		if (err)
			goto out_free;
	}
	for (i = 0; i < src->nsamples; i++) {
		const struct kiln_sample *s = &src->samples[i];
		const uint32_t *sl = kiln_prof_sample_locs(src, s);

		if (stop && !(i % KILN_PROF_CHECK_EVERY) && stop(arg)) {
			err = -ECANCELED;
			goto out_free;
		}
		smap[i] = -1;
		if (keep && !keep[i])
			continue;
		if (s->depth > cap) {
			uint32_t *n = realloc(locs, s->depth * 2 * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				goto out_free;
			}
			locs = n;
			cap = s->depth * 2;
		}
		for (j = 0; j < s->depth; j++)
			locs[j] = rloc(dst, src, &r, sl[j]);
		if (first_timed == i)
			rtime_strs(dst, src, &r, s->labels);
		smap[i] = (append ? kiln_prof_append_sample : kiln_prof_add_sample)
			(dst, locs, s->depth, src->values + i * src->ntypes,
			 rlset(dst, src, &r, s->labels));
		if (dst->err)
			break;
		if (smap[i] != (long)(base + added++))
			fresh = false;	/* two samples became one */
	}
	if (append && !dst->err && (dst->nlocations - loc0 != r.nloc ||
				    dst->nlabelsets - lset0 != r.nlset)) {
		err = dedupe(dst, smap, src->nsamples, &fresh);
		if (err)
			goto out_free;
	}
	/* The time column, times as they were (both since their start):
	 * appended as they are when no two can meet. */
	if (fresh && !src->ev_untidy && !dst->err && !dst->nevents) {
		err = kiln_prof_events_append(dst, src, smap, stop, arg);
		if (err)
			goto out_free;
	}
	if (!fresh || src->ev_untidy)
		dst->ev_untidy = true;
	for (i = 0; i < src->nevents && !dst->err && !(fresh && !src->ev_untidy); i++) {
		if (stop && !(i % KILN_PROF_CHECK_EVERY) && stop(arg)) {
			err = -ECANCELED;
			goto out_free;
		}
		if (smap[src->events[i].sample] < 0)
			continue;
		kiln_prof_add_event(dst, (size_t)smap[src->events[i].sample],
				    src->events[i].time,
				    kiln_prof_event_values(src, i));
	}
	err = dst->err ? dst->err : kiln_prof_events_tidy(dst);
out_free:
	free(smap);
	free(locs);
	free(r.str);
	free(r.func);
	free(r.map);
	free(r.loc);
	free(r.lset);
	return err;
}

struct kiln_prof_samples kiln_prof_take_samples(struct kiln_prof *p)
{
	struct kiln_prof_samples o = { p->samples, p->values, p->stacks,
				       p->nsamples, NULL };
	size_t i;

	o.map = malloc((o.n ? o.n : 1) * sizeof(*o.map));
	if (!o.map)
		p->err = -ENOMEM;	/* the samples still go: nothing is added */
	for (i = 0; o.map && i < o.n; i++)
		o.map[i] = -1;

	kiln_htab_release(&p->sample_index);
	kiln_htab_init(&p->sample_index);
	p->sample_index_stale = false;
	/* The samples added again are noted again. */
	if (p->mag)
		memset(p->mag, 0, p->ntypes * sizeof(*p->mag));
	p->samples = NULL;
	p->values = NULL;
	p->stacks = NULL;
	p->nsamples = p->samples_alloc = 0;
	p->nstacks = p->stacks_alloc = 0;
	return o;
}

void kiln_prof_readd(struct kiln_prof *p, struct kiln_prof_samples *o, size_t i,
		  const uint32_t *locs, uint32_t depth, const int64_t *v,
		  uint32_t lset)
{
	long idx = kiln_prof_add_sample(p, locs, depth, v, lset);

	if (o->map)
		o->map[i] = idx;
}

/* Frees the old samples, the time column following the new ones. */
void kiln_prof_samples_free(struct kiln_prof *p, struct kiln_prof_samples *o)
{
	if (!p->err)
		kiln_prof_events_remap(p, o->map);
	else
		p->nevents = 0;
	free(o->samples);
	free(o->values);
	free(o->stacks);
	free(o->map);
}
