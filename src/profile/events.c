/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time column of the profile model (profile stage): when the samples
 * were taken, as events beside the samples (profile.h, "Time"), and the
 * one way to read it in time order.  docs/design.md ("Sample times").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"

/* Grows the column by one event; false (p->err) on failure. */
static bool grow_events(struct kiln_prof *p)
{
	size_t old = p->events_alloc, nt = p->ntypes ? p->ntypes : 1;
	int64_t *v;

	if (KILN_GROW(p->events, p->events_alloc, p->nevents + 1, 1024)) {
		p->err = -ENOMEM;
		return false;
	}
	if (p->events_alloc == old)
		return true;
	v = realloc(p->ev_values, p->events_alloc * nt * sizeof(*v));
	if (!v) {
		p->events_alloc = old;	/* the values still fit the old size */
		p->err = -ENOMEM;
		return false;
	}
	p->ev_values = v;
	return true;
}

void kiln_prof_add_event(struct kiln_prof *p, size_t idx, int64_t time,
			 const int64_t *values)
{
	int64_t b = time / KILN_PROF_TIME_BUCKET_NS * KILN_PROF_TIME_BUCKET_NS;
	struct kiln_prof_event *e;
	size_t i, old = p->ev_last_alloc;
	uint32_t last;

	if (p->err || idx >= p->nsamples)
		return;
	if (KILN_GROW(p->ev_last, p->ev_last_alloc, p->nsamples, 1024)) {
		p->err = -ENOMEM;
		return;
	}
	if (p->ev_last_alloc > old)
		memset(p->ev_last + old, 0, (p->ev_last_alloc - old) *
		       sizeof(*p->ev_last));
	last = p->ev_last[idx];
	if (last && p->events[last - 1].time == b) {
		int64_t *v = p->ev_values + (size_t)(last - 1) * p->ntypes;

		for (i = 0; i < p->ntypes; i++)
			v[i] = (int64_t)((uint64_t)v[i] + (uint64_t)values[i]);
		return;
	}
	if (last && p->events[last - 1].time > b)
		p->ev_untidy = true;	/* an earlier bucket may have one */
	if (p->nevents >= UINT32_MAX || !grow_events(p)) {
		p->err = -ENOMEM;
		return;
	}
	e = &p->events[p->nevents];
	e->time = b;
	e->sample = (uint32_t)idx;
	if (p->ntypes)
		memcpy(p->ev_values + p->nevents * p->ntypes, values,
		       p->ntypes * sizeof(*values));
	p->ev_last[idx] = (uint32_t)++p->nevents;
}

int kiln_prof_events_append(struct kiln_prof *p, const struct kiln_prof *src,
			    const long *smap, int (*stop)(void *), void *arg)
{
	size_t i, n = 0, nt = p->ntypes;
	int64_t *v;

	if (p->err)
		return p->err;
	if (p->nevents || src->ev_untidy || nt != src->ntypes)
		return -EINVAL;
	for (i = 0; i < src->nevents; i++)
		n += smap[src->events[i].sample] >= 0;
	if (!n)
		return 0;
	if (n > UINT32_MAX || KILN_GROW(p->events, p->events_alloc, n, 1024))
		return p->err = -ENOMEM;
	v = realloc(p->ev_values, p->events_alloc * (nt ? nt : 1) * sizeof(*v));
	if (!v)
		return p->err = -ENOMEM;
	p->ev_values = v;
	free(p->ev_last);
	p->ev_last = calloc(p->nsamples ? p->nsamples : 1, sizeof(*p->ev_last));
	if (!p->ev_last) {
		p->ev_last_alloc = 0;
		return p->err = -ENOMEM;
	}
	p->ev_last_alloc = p->nsamples ? p->nsamples : 1;
	for (i = 0; i < src->nevents; i++) {
		const struct kiln_prof_event *e = &src->events[i];
		long to = smap[e->sample];

		if (stop && !(i % 16384) && stop(arg))
			return -ECANCELED;
		if (to < 0)
			continue;
		if ((size_t)to >= p->nsamples)
			return -EINVAL;
		p->events[p->nevents] = (struct kiln_prof_event){
			e->time / KILN_PROF_TIME_BUCKET_NS * KILN_PROF_TIME_BUCKET_NS,
			(uint32_t)to };
		if (nt)
			memcpy(p->ev_values + p->nevents * nt,
			       kiln_prof_event_values(src, i), nt * sizeof(*v));
		p->ev_last[to] = (uint32_t)++p->nevents;
	}
	return 0;
}

