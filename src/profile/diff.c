/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comparison of two sets of profiles with simultaneous bootstrap
 * confidence intervals (profile stage; see diff.h and docs/kiln-diff.md).
 */
#include "profile/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"

/*
 * A profile reduced to what the bootstrap needs: per stack with a value,
 * its value, the samples behind it, its leaf function and the distinct
 * functions of its stack (indexes into the names: string ids of
 * d->names).
 */
struct run {
	size_t n;
	double *v, *c;
	uint32_t *leaf, *set0, *setn;
	uint32_t *pool;
	size_t npool, pool_alloc;
};

struct side {
	struct run *runs;
	size_t n;
};

/* Per-location function lists, found once per location. */
struct loccache {
	uint32_t *first, *count;	/* by location id; first is +1 */
	uint32_t *ids;
	size_t nids, alloc;
};

/* xoshiro256** seeded through splitmix64: small, fast, reproducible. */
struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in (0, 1). */
static double rng_unit(struct rng *r)
{
	return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

/*
 * A Poisson(mean) draw: by multiplying uniforms for small means, by the
 * normal approximation (rounded, at least 0) above 30, where it is
 * within a percent of the exact law's spread, which is all the bootstrap
 * asks of it.
 */
static double poisson(struct rng *r, double mean)
{
	if (mean < 30) {
		double l = exp(-mean), p = rng_unit(r);
		double k = 0;

		while (p > l) {
			p *= rng_unit(r);
			k++;
		}
		return k;
	}
	{
		double z = sqrt(-2 * log(rng_unit(r))) *
			   cos(6.283185307179586 * rng_unit(r));
		double k = floor(mean + sqrt(mean) * z + 0.5);

		return k < 0 ? 0 : k;
	}
}

static void run_release(struct run *r)
{
	free(r->v);
	free(r->c);
	free(r->leaf);
	free(r->set0);
	free(r->setn);
	free(r->pool);
	memset(r, 0, sizeof(*r));
}

/* Which type counts the samples of type `type` (-1: none). */
static int count_type(const struct kiln_prof *p, int type)
{
	size_t i;

	if (!strcmp(kiln_prof_str(p, p->types[type].unit), "count"))
		return type;
	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(kiln_prof_str(p, p->types[i].type), "samples") &&
		    !strcmp(kiln_prof_str(p, p->types[i].unit), "count"))
			return (int)i;
	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(kiln_prof_str(p, p->types[i].unit), "count"))
			return (int)i;
	return -1;
}

/* The samples behind value v of sample i: see kiln_diff_build(). */
static double samples_of(const struct kiln_prof *p, size_t i, int type,
			 int ctype, double v)
{
	double c;

	if (ctype >= 0) {
		c = (double)kiln_prof_value(p, i, (size_t)ctype);
		return c > 0 ? c : 1;
	}
	if (p->period > 0 && p->period_type.unit == p->types[type].unit) {
		c = floor(v / (double)p->period + 0.5);
		return c > 0 ? c : 1;
	}
	return 1;
}

/* The function indexes of location loc's frames (leaf first), cached. */
static int loc_funcs(struct kiln_prof *names, struct kiln_prof *p,
		     struct loccache *lc, const struct kiln_sample *smp,
		     uint32_t d, struct kiln_frame **frames, size_t *cap)
{
	uint32_t loc = p->stacks[smp->stack + d];
	struct kiln_sample one = { smp->stack + d, 1, 0 };
	long nf, j;

	if (loc > p->nlocations)
		return -EINVAL;
	if (lc->first[loc])
		return 0;
	nf = kiln_prof_frames(p, &one, frames, cap);
	if (nf < 0)
		return (int)nf;
	if (KILN_GROW(lc->ids, lc->alloc, lc->nids + (size_t)nf, 256))
		return -ENOMEM;
	for (j = 0; j < nf; j++) {
		uint32_t id = (*frames)[j].name;
		uint32_t u = kiln_prof_intern(names, kiln_prof_str(p, id),
					      kiln_prof_strlen(p, id));

		if (names->err)
			return names->err;
		lc->ids[lc->nids + (size_t)j] = u;
	}
	lc->first[loc] = (uint32_t)lc->nids + 1;
	lc->count[loc] = (uint32_t)nf;
	lc->nids += (size_t)nf;
	return 0;
}

/*
 * Scratch for distinct sets: by name, the last stack that held it (a
 * number that runs on over every profile reduced).
 */
struct stamps {
	uint32_t *at;
	size_t alloc;
	uint32_t now;
};

