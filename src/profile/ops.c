/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-profile operations (profile stage): merging two profiles and
 * focus/ignore filtering by regular expression.
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
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

/* How often (samples or events) a long operation asks whether to stop. */
#define OPS_CHECK_EVERY 16384

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

		if (stop && !(i % OPS_CHECK_EVERY) && stop(arg)) {
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
		if (stop && !(i % OPS_CHECK_EVERY) && stop(arg)) {
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

/* Per-function match results: 0 unknown, 1 no, 2 yes. */
static bool frame_matches(struct kiln_prof *p, const regex_t *re,
			  uint8_t *cache, const struct kiln_frame *f)
{
	uint32_t key = f->function ? f->function : 0;

	if (key && cache[key])
		return cache[key] == 2;
	{
		bool m = !regexec(re, kiln_prof_str(p, f->name), 0, NULL, 0);

		if (!m && f->function && p->functions[f->function].filename)
			m = !regexec(re, kiln_prof_str(p,
				p->functions[f->function].filename), 0, NULL, 0);
		if (key)
			cache[key] = m ? 2 : 1;
		return m;
	}
}

static int compile(regex_t *re, const char *src, const char *what,
		   struct kiln_diag *d)
{
	int rc = regcomp(re, src, REG_EXTENDED | REG_NOSUB);
	char msg[256];

	if (!rc)
		return 0;
	regerror(rc, re, msg, sizeof(msg));
	return kiln_diag(d, "bad %s regular expression '%s': %s", what, src,
			 msg);
}

/* The compiled focus and ignore, their per-function caches, and what
 * each location was judged (0 not yet, else LOC_SEEN with LOC_FOCUS
 * when one of its frames matches focus, LOC_IGNORE ignore): a
 * location's frames are the same in every sample, so each is expanded
 * and matched once, not once per sample that holds it. */
enum { LOC_SEEN = 1, LOC_FOCUS = 2, LOC_IGNORE = 4 };

struct filt {
	regex_t fre, ire;
	const regex_t *f, *i;
	uint8_t *fcache, *icache, *loc;
	struct kiln_frame *frames;
	size_t cap;
};

/* What location loc holds: LOC_* bits, or -ENOMEM. */
static int judge_loc(struct kiln_prof *p, struct filt *f, uint32_t loc)
{
	long nf = kiln_prof_loc_frames(p, loc, &f->frames, &f->cap), j;
	int v = LOC_SEEN;

	if (nf < 0)
		return (int)nf;
	for (j = 0; j < nf; j++) {
		if (f->f && frame_matches(p, f->f, f->fcache, &f->frames[j]))
			v |= LOC_FOCUS;
		if (f->i && frame_matches(p, f->i, f->icache, &f->frames[j]))
			v |= LOC_IGNORE;
	}
	return v;
}

/* Whether the sample of depth locations locs passes focus (none: any)
 * and ignore (none: none).  -ENOMEM, 0 (no) or 1 (yes). */
static int passes(struct kiln_prof *p, struct filt *f, const uint32_t *locs,
		  uint32_t depth)
{
	bool keep = !f->f;
	uint32_t j;

	for (j = 0; j < depth; j++) {
		int v = f->loc[locs[j]];

		if (!v) {
			v = judge_loc(p, f, locs[j]);
			if (v < 0)
				return v;
			f->loc[locs[j]] = (uint8_t)v;
		}
		if (v & LOC_IGNORE)
			return 0;
		if (v & LOC_FOCUS)
			keep = true;
	}
	return keep;
}

static void filt_release(struct filt *f)
{
	if (f->f)
		regfree(&f->fre);
	if (f->i)
		regfree(&f->ire);
	free(f->fcache);
	free(f->icache);
	free(f->loc);
	free(f->frames);
}

static int filt_init(struct filt *f, const struct kiln_prof *p,
		     const char *focus, const char *ignore, struct kiln_diag *d)
{
	int err = 0;

	memset(f, 0, sizeof(*f));
	if (focus && !(err = compile(&f->fre, focus, "focus", d)))
		f->f = &f->fre;
	if (!err && ignore && !(err = compile(&f->ire, ignore, "ignore", d)))
		f->i = &f->ire;
	if (!err) {
		f->fcache = calloc(p->nfunctions + 1, 1);
		f->icache = calloc(p->nfunctions + 1, 1);
		f->loc = calloc(p->nlocations + 1, 1);
		if (!f->fcache || !f->icache || !f->loc)
			err = -ENOMEM;
	}
	if (err) {
		filt_release(f);
		memset(f, 0, sizeof(*f));
	}
	return err;
}

int kiln_prof_filter_mask(struct kiln_prof *p, const char *focus,
			  const char *ignore, uint8_t *keep,
			  kiln_prof_stop_fn stop, void *arg,
			  struct kiln_diag *d)
{
	struct filt f;
	size_t i;
	int err, rc;

	if (!focus && !ignore) {
		memset(keep, 1, p->nsamples);
		return 0;
	}
	err = filt_init(&f, p, focus, ignore, d);
	for (i = 0; !err && i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];

		if (stop && !(i % OPS_CHECK_EVERY) && stop(arg)) {
			err = -ECANCELED;
			break;
		}
		rc = passes(p, &f, kiln_prof_sample_locs(p, s), s->depth);
		if (rc < 0)
			err = rc;
		else
			keep[i] = (uint8_t)rc;
	}
	filt_release(&f);
	return err ? err : p->err;
}

int kiln_prof_weights(struct kiln_prof *p, const char *focus,
		      const char *ignore, const int64_t *range, int type,
		      int64_t *w, kiln_prof_stop_fn stop, void *arg,
		      struct kiln_diag *d)
{
	uint8_t *keep = malloc(p->nsamples + 1);
	size_t i;
	int err;

	if (!keep)
		return -ENOMEM;
	if (type < 0 || (size_t)type >= p->ntypes) {
		free(keep);
		return -EINVAL;
	}
	err = kiln_prof_filter_mask(p, focus, ignore, keep, stop, arg, d);
	for (i = 0; !err && !range && i < p->nsamples; i++)
		w[i] = keep[i] ? kiln_prof_value(p, i, (size_t)type) : 0;
	if (!err && range) {
		memset(w, 0, p->nsamples * sizeof(*w));
		for (i = 0; i < p->nevents; i++) {
			const struct kiln_prof_event *e = &p->events[i];

			if (stop && !(i % OPS_CHECK_EVERY) && stop(arg)) {
				err = -ECANCELED;
				break;
			}
			if (e->time < range[0] || e->time >= range[1] ||
			    e->sample >= p->nsamples || !keep[e->sample])
				continue;
			/* Wrapping, as kiln_prof_keep_time() adds. */
			w[e->sample] = (int64_t)((uint64_t)w[e->sample] +
				(uint64_t)kiln_prof_event_values(p, i)[type]);
		}
	}
	free(keep);
	return err;
}

int kiln_prof_filter(struct kiln_prof *p, const char *focus,
		     const char *ignore, struct kiln_diag *d)
{
	struct kiln_prof_samples o;
	struct filt f;
	size_t i;
	int err, rc = 0;

	if (!focus && !ignore)
		return 0;
	err = filt_init(&f, p, focus, ignore, d);
	if (err)
		return err;
	/* Keep the tables (ids stay valid); rebuild only the samples. */
	o = kiln_prof_take_samples(p);
	for (i = 0; i < o.n; i++) {
		struct kiln_sample s = o.samples[i];

		rc = passes(p, &f, o.stacks + s.stack, s.depth);
		if (rc < 0)
			break;
		if (rc)
			kiln_prof_readd(p, &o, i, o.stacks + s.stack, s.depth,
					o.values + i * p->ntypes, s.labels);
	}
	kiln_prof_samples_free(p, &o);
	err = rc < 0 ? rc : p->err;
	filt_release(&f);
	return err;
}

int kiln_prof_keep_time(struct kiln_prof *p, int64_t t0, int64_t t1)
{
	struct kiln_prof_samples o;
	int64_t *sum;
	uint8_t *any;
	size_t i, k, nt = p->ntypes;

	/* Each sample's values in the range: the sum of its kept events. */
	sum = calloc(p->nsamples * nt + 1, sizeof(*sum));
	any = calloc(p->nsamples + 1, 1);
	if (!sum || !any) {
		free(sum);
		free(any);
		return -ENOMEM;
	}
	for (i = 0; i < p->nevents; i++) {
		const struct kiln_prof_event *e = &p->events[i];
		const int64_t *v = kiln_prof_event_values(p, i);
		int64_t *s = sum + (size_t)e->sample * nt;

		if (e->time < t0 || e->time >= t1) {
			p->events[i].sample = UINT32_MAX;	/* goes */
			continue;
		}
		any[e->sample] = 1;
		for (k = 0; k < nt; k++)
			s[k] = (int64_t)((uint64_t)s[k] + (uint64_t)v[k]);
	}
	o = kiln_prof_take_samples(p);
	for (i = 0; i < o.n; i++)
		if (any[i])
			kiln_prof_readd(p, &o, i, o.samples[i].depth ?
			      o.stacks + o.samples[i].stack : NULL,
			      o.samples[i].depth, sum + i * nt,
			      o.samples[i].labels);
	/* The events out of the range go with a sample index no map has. */
	for (i = k = 0; i < p->nevents; i++)
		if (p->events[i].sample != UINT32_MAX) {
			if (i != k) {
				p->events[k] = p->events[i];
				memmove(p->ev_values + k * nt, p->ev_values + i * nt,
					nt * sizeof(*p->ev_values));
			}
			k++;
		}
	p->nevents = k;
	kiln_prof_samples_free(p, &o);
	free(sum);
	free(any);
	return p->err;
}

int kiln_prof_hide(struct kiln_prof *p, const char *hide, struct kiln_diag *d)
{
	size_t nloc = p->nlocations, i, j, n;
	uint32_t *map = NULL, *stack = NULL;
	uint8_t *fmatch = NULL;
	struct kiln_line *kept = NULL;
	struct kiln_prof_samples o;
	struct kiln_sample *samples;
	int64_t *values;
	uint32_t *stacks;
	size_t kcap = 0;
	regex_t re;
	int err;

	if (!hide || !*hide)
		return 0;
	err = compile(&re, hide, "hide", d);
	if (err)
		return err;
	/* Each location's replacement: itself, one with fewer inline
	 * frames, or 0 (every frame hidden). */
	map = malloc((nloc + 1) * sizeof(*map));
	fmatch = calloc(p->nfunctions + 1, 1);
	if (!map || !fmatch) {
		err = -ENOMEM;
		goto out;
	}
	map[0] = 0;
	for (i = 1; i <= nloc; i++) {
		const struct kiln_location *l = &p->locations[i];
		uint32_t nk = 0, line0 = l->line0, nl = l->nlines;
		uint64_t address = l->address;
		uint32_t mapping = l->mapping;

		map[i] = (uint32_t)i;
		if (!nl)
			continue;	/* unsymbolized: no function to match */
		if (kiln_array_grow((void **)&kept, &kcap, nl, sizeof(*kept))) {
			err = -ENOMEM;
			goto out;
		}
		for (j = 0; j < nl; j++) {
			const struct kiln_line *ln = &p->lines[line0 + j];
			uint32_t f = ln->function;

			if (f && !fmatch[f])
				fmatch[f] = regexec(&re, kiln_prof_str(p,
					p->functions[f].name), 0, NULL, 0) ? 1 : 2;
			if (!f || fmatch[f] != 2)
				kept[nk++] = *ln;
		}
		if (nk == nl)
			continue;
		/* May move p->lines and p->locations: nothing above is used
		 * after this. */
		map[i] = nk ? kiln_prof_location(p, mapping, address, kept, nk) : 0;
		if (nk && !map[i]) {
			err = p->err ? p->err : -ENOMEM;
			goto out;
		}
	}
	/* Rebuild the samples over the new stacks (the tables stay). */
	o = kiln_prof_take_samples(p);
	n = o.n;
	samples = o.samples;
	values = o.values;
	stacks = o.stacks;
	{
		size_t scap = 0;

		for (i = 0; i < n && !p->err; i++) {
			uint32_t depth = 0;

			if (kiln_array_grow((void **)&stack, &scap,
					    samples[i].depth + 1, sizeof(*stack))) {
				p->err = -ENOMEM;
				break;
			}
			for (j = 0; j < samples[i].depth; j++) {
				uint32_t to = map[stacks[samples[i].stack + j]];

				if (to)
					stack[depth++] = to;
			}
			kiln_prof_readd(p, &o, i, depth ? stack : NULL, depth,
			      values + i * p->ntypes, samples[i].labels);
		}
	}
	kiln_prof_samples_free(p, &o);
	err = p->err;
out:
	regfree(&re);
	free(map);
	free(fmatch);
	free(kept);
	free(stack);
	return err;
}

const char *kiln_prof_label_text(const struct kiln_prof *p,
				 const struct kiln_label *l, char *buf, size_t n)
{
	if (l->str)
		return kiln_prof_str(p, l->str);
	snprintf(buf, n, "%" PRId64, l->num);
	return buf;
}

/* Whether sample labels lset satisfy the conditions (the header's rule). */
static bool labels_keep(const struct kiln_prof *p, uint32_t lset,
			const struct kiln_label_cond *c, const uint32_t *keys,
			size_t n)
{
	char buf[32];
	size_t i, j;

	for (i = 0; i < n; i++) {
		const struct kiln_label *l = kiln_prof_label(p, lset, keys[i]);
		bool hit = l && !strcmp(kiln_prof_label_text(p, l, buf, sizeof(buf)),
					c[i].value);

		if (c[i].exclude) {
			if (hit)
				return false;
			continue;
		}
		if (hit)
			continue;
		/* Another include of the same key may hold. */
		for (j = 0; j < n; j++)
			if (j != i && !c[j].exclude && !strcmp(c[j].key, c[i].key) &&
			    l && !strcmp(kiln_prof_label_text(p, l, buf, sizeof(buf)),
					 c[j].value))
				break;
		if (j == n)
			return false;
	}
	return true;
}

int kiln_prof_keep_labels(struct kiln_prof *p, const struct kiln_label_cond *c,
			  size_t n)
{
	uint32_t *keys;
	uint8_t *keep;
	struct kiln_prof_samples o;
	size_t i;

	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	keep = calloc(p->nlabelsets + 1, 1);	/* 0 unknown, 1 no, 2 yes */
	if (!keys || !keep) {
		free(keys);
		free(keep);
		return -ENOMEM;
	}
	/* A key the profile lacks is string 0: no sample has it. */
	for (i = 0; i < n; i++)
		keys[i] = kiln_prof_find_str(p, c[i].key, strlen(c[i].key));
	o = kiln_prof_take_samples(p);
	for (i = 0; i < o.n; i++) {
		uint32_t ls = o.samples[i].labels;

		if (!keep[ls])
			keep[ls] = labels_keep(p, ls, c, keys, n) ? 2 : 1;
		if (keep[ls] == 2)
			kiln_prof_readd(p, &o, i, o.samples[i].depth ?
			      o.stacks + o.samples[i].stack : NULL,
			      o.samples[i].depth, o.values + i * p->ntypes, ls);
	}
	kiln_prof_samples_free(p, &o);
	free(keys);
	free(keep);
	return p->err;
}

int kiln_prof_group_by_label(struct kiln_prof *p, const char *key)
{
	uint32_t k, *root, *stack = NULL;
	size_t cap = 0, i;
	struct kiln_prof_samples o;
	char buf[32];
	int err = 0;

	if (!key || !*key)
		return 0;
	k = kiln_prof_find_str(p, key, strlen(key));
	root = calloc(p->nlabelsets + 1, sizeof(*root));	/* location per set */
	if (!root)
		return -ENOMEM;
	o = kiln_prof_take_samples(p);
	for (i = 0; i < o.n && !err; i++) {
		const struct kiln_sample *s = &o.samples[i];
		uint32_t d = s->depth;

		if (!root[s->labels]) {
			const struct kiln_label *l = k ? kiln_prof_label(p, s->labels, k) : NULL;
			struct kiln_buf name = KILN_BUF_INIT;
			struct kiln_line line = { 0, 0 };

			kiln_buf_addf(&name, "%s=%s", key,
				      l ? kiln_prof_label_text(p, l, buf, sizeof(buf)) : "(none)");
			if (name.data)
				line.function = kiln_prof_function(p,
					kiln_prof_intern(p, name.data, name.len), 0, 0, 0);
			kiln_buf_release(&name);
			root[s->labels] = line.function ?
				kiln_prof_location(p, 0, 0, &line, 1) : 0;
			if (!root[s->labels]) {
				err = -ENOMEM;
				break;
			}
		}
		if (kiln_array_grow((void **)&stack, &cap, d + 1, sizeof(*stack))) {
			err = -ENOMEM;
			break;
		}
		if (d)
			memcpy(stack, o.stacks + s->stack, d * sizeof(*stack));
		stack[d] = root[s->labels];	/* the outermost frame */
		kiln_prof_readd(p, &o, i, stack, d + 1, o.values + i * p->ntypes,
		      s->labels);
	}
	kiln_prof_samples_free(p, &o);
	free(stack);
	free(root);
	return err ? err : p->err;
}