long kiln_prof_add_timed(struct kiln_prof *p, const uint32_t *locs,
			 uint32_t depth, const int64_t *values,
			 uint32_t labelset, int64_t time)
{
	long idx = kiln_prof_add_sample(p, locs, depth, values, labelset);

	if (idx >= 0)
		kiln_prof_add_event(p, (size_t)idx, time, values);
	return p->err ? -1 : idx;
}

/* An event's time and index, gathered by sample (the tidying's order). */
struct tkey {
	int64_t time;
	uint64_t i;
};

/* Event indexes (qsort_r over the column) by time, then position. */
static int cmp_time(const void *a, const void *b, void *arg)
{
	const struct kiln_prof_event *ev = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct kiln_prof_event *ex = &ev[x], *ey = &ev[y];

	if (ex->time != ey->time)
		return ex->time < ey->time ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Keys by time, then position. */
static int cmp_key_time(const void *a, const void *b)
{
	const struct tkey *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Sets ev_last to every sample's last event and ev_untidy where a
 * sample's events are not in time order (so that an event added later
 * may share a bucket with one before its last). */
static int relink(struct kiln_prof *p)
{
	size_t i;

	if (KILN_GROW(p->ev_last, p->ev_last_alloc, p->nsamples, 1024))
		return p->err = -ENOMEM;
	if (p->ev_last_alloc)	/* NULL while there are no samples */
		memset(p->ev_last, 0, p->ev_last_alloc * sizeof(*p->ev_last));
	p->ev_untidy = false;
	for (i = 0; i < p->nevents; i++) {
		uint32_t s = p->events[i].sample, last = p->ev_last[s];

		if (last && p->events[last - 1].time >= p->events[i].time)
			p->ev_untidy = true;
		p->ev_last[s] = (uint32_t)i + 1;
	}
	return 0;
}

/*
 * keys[]: every event's time and index by sample, then time, then
 * position, made by counting the events of each sample (a stable pass)
 * and sorting by time only the samples whose events are out of time
 * order (those that several samples became); *at: where each sample's
 * run ends (ns of them, malloc'd).  The keys are read in order after, not
 * the events through an index (a cache miss each).  0, -EINVAL (an event
 * of no sample) or -ENOMEM.
 */
static int order_by_sample_time(const struct kiln_prof *p, struct tkey *keys,
				uint32_t **at_out)
{
	size_t i, n = p->nevents, ns = p->nsamples;
	uint32_t *at = calloc(ns + 1, sizeof(*at));

	*at_out = at;
	if (!at)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (p->events[i].sample >= ns)
			return -EINVAL;
		at[p->events[i].sample + 1]++;
	}
	for (i = 0; i < ns; i++)
		at[i + 1] += at[i];
	for (i = 0; i < n; i++)
		keys[at[p->events[i].sample]++] =
			(struct tkey){ p->events[i].time, i };
	/* at[s] is now the end of sample s's run. */
	for (i = 0; i < ns; i++) {
		size_t lo = i ? at[i - 1] : 0, hi = at[i], k;

		for (k = lo + 1; k < hi; k++)
			if (keys[k].time < keys[k - 1].time)
				break;
		if (k < hi)
			qsort(keys + lo, hi - lo, sizeof(*keys), cmp_key_time);
	}
	return 0;
}