static int stamps_fit(struct stamps *st, size_t n)
{
	size_t old = st->alloc;

	if (n <= old)
		return 0;
	if (KILN_GROW(st->at, st->alloc, n, 1024))
		return -ENOMEM;
	memset(st->at + old, 0, (st->alloc - old) * sizeof(*st->at));
	return 0;
}

/*
 * Reduces profile p (type `type`) into r, names interned into names.
 */
static int run_fill(struct run *r, struct kiln_prof *names, struct kiln_prof *p,
		    int type, struct stamps *st)
{
	struct loccache lc = { 0 };
	struct kiln_frame *frames = NULL;
	size_t cap = 0, i, alloc = 0;
	int ctype = count_type(p, type), err = 0;

	lc.first = calloc(p->nlocations + 1, sizeof(*lc.first));
	lc.count = calloc(p->nlocations + 1, sizeof(*lc.count));
	if (!lc.first || !lc.count) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *smp = &p->samples[i];
		double v = (double)kiln_prof_value(p, i, (size_t)type);
		uint32_t d, k, start;
		bool leaf = true;

		if (v <= 0 || !smp->depth)
			continue;
		if (r->n == alloc) {
			size_t a = alloc, b = alloc, c2 = alloc, e = alloc,
			       f = alloc;

			if (KILN_GROW(r->v, a, r->n + 1, 256) ||
			    KILN_GROW(r->c, b, r->n + 1, 256) ||
			    KILN_GROW(r->leaf, c2, r->n + 1, 256) ||
			    KILN_GROW(r->set0, e, r->n + 1, 256) ||
			    KILN_GROW(r->setn, f, r->n + 1, 256)) {
				err = -ENOMEM;
				goto out;
			}
			alloc = a;
		}
		start = (uint32_t)r->npool;
		st->now++;
		for (d = 0; d < smp->depth; d++) {
			uint32_t loc = p->stacks[smp->stack + d];

			err = loc_funcs(names, p, &lc, smp, d, &frames, &cap);
			if (err)
				goto out;
			if (stamps_fit(st, names->nstrs)) {
				err = -ENOMEM;
				goto out;
			}
			for (k = 0; k < lc.count[loc]; k++) {
				uint32_t u = lc.ids[lc.first[loc] - 1 + k];

				if (leaf)
					r->leaf[r->n] = u;
				leaf = false;
				/* Recursion: a function once per stack. */
				if (st->at[u] == st->now)
					continue;
				st->at[u] = st->now;
				if (KILN_GROW(r->pool, r->pool_alloc,
					      r->npool + 1, 1024)) {
					err = -ENOMEM;
					goto out;
				}
				r->pool[r->npool++] = u;
			}
		}
		if (leaf)
			continue;	/* no frame at all */
		r->v[r->n] = v;
		r->c[r->n] = samples_of(p, i, type, ctype, v);
		r->set0[r->n] = start;
		r->setn[r->n] = (uint32_t)r->npool - start;
		r->n++;
	}
out:
	free(frames);
	free(lc.first);
	free(lc.count);
	free(lc.ids);
	return err;
}

/* Scratch of one evaluation: per name, flat and cum of a side. */
struct acc {
	double *flat, *cum;	/* mean shares of the side, [nfn] */
	double *rf, *rc;	/* one profile's values, [nfn] */
};

/*
 * Adds run r's shares / k to a, its samples weighted by Poisson draws
 * (rng) or not (NULL: the observed values).  counts: add samples, not
 * values, without dividing (the samples behind each share).
 */
static void add_run(struct acc *a, const struct run *r, size_t nfn,
		    struct rng *rng, double k, bool counts)
{
	double total = 0;
	size_t i, j;

	memset(a->rf, 0, nfn * sizeof(double));
	memset(a->rc, 0, nfn * sizeof(double));
	for (i = 0; i < r->n; i++) {
		double w = counts ? r->c[i] : r->v[i];

		if (rng)
			w *= poisson(rng, r->c[i]) / r->c[i];
		if (!w)
			continue;
		total += w;
		a->rf[r->leaf[i]] += w;
		for (j = 0; j < r->setn[i]; j++)
			a->rc[r->pool[r->set0[i] + j]] += w;
	}
	if (counts) {
		for (i = 0; i < nfn; i++) {
			a->flat[i] += a->rf[i];
			a->cum[i] += a->rc[i];
		}
		return;
	}
	if (total <= 0)
		return;
	for (i = 0; i < nfn; i++) {
		a->flat[i] += 100.0 * a->rf[i] / total / k;
		a->cum[i] += 100.0 * a->rc[i] / total / k;
	}
}

/*
 * One side's mean shares: observed (rng NULL) or one bootstrap
 * replicate, the profiles drawn with replacement when resample.
 */
