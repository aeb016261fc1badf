/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A profile's samples and frames chosen (profile stage): focus/ignore by
 * regular expression (as a filter, a mask or weights), a time range,
 * hidden frames, label conditions and grouping by a label.
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

		if (stop && !(i % KILN_PROF_CHECK_EVERY) && stop(arg)) {
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

int kiln_loc_samples_build(struct kiln_loc_samples *ls,
			   const struct kiln_prof *p)
{
	uint32_t *last = NULL;	/* per location: the last sample + 1 */
	size_t nl = p->nlocations, i, pass;
	int err = 0;

	memset(ls, 0, sizeof(*ls));
	ls->nlocations = nl;
	ls->off = calloc(nl + 2, sizeof(*ls->off));
	last = malloc((nl + 1) * sizeof(*last));
	if (!ls->off || !last || p->nsamples >= UINT32_MAX) {
		err = -ENOMEM;
		goto out;
	}
	/* Counted (off[l + 1]: location l's samples), summed (off[l]: where
	 * l's run starts), then placed (off[l] moves to the run's end). */
	for (pass = 0; pass < 2 && !err; pass++) {
		memset(last, 0, (nl + 1) * sizeof(*last));
		for (i = 0; i < p->nsamples; i++) {
			const struct kiln_sample *s = &p->samples[i];
			const uint32_t *locs = kiln_prof_sample_locs(p, s);
			uint32_t d;

			for (d = 0; d < s->depth; d++) {
				uint32_t l = locs[d];

				if (l > nl) {
					err = -EINVAL;
					goto out;
				}
				if (last[l] == i + 1)
					continue;	/* recursion: once */
				last[l] = (uint32_t)i + 1;
				if (!pass)
					ls->off[l + 1]++;
				else
					ls->samples[ls->off[l]++] = (uint32_t)i;
			}
		}
		if (!pass) {
			/* Summed: off[l] is where l's run starts. */
			for (i = 1; i <= nl + 1; i++)
				ls->off[i] += ls->off[i - 1];
			ls->n = ls->off[nl + 1];
			ls->samples = malloc((ls->n + 1) * sizeof(*ls->samples));
			if (!ls->samples)
				err = -ENOMEM;
		}
	}
	/* Each off[l] is l's end, l + 1's start: shifted up one. */
	if (!err) {
		memmove(ls->off + 1, ls->off, (nl + 1) * sizeof(*ls->off));
		ls->off[0] = 0;
	}
out:
	free(last);
	if (err)
		kiln_loc_samples_release(ls);
	return err;
}

void kiln_loc_samples_release(struct kiln_loc_samples *ls)
{
	free(ls->off);
	free(ls->samples);
	memset(ls, 0, sizeof(*ls));
}

/* kiln_prof_filter_mask() by location: each judged, the samples of
 * those that match focus marked kept, then those of ignore's dropped. */
static int mask_by_location(struct kiln_prof *p,
			    const struct kiln_loc_samples *ls,
			    const char *focus, const char *ignore,
			    uint8_t *keep, kiln_prof_stop_fn stop, void *arg,
			    struct kiln_diag *d)
{
	struct filt f;
	size_t l, j;
	int err = filt_init(&f, p, focus, ignore, d), v;

	if (err)
		return err;
	memset(keep, f.f ? 0 : 1, p->nsamples);
	for (l = 1; l <= p->nlocations && !err; l++) {
		if (stop && !(l % KILN_PROF_CHECK_EVERY) && stop(arg)) {
			err = -ECANCELED;
			break;
		}
		v = judge_loc(p, &f, (uint32_t)l);
		if (v < 0) {
			err = v;
			break;
		}
		if (f.f && (v & LOC_FOCUS))
			for (j = ls->off[l]; j < ls->off[l + 1]; j++)
				keep[ls->samples[j]] = 1;
		f.loc[l] = (uint8_t)v;
	}
	for (l = 1; f.i && !err && l <= p->nlocations; l++)
		if (f.loc[l] & LOC_IGNORE)
			for (j = ls->off[l]; j < ls->off[l + 1]; j++)
				keep[ls->samples[j]] = 0;
	filt_release(&f);
	return err ? err : p->err;
}

int kiln_prof_weights(struct kiln_prof *p, const struct kiln_loc_samples *ls,
		      const char *focus, const char *ignore,
		      const int64_t *range, int type, int64_t *w,
		      kiln_prof_stop_fn stop, void *arg, struct kiln_diag *d)
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
	if (ls && ls->nlocations == p->nlocations && (focus || ignore))
		err = mask_by_location(p, ls, focus, ignore, keep, stop, arg, d);
	else
		err = kiln_prof_filter_mask(p, focus, ignore, keep, stop, arg, d);
	for (i = 0; !err && !range && i < p->nsamples; i++)
		w[i] = keep[i] ? kiln_prof_value(p, i, (size_t)type) : 0;
	if (!err && range) {
		memset(w, 0, p->nsamples * sizeof(*w));
		for (i = 0; i < p->nevents; i++) {
			const struct kiln_prof_event *e = &p->events[i];

			if (stop && !(i % KILN_PROF_CHECK_EVERY) && stop(arg)) {
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