int kiln_prof_events_tidy(struct kiln_prof *p)
{
	struct tkey *keys;
	uint32_t *at = NULL;
	uint8_t *dead;
	size_t i, j, x, n = p->nevents, nt = p->ntypes;
	int err;

	if (p->err)
		return p->err;
	if (!p->ev_untidy)
		return 0;
	keys = malloc((n ? n : 1) * sizeof(*keys));
	dead = calloc(n ? n : 1, 1);
	err = keys && dead ? order_by_sample_time(p, keys, &at) : -ENOMEM;
	if (err) {
		free(keys);
		free(dead);
		free(at);
		return p->err = err;
	}
	/* Each sample's events of one time into the first. */
	for (x = 0, i = 0; x < p->nsamples; x++) {
		for (; i < at[x]; i = j) {
			int64_t *keep = p->ev_values + keys[i].i * nt;

			for (j = i + 1; j < at[x] && keys[j].time == keys[i].time; j++) {
				const int64_t *v = p->ev_values + keys[j].i * nt;
				size_t k;

				for (k = 0; k < nt; k++)
					keep[k] = (int64_t)((uint64_t)keep[k] + (uint64_t)v[k]);
				dead[keys[j].i] = 1;
			}
		}
	}
	for (i = j = 0; i < n; i++) {
		if (dead[i])
			continue;
		if (i != j) {
			p->events[j] = p->events[i];
			memmove(p->ev_values + j * nt, p->ev_values + i * nt,
				nt * sizeof(*p->ev_values));
		}
		j++;
	}
	p->nevents = j;
	free(keys);
	free(at);
	free(dead);
	if (relink(p))
		return p->err;
	p->ev_untidy = false;	/* no bucket twice; later additions check */
	for (i = 0; i < p->nevents; i++) {
		uint32_t last = p->ev_last[p->events[i].sample];

		if (p->events[last - 1].time < p->events[i].time)
			p->ev_untidy = true;	/* not the latest last */
	}
	return 0;
}

/*
 * Keeps the events of old samples that map[] gives a new index (>= 0),
 * renumbered; the others go.  For the rewriting operations (filter.c):
 * several old samples may become one, so the column is tidied.
 */
int kiln_prof_events_remap(struct kiln_prof *p, const long *map)
{
	size_t i, j, nt = p->ntypes;
	/* Per new sample, the old one whose events it took (+ 1). */
	uint32_t *from = calloc(p->nsamples + 1, sizeof(*from));
	bool merged = !from;	/* unknown: tidy */

	for (i = j = 0; i < p->nevents; i++) {
		long to = map[p->events[i].sample];

		if (to < 0)
			continue;
		if (from && (size_t)to < p->nsamples) {
			uint32_t old = p->events[i].sample + 1;

			if (from[to] && from[to] != old)
				merged = true;
			from[to] = old;
		}
		p->events[j].time = p->events[i].time;
		p->events[j].sample = (uint32_t)to;
		if (i != j)
			memmove(p->ev_values + j * nt, p->ev_values + i * nt,
				nt * sizeof(*p->ev_values));
		j++;
	}
	p->nevents = j;
	/* Only two old samples made one can put two events of one bucket
	 * on a sample: without that the column stays as tidy as it was
	 * (no sort of every event). */
	free(from);
	if (!merged && relink(p))
		return p->err;
	if (merged)
		p->ev_untidy = true;
	return kiln_prof_events_tidy(p);
}

int kiln_prof_events_begin(struct kiln_prof_events *it,
			   const struct kiln_prof *p)
{
	size_t i, n = p->nevents;

	it->p = p;
	it->order = NULL;
	it->i = 0;
	for (i = 1; i < n; i++)
		if (p->events[i].time < p->events[i - 1].time)
			break;
	if (i >= n)
		return 0;
	it->order = malloc(n * sizeof(*it->order));
	if (!it->order)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		it->order[i] = (uint32_t)i;
	qsort_r(it->order, n, sizeof(*it->order), cmp_time,
		(void *)p->events);
	return 0;
}

const struct kiln_prof_event *kiln_prof_events_next(struct kiln_prof_events *it,
					       size_t *ev)
{
	size_t i;

	if (it->i >= it->p->nevents)
		return NULL;
	i = it->order ? it->order[it->i] : it->i;
	it->i++;
	if (ev)
		*ev = i;
	return &it->p->events[i];
}

void kiln_prof_events_end(struct kiln_prof_events *it)
{
	free(it->order);
	it->order = NULL;
}

void kiln_prof_thread(const struct kiln_prof *p, uint32_t lset, int64_t *pid,
		      int64_t *tid)
{
	const struct kiln_label *l;

	l = kiln_prof_label(p, lset, kiln_prof_find_str(p, "pid", 3));
	*pid = l && !l->str ? l->num : -1;
	l = kiln_prof_label(p, lset, kiln_prof_find_str(p, "thread", 6));
	*tid = l && !l->str ? l->num : -1;
}