static void side_eval(struct acc *a, const struct side *s, size_t nfn,
		      struct rng *rng, bool resample)
{
	size_t i;

	memset(a->flat, 0, nfn * sizeof(double));
	memset(a->cum, 0, nfn * sizeof(double));
	for (i = 0; i < s->n; i++) {
		size_t pick = rng && resample ? rng_next(rng) % s->n : i;

		add_run(a, &s->runs[pick], nfn, rng, (double)s->n, false);
	}
}

struct work {
	struct side base, new;
	size_t nfn;
	struct acc ab, an;
	double *obs;		/* observed deltas, [2 * nfn]: flat, then cum */
	double *ob, *on;	/* observed shares of each side, the same */
	double *sum, *sumsq;	/* over replicates, [2 * nfn] */
	double *se;		/* [2 * nfn] */
	bool *tested;		/* [2 * nfn] */
	double *maxt;		/* [resamples] */
};

/*
 * The spread factor of a side of k profiles drawn with replacement: the
 * mean of k draws from k values varies (k - 1) / k as much as the mean of
 * k fresh runs would, so its deviations are scaled by sqrt(k / (k - 1))
 * (the small-sample correction of the bootstrap's variance).
 */
static double spread(const struct side *s, bool resample)
{
	return resample && s->n > 1 ?
	       sqrt((double)s->n / (double)(s->n - 1)) : 1.0;
}

/* Replicate b's deltas into out[2 * nfn]. */
static void replicate(struct work *w, const struct kiln_diff_opts *o,
		      unsigned b, bool resample, double *out)
{
	double fb = spread(&w->base, resample), fn = spread(&w->new, resample);
	size_t i, n = w->nfn;
	struct rng rng;

	rng_seed(&rng, o->seed * 0x100000001b3ull + b);
	side_eval(&w->ab, &w->base, n, &rng, resample);
	side_eval(&w->an, &w->new, n, &rng, resample);
	for (i = 0; i < n; i++) {
		out[i] = w->on[i] + fn * (w->an.flat[i] - w->on[i]) -
			 w->ob[i] - fb * (w->ab.flat[i] - w->ob[i]);
		out[n + i] = w->on[n + i] + fn * (w->an.cum[i] - w->on[n + i]) -
			     w->ob[n + i] - fb * (w->ab.cum[i] - w->ob[n + i]);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The bootstrap: pass one gives each column's standard error, pass two
 * (the same replicates, drawn again from their seeds) the largest
 * studentized deviation of each replicate over the tested columns; its
 * quantile is the simultaneous critical value.
 */
static int bootstrap(struct work *w, const struct kiln_diff_opts *o,
		     bool resample, double *crit)
{
	size_t m = 2 * w->nfn, i;
	double *rep = malloc((m ? m : 1) * sizeof(*rep));
	unsigned b;
	size_t q;

	if (!rep)
		return -ENOMEM;
	for (b = 0; b < o->resamples; b++) {
		replicate(w, o, b, resample, rep);
		for (i = 0; i < m; i++) {
			double dv = rep[i] - w->obs[i];

			w->sum[i] += dv;
			w->sumsq[i] += dv * dv;
		}
	}
	for (i = 0; i < m; i++) {
		double mean = w->sum[i] / o->resamples;
		double var = w->sumsq[i] / o->resamples - mean * mean;

		w->se[i] = var > 0 ? sqrt(var * o->resamples /
					  (o->resamples > 1 ? o->resamples - 1 : 1)) : 0;
		/* A share of exactly 100% (main) or 0 on both sides has no
		 * spread: nothing to test. */
		if (w->se[i] < 1e-9)
			w->tested[i] = false;
	}
	for (b = 0; b < o->resamples; b++) {
		double mx = 0;

		replicate(w, o, b, resample, rep);
		for (i = 0; i < m; i++) {
			double t;

			if (!w->tested[i])
				continue;
			t = fabs(rep[i] - w->obs[i]) / w->se[i];
			if (t > mx)
				mx = t;
		}
		w->maxt[b] = mx;
	}
	qsort(w->maxt, o->resamples, sizeof(*w->maxt), cmp_double);
	q = (size_t)ceil(o->confidence * o->resamples);
	if (q < 1)
		q = 1;
	if (q > o->resamples)
		q = o->resamples;
	*crit = w->maxt[q - 1];
	free(rep);
	return 0;
}

static void fill_stat(struct kiln_diff_stat *s, const struct kiln_diff *d,
		      const struct work *w, size_t col, double base,
		      double new, double bs, double ns)
{
	s->base = base;
	s->new = new;
	s->delta = w->obs[col];
	s->se = w->se[col];
	s->base_samples = bs;
	s->new_samples = ns;
	s->lo = s->hi = s->delta;
	s->verdict = KILN_DIFF_UNTESTED;
	if (!w->tested[col])
		return;
	s->lo = s->delta - d->crit * s->se;
	s->hi = s->delta + d->crit * s->se;
	s->verdict = s->lo > 0 ? KILN_DIFF_GREW :
		     s->hi < 0 ? KILN_DIFF_SHRANK : KILN_DIFF_SAME;
	s->regression = d->opts.fail_on >= 0 && s->verdict == KILN_DIFF_GREW &&
			s->hi >= d->opts.fail_on;
}

static double row_key(const struct kiln_diff_row *r)
{
	double a = fabs(r->flat.delta), b = fabs(r->cum.delta);

	return a > b ? a : b;
}

static int cmp_rows(const void *x, const void *y)
{
	const struct kiln_diff_row *a = x, *b = y;
	bool ra = a->flat.regression || a->cum.regression;
	bool rb = b->flat.regression || b->cum.regression;
	double ka = row_key(a), kb = row_key(b);

	if (ra != rb)
		return ra ? -1 : 1;
	if (ka != kb)
		return ka > kb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void work_release(struct work *w)
{
	size_t i;

	for (i = 0; i < w->base.n; i++)
		run_release(&w->base.runs[i]);
	for (i = 0; i < w->new.n; i++)
		run_release(&w->new.runs[i]);
	free(w->base.runs);
	free(w->new.runs);
	free(w->ab.flat);
	free(w->ab.cum);
	free(w->ab.rf);
	free(w->ab.rc);
	free(w->an.flat);
	free(w->an.cum);
	free(w->an.rf);
	free(w->an.rc);
	free(w->obs);
	free(w->ob);
	free(w->on);
	free(w->sum);
	free(w->sumsq);
	free(w->se);
	free(w->tested);
	free(w->maxt);
}

static int acc_alloc(struct acc *a, size_t n)
{
	a->flat = calloc(n, sizeof(double));
	a->cum = calloc(n, sizeof(double));
	a->rf = calloc(n, sizeof(double));
	a->rc = calloc(n, sizeof(double));
	return a->flat && a->cum && a->rf && a->rc ? 0 : -ENOMEM;
}

static int reduce_side(struct side *s, struct kiln_prof *names,
		       struct kiln_prof **p, const int *types, size_t n,
		       struct stamps *st)
{
	size_t i;
	int err;

	s->runs = calloc(n, sizeof(*s->runs));
	if (!s->runs)
		return -ENOMEM;
	s->n = n;
	for (i = 0; i < n; i++) {
		if (types[i] < 0 || (size_t)types[i] >= p[i]->ntypes)
			return -EINVAL;
		err = run_fill(&s->runs[i], names, p[i], types[i], st);
		if (err)
			return err;
	}
	return 0;
}

/* The samples behind each name's flat and cum on side s, into a. */
static void side_counts(struct acc *a, const struct side *s, size_t nfn,
			double *total)
{
	size_t i, j;

	memset(a->flat, 0, nfn * sizeof(double));
	memset(a->cum, 0, nfn * sizeof(double));
	*total = 0;
	for (i = 0; i < s->n; i++) {
		add_run(a, &s->runs[i], nfn, NULL, 1, true);
		for (j = 0; j < s->runs[i].n; j++)
			*total += s->runs[i].c[j];
	}
}

/* The table: names, shares, tested columns.  Needs w->obs. */
static int fill_counts(struct kiln_diff *d, struct work *w, double *cnt)
{
	size_t i, nfn = w->nfn;

	side_counts(&w->ab, &w->base, nfn, &d->base_samples);
	side_counts(&w->an, &w->new, nfn, &d->new_samples);
	for (i = 0; i < nfn; i++) {
		cnt[4 * i] = w->ab.flat[i];
		cnt[4 * i + 1] = w->an.flat[i];
		cnt[4 * i + 2] = w->ab.cum[i];
		cnt[4 * i + 3] = w->an.cum[i];
		w->tested[i] = fmax(cnt[4 * i], cnt[4 * i + 1]) >=
			       d->opts.min_samples;
		w->tested[nfn + i] = fmax(cnt[4 * i + 2], cnt[4 * i + 3]) >=
				     d->opts.min_samples;
	}
	return 0;
}

static int make_rows(struct kiln_diff *d, struct work *w, const double *cnt)
{
	size_t nfn = w->nfn, i;

	d->rows = calloc(nfn ? nfn : 1, sizeof(*d->rows));
	if (!d->rows)
		return -ENOMEM;
	/* Observed shares once more, for the table's columns. */
	side_eval(&w->ab, &w->base, nfn, NULL, false);
	side_eval(&w->an, &w->new, nfn, NULL, false);
	for (i = 1; i < nfn; i++) {
		struct kiln_diff_row *r = &d->rows[d->n];

		if (!cnt[4 * i] && !cnt[4 * i + 1] && !cnt[4 * i + 2] &&
		    !cnt[4 * i + 3])
			continue;
		r->name = kiln_prof_str(d->names, (uint32_t)i);
		fill_stat(&r->flat, d, w, i, w->ab.flat[i], w->an.flat[i],
			  cnt[4 * i], cnt[4 * i + 1]);
		fill_stat(&r->cum, d, w, nfn + i, w->ab.cum[i], w->an.cum[i],
			  cnt[4 * i + 2], cnt[4 * i + 3]);
		if (r->flat.regression || r->cum.regression)
			d->nregressions++;
		d->n++;
	}
	for (i = 0; i < 2 * nfn; i++)
		d->ntested += w->tested[i];
	if (d->n)
		qsort(d->rows, d->n, sizeof(*d->rows), cmp_rows);
	return 0;
}

int kiln_diff_build(struct kiln_diff *d, struct kiln_prof **base,
		    const int *base_types, size_t nbase, struct kiln_prof **new,
		    const int *new_types, size_t nnew,
		    const struct kiln_diff_opts *o)
{
	static const struct kiln_diff_opts defaults = KILN_DIFF_OPTS_INIT;
	struct work w = { 0 };
	struct stamps st = { NULL, 0, 0 };
	size_t nfn, i;
	double *cnt = NULL;
	int err;

	memset(d, 0, sizeof(*d));
	d->opts = o ? *o : defaults;
	if (!d->opts.confidence)
		d->opts.confidence = defaults.confidence;
	if (!d->opts.resamples)
		d->opts.resamples = defaults.resamples;
	if (!d->opts.min_samples)
		d->opts.min_samples = defaults.min_samples;
	if (!nbase || !nnew || d->opts.confidence <= 0 ||
	    d->opts.confidence >= 1)
		return -EINVAL;
	d->nbase = nbase;
	d->nnew = nnew;
	d->by_profiles = nbase > 1 || nnew > 1;
	d->names = kiln_prof_new();
	if (!d->names)
		return -ENOMEM;
	err = reduce_side(&w.base, d->names, base, base_types, nbase, &st);
	if (!err)
		err = reduce_side(&w.new, d->names, new, new_types, nnew, &st);
	free(st.at);
	if (err)
		goto out;
	nfn = w.nfn = d->names->nstrs;
	err = -ENOMEM;
	if (acc_alloc(&w.ab, nfn) || acc_alloc(&w.an, nfn))
		goto out;
	w.obs = calloc(2 * nfn, sizeof(double));
	w.ob = calloc(2 * nfn, sizeof(double));
	w.on = calloc(2 * nfn, sizeof(double));
	w.sum = calloc(2 * nfn, sizeof(double));
	w.sumsq = calloc(2 * nfn, sizeof(double));
	w.se = calloc(2 * nfn, sizeof(double));
	w.tested = calloc(2 * nfn, sizeof(bool));
	w.maxt = calloc(d->opts.resamples, sizeof(double));
	cnt = calloc(4 * nfn, sizeof(double));
	if (!w.obs || !w.ob || !w.on || !w.sum || !w.sumsq || !w.se || !w.tested || !w.maxt ||
	    !cnt)
		goto out;
	side_eval(&w.ab, &w.base, nfn, NULL, false);
	side_eval(&w.an, &w.new, nfn, NULL, false);
	for (i = 0; i < nfn; i++) {
		w.ob[i] = w.ab.flat[i];
		w.ob[nfn + i] = w.ab.cum[i];
		w.on[i] = w.an.flat[i];
		w.on[nfn + i] = w.an.cum[i];
		w.obs[i] = w.an.flat[i] - w.ab.flat[i];
		w.obs[nfn + i] = w.an.cum[i] - w.ab.cum[i];
	}
	fill_counts(d, &w, cnt);
	err = bootstrap(&w, &d->opts, d->by_profiles, &d->crit);
	if (!err)
		err = make_rows(d, &w, cnt);
out:
	free(cnt);
	work_release(&w);
	if (err)
		kiln_diff_release(d);
	return err;
}

void kiln_diff_release(struct kiln_diff *d)
{
	free(d->rows);
	kiln_prof_free(d->names);
	memset(d, 0, sizeof(*d));
}
