/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln serve's views (web stage): the cache of selections (input, sample
 * type, focus, ignore, hide, labels, group, transforms, time range), each
 * made once from the read-only inputs and shared by the requests that ask
 * for it, with what the views build from it (trees, top tables, kept
 * answers).  A byte budget with least-recently-used eviction bounds it,
 * a few computations run at once, a newer request of the same page stops
 * an older one's computation, and memory goes back to the system when
 * views go.  docs/design.md "kiln serve's threads".
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "web/web.h"
#include "web/webint.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kiln_web_view_drop_built(struct web_view *v)
{
	int i;

	for (i = 0; i < 2; i++) {
		kiln_tree_release(&v->tree[i]);
		kiln_tree_paths_release(&v->paths[i]);
		kiln_top_release(&v->top[i]);
		kiln_top_release(&v->base_top[i]);
		v->top_built[i] = v->base_top_built[i] = false;
	}
	for (i = 0; i < WEB_MEMOS; i++) {
		kiln_buf_release(&v->memo[i]);
		v->memo_ok[i] = false;
	}
	kiln_tree_release(&v->sw_callers);
	kiln_tree_release(&v->sw_callees);
	v->sw_name = 0;
	kiln_web_timed_free(v->timed);
	v->timed = NULL;
}

/* Frees the view and everything it holds (no reference left). */
static void view_free(struct web_view *v)
{
	if (!v)
		return;
	kiln_web_view_drop_built(v);
	free(v->w);
	if (v->own)
		kiln_prof_free(v->prof);
	if (v->base_own)
		kiln_prof_free(v->base);
	free(v->focus);
	free(v->ignore);
	free(v->hide);
	free(v->labels);
	free(v->group);
	free(v->tf);
	free(v->msg);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

/* Roughly the bytes a profile holds (its tables at their allocated
 * sizes, the hash indexes at 8 bytes a slot). */
static size_t prof_bytes(const struct kiln_prof *p)
{
	size_t nt = p->ntypes ? p->ntypes : 1;
	const struct kiln_htab *h[] = { &p->str_index, &p->func_index,
		&p->map_index, &p->loc_index, &p->lset_index, &p->sample_index };
	size_t b = sizeof(*p) + p->str_cap, i;

	b += p->strs_alloc * sizeof(*p->strs);
	b += p->functions_alloc * sizeof(*p->functions);
	b += p->mappings_alloc * sizeof(*p->mappings);
	b += p->locations_alloc * sizeof(*p->locations);
	b += p->lines_alloc * sizeof(*p->lines);
	b += p->labelsets_alloc * sizeof(*p->labelsets);
	b += p->labels_alloc * sizeof(*p->labels);
	b += p->samples_alloc * (sizeof(*p->samples) + nt * sizeof(int64_t));
	b += p->stacks_alloc * sizeof(*p->stacks);
	b += p->events_alloc * (sizeof(*p->events) + nt * sizeof(int64_t));
	b += p->ev_last_alloc * sizeof(*p->ev_last);
	for (i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		b += h[i]->slots ? (h[i]->mask + 1) * sizeof(*h[i]->slots) : 0;
	return b;
}

/* What view v holds, roughly (v's lock held: its parts do not move). */
static size_t view_bytes(const struct web_view *v)
{
	size_t b = sizeof(*v);
	int i;

	if (v->own && v->prof)
		b += prof_bytes(v->prof);
	if (v->w)
		b += v->prof->nsamples * sizeof(*v->w);
	if (v->base_own && v->base)
		b += prof_bytes(v->base);
	for (i = 0; i < 2; i++) {
		b += kiln_tree_bytes(&v->tree[i]);
		b += kiln_tree_paths_bytes(&v->paths[i]);
		b += v->top[i].n * sizeof(*v->top[i].rows);
		b += v->base_top[i].n * sizeof(*v->base_top[i].rows);
	}
	b += kiln_tree_bytes(&v->sw_callers) + kiln_tree_bytes(&v->sw_callees);
	for (i = 0; i < WEB_MEMOS; i++)
		b += v->memo[i].cap;
	return b;
}


static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The selection with "" as NULL. */
struct key {
	const char *focus, *ignore, *hide, *labels, *group, *tf;
};

static const char *opt(const char *s)
{
	return s && *s ? s : NULL;
}

/* The cached view of selection s (m->cache_lock held), or NULL. */
static struct web_view *cached(struct kiln_web_model *m, const struct web_sel *s,
			       const struct key *k)
{
	size_t i;

	for (i = 0; i < m->nviews; i++) {
		struct web_view *v = m->views[i];

		if (v->p == s->p && v->type == s->type &&
		    same(v->focus, k->focus) && same(v->ignore, k->ignore) &&
		    same(v->hide, k->hide) && same(v->labels, k->labels) &&
		    same(v->group, k->group) && same(v->tf, k->tf) &&
		    v->ranged == s->ranged &&
		    (!s->ranged || (v->t0 == s->t0 && v->t1 == s->t1)))
			return v;
	}
	return NULL;
}

/* Takes v out of the cache (m->cache_lock held); false if not there. */
static bool uncache(struct kiln_web_model *m, struct web_view *v)
{
	size_t i;

	for (i = 0; i < m->nviews; i++)
		if (m->views[i] == v) {
			m->views[i] = m->views[--m->nviews];
			m->cache_bytes -= v->bytes;
			v->used = false;
			return true;
		}
	return false;
}

/* A new view of s in the cache, its lock held and one reference, not
 * yet made (m->cache_lock held).  NULL on ENOMEM. */
static struct web_view *view_new(struct kiln_web_model *m,
				 const struct web_sel *s, const struct key *k)
{
	struct web_view *v = calloc(1, sizeof(*v));
	pthread_mutexattr_t a;
	const char *const src[] = { k->focus, k->ignore, k->hide, k->labels,
				    k->group, k->tf };
	char **dst[6];
	size_t i;

	if (!v || kiln_array_grow((void **)&m->views, &m->views_alloc,
				  m->nviews + 1, sizeof(*m->views))) {
		free(v);
		return NULL;
	}
	dst[0] = &v->focus, dst[1] = &v->ignore, dst[2] = &v->hide;
	dst[3] = &v->labels, dst[4] = &v->group, dst[5] = &v->tf;
	pthread_mutexattr_init(&a);
	/* save.c asks for the parts of a page, one view several times. */
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&v->lock, &a);
	pthread_mutexattr_destroy(&a);
	for (i = 0; i < 6; i++)
		if (src[i] && !(*dst[i] = strdup(src[i]))) {
			view_free(v);
			return NULL;
		}
	v->m = m;
	v->p = s->p;
	v->type = s->type;
	v->ranged = s->ranged;
	v->t0 = s->ranged ? s->t0 : 0;
	v->t1 = s->ranged ? s->t1 : 0;
	v->base_type = -1;
	v->refs = 1;
	v->used = true;
	v->tick = ++m->tick;
	v->bytes = sizeof(*v);
	m->cache_bytes += v->bytes;
	pthread_mutex_lock(&v->lock);
	m->views[m->nviews++] = v;
	return v;
}

int kiln_web_view(struct kiln_web_model *m, const struct web_sel *s,
		  struct web_view **out, struct kiln_diag *d)
{
	const struct key k = { opt(s->focus), opt(s->ignore), opt(s->hide),
			       opt(s->labels), opt(s->group), opt(s->tf) };
	struct web_making mk = { m, NULL, s->page ? kiln_web_page_hash(s->page) : 0, s->seq };
	struct kiln_diag own = { "" };
	struct web_view *v;
	int err;

	if (!d)
		d = &own;	/* kiln_web_model_warm() asks for no message */

again:
	pthread_mutex_lock(&m->cache_lock);
	if (mk.hash && !kiln_web_page_asks(m, mk.hash, mk.seq)) {
		pthread_mutex_unlock(&m->cache_lock);
		goto out_moved_on;
	}
	v = cached(m, s, &k);
	if (v) {
		__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
		v->tick = ++m->tick;
		m->hits++;
		pthread_mutex_unlock(&m->cache_lock);
		/* Made, or being made: its maker holds the lock until then. */
		pthread_mutex_lock(&v->lock);
		if (v->ready) {
			mk.v = v;
			goto out_ready;
		}
		err = v->err;
		if (err == -EINVAL && v->msg)
			snprintf(d->msg, sizeof(d->msg), "%s", v->msg);
		kiln_web_view_done(m, v);
		/* Its page moved on, not ours: make it.  (A heap trace's
		 * range stopped by a newer range stays stopped.) */
		if (err == -ECANCELED && !kiln_web_page_moved_on(m, mk.hash, mk.seq) &&
		    !__atomic_load_n(&m->closing, __ATOMIC_RELAXED) &&
		    !(s->ranged && m->in[s->p].trace))
			goto again;
		if (err == -ECANCELED)
			goto out_moved_on;
		return err;
	}
	v = view_new(m, s, &k);
	m->made += v != NULL;
	pthread_mutex_unlock(&m->cache_lock);
	if (!v)
		return -ENOMEM;
	mk.v = v;
	err = kiln_web_view_make(m, v, s, &mk, d);
	if (err) {
		/* Those waiting for it hear why; later requests try again. */
		v->err = err;
		if (err == -EINVAL)
			v->msg = strdup(d->msg);
		pthread_mutex_lock(&m->cache_lock);
		uncache(m, v);
		pthread_mutex_unlock(&m->cache_lock);
		kiln_web_view_done(m, v);
		if (err == -ECANCELED)
			goto out_moved_on;
		return err;
	}
	v->ready = true;
out_ready:
	/* Made of weights, asked by a request that reads more. */
	if (v->w && !s->weighed_ok) {
		err = kiln_web_view_whole(m, v, &mk, d);
		if (err) {
			kiln_web_view_done(m, v);
			if (err == -ECANCELED)
				goto out_moved_on;
			return err;
		}
	}
	*out = v;
	return 0;
out_moved_on:
	/* Else a newer range of a heap trace stopped it: call.c says so. */
	if (__atomic_load_n(&m->closing, __ATOMIC_RELAXED))
		snprintf(d->msg, sizeof(d->msg), "kiln serve is stopping");
	else if (kiln_web_page_moved_on(m, mk.hash, mk.seq))
		snprintf(d->msg, sizeof(d->msg), "a newer request of page '%s' "
			 "came meanwhile", s->page ? s->page : "");
	else
		d->msg[0] = '\0';
	return -ECANCELED;
}

/* Drops the least recently used views nobody uses while the cache is
 * over its budget (m->cache_lock held); they go on *gone.  The pinned
 * ones (each input's first page, kiln_web_model_warm()) stay but with a
 * budget of 0 (--cache-mb 0: keep nothing): they are few, and the page
 * every visit opens on is not made again. */
static void evict(struct kiln_web_model *m, struct web_view **gone,
		  size_t *ngone, size_t most)
{
	while (m->cache_bytes > m->cache_budget && *ngone < most) {
		struct web_view *lru = NULL;
		size_t i;

		for (i = 0; i < m->nviews; i++) {
			struct web_view *v = m->views[i];

			if (!v->refs && (!v->pinned || !m->cache_budget) &&
			    (!lru || v->tick < lru->tick))
				lru = v;
		}
		if (!lru)
			break;
		uncache(m, lru);
		gone[(*ngone)++] = lru;
	}
}

/* Frees views no longer in the cache.  Their big arrays were mapped
 * whole (kiln serve's M_MMAP_THRESHOLD) and go back to the system now;
 * the rest when idle (kiln_web_model_tidy()). */
static void free_views(struct web_view **gone, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		view_free(gone[i]);
}

void kiln_web_view_done(struct kiln_web_model *m, struct web_view *v)
{
	size_t bytes = view_bytes(v), ngone = 0;
	struct web_view *gone[16];

	pthread_mutex_unlock(&v->lock);
	pthread_mutex_lock(&m->cache_lock);
	__atomic_sub_fetch(&v->refs, 1, __ATOMIC_RELAXED);
	if (v->used) {
		m->cache_bytes += bytes - v->bytes;
		v->bytes = bytes;
		v->tick = ++m->tick;
	} else if (!v->refs) {
		gone[ngone++] = v;	/* out of the cache, the last user */
	}
	evict(m, gone, &ngone, sizeof(gone) / sizeof(gone[0]));
	pthread_mutex_unlock(&m->cache_lock);
	free_views(gone, ngone);
}

void kiln_web_req_begin(struct kiln_web_model *m)
{
	pthread_mutex_lock(&m->cache_lock);
	m->inflight++;
	m->dropped = false;
	pthread_mutex_unlock(&m->cache_lock);
}

void kiln_web_req_end(struct kiln_web_model *m)
{
	pthread_mutex_lock(&m->cache_lock);
	m->inflight--;
	m->idle_since = now_ns();
	pthread_mutex_unlock(&m->cache_lock);
}

bool kiln_web_model_tidy(struct kiln_web_model *m)
{
	struct web_view **gone = NULL;
	size_t i, n = 0;

	pthread_mutex_lock(&m->cache_lock);
	if (m->inflight || m->dropped ||
	    now_ns() - m->idle_since < WEB_IDLE_DROP_S * 1000000000ull) {
		pthread_mutex_unlock(&m->cache_lock);
		return false;
	}
	m->dropped = true;
	gone = malloc((m->nviews + 1) * sizeof(*gone));
	for (i = 0; gone && i < m->nviews;) {
		struct web_view *v = m->views[i];

		if (!v->refs && !v->pinned) {
			uncache(m, v);	/* moves the last one to i */
			gone[n++] = v;
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&m->cache_lock);
	free_views(gone, n);
	free(gone);
	kiln_web_all_drop(m);
	/* Every arena's free pages back to the system (glibc): the
	 * connections' threads each filled one, which would otherwise keep
	 * the process at its peak. */
	malloc_trim(0);
	return true;
}

void kiln_web_model_set_cache(struct kiln_web_model *m, size_t bytes)
{
	pthread_mutex_lock(&m->cache_lock);
	m->cache_budget = bytes;
	pthread_mutex_unlock(&m->cache_lock);
}

void kiln_web_views_free(struct kiln_web_model *m)
{
	size_t i;

	for (i = 0; i < m->nviews; i++)
		view_free(m->views[i]);
	free(m->views);
	m->views = NULL;
	m->nviews = m->views_alloc = 0;
}

int kiln_web_model_warm(struct kiln_web_model *m)
{
	struct web_view *v;
	struct kiln_tree *t;
	size_t i;
	struct web_sel s = { 0 };
	int type, err = 0;

	for (i = 0; i < m->n && i < 6 && !err; i++) {
		type = kiln_prof_type_index(m->in[i].prof, NULL, NULL);
		if (type < 0)
			continue;	/* no sample types: nothing to draw */
		s.p = (unsigned)i;
		s.type = type;
		err = kiln_web_view(m, &s, &v, NULL);
		if (err)
			break;
		err = kiln_web_view_tree(v, false, false, &t, NULL);
		v->pinned = true;	/* what the idle memory holds */
		kiln_web_view_done(m, v);
	}
	return err;
}

/* Contract in webint.h.  NULL costs nothing but speed: the caller then
 * builds its tree or reads its samples itself. */
struct web_all *kiln_web_all_get(struct kiln_web_model *m, unsigned p,
				 int which)
{
	struct web_input *in = &m->in[p];
	struct web_all *a;

	pthread_mutex_lock(&m->all_lock);
	a = in->all[which];
	if (!a && (a = calloc(1, sizeof(*a)))) {
		if (which == WEB_ALL_LOCS ? kiln_loc_samples_build(&a->ls, in->prof) :
		    kiln_tree_all_build(&a->a, in->prof, which)) {
			free(a);
			a = NULL;
		}
		in->all[which] = a;
	}
	if (a)
		a->refs++;
	pthread_mutex_unlock(&m->all_lock);
	return a;
}

int kiln_web_all_select(struct kiln_web_model *m, struct web_all *a,
			struct kiln_tree *t, struct kiln_prof *p, const int64_t *w)
{
	struct kiln_tree_sel *s = NULL;
	int i, err;

	pthread_mutex_lock(&m->all_lock);
	for (i = 0; i < WEB_ALL_SEL && !s; i++)
		if (!a->sel_taken[i]) {
			a->sel_taken[i] = true;
			s = &a->sel[i];
		}
	pthread_mutex_unlock(&m->all_lock);
	err = kiln_tree_select(t, &a->a, p, w, s);
	if (s) {
		pthread_mutex_lock(&m->all_lock);
		a->sel_taken[s - a->sel] = false;
		pthread_mutex_unlock(&m->all_lock);
	}
	return err;
}

void kiln_web_all_free(struct web_all *a)
{
	int i;

	if (!a)
		return;
	for (i = 0; i < WEB_ALL_SEL; i++)
		kiln_tree_sel_release(&a->sel[i]);
	kiln_tree_all_release(&a->a);
	kiln_loc_samples_release(&a->ls);
	free(a);
}

void kiln_web_all_put(struct kiln_web_model *m, struct web_all *a)
{
	bool last;

	pthread_mutex_lock(&m->all_lock);
	last = !--a->refs && a->dropped;
	pthread_mutex_unlock(&m->all_lock);
	if (last)
		kiln_web_all_free(a);
}

void kiln_web_all_drop(struct kiln_web_model *m)
{
	size_t i;
	int r;

	for (i = 0; i < m->n; i++)
		for (r = 0; r < 3; r++) {
			struct web_all *a;
			bool now;

			pthread_mutex_lock(&m->all_lock);
			a = m->in[i].all[r];
			m->in[i].all[r] = NULL;
			now = a && !a->refs;
			if (a)
				a->dropped = true;
			pthread_mutex_unlock(&m->all_lock);
			if (now)
				kiln_web_all_free(a);
		}
}

/*
 * Whether the weighed view v's tree is better taken from the tree of
 * every sample (its cost: a pass over that tree's nodes) than built
 * (a lookup per frame of each kept sample): when the kept samples' stacks
 * are at least a quarter as long as the input's together.
 */
static bool select_pays(const struct web_view *v)
{
	const struct kiln_prof *p = v->prof;
	size_t i, all = 0, kept = 0;

	for (i = 0; i < p->nsamples; i++) {
		all += p->samples[i].depth;
		if (v->w[i] > 0)
			kept += p->samples[i].depth;
	}
	return kept * 4 >= all;
}

int kiln_web_view_tree(struct web_view *v, bool reverse, bool diff,
		       struct kiln_tree **out, struct kiln_diag *d)
{
	struct kiln_tree *t = &v->tree[reverse];
	int err;

	if (diff && !v->base)
		return kiln_diag(d, "no diff base: start kiln serve with --diff BASE");
	if (diff && v->base_type < 0)
		return kiln_diag(d, "the diff base has no sample type %s/%s",
				 kiln_prof_str(v->prof, v->prof->types[v->type].type),
				 kiln_prof_str(v->prof, v->prof->types[v->type].unit));
	if (!t->n) {
		struct web_all *a = v->w && select_pays(v) ?
			kiln_web_all_get(v->m, v->p, reverse) : NULL;

		err = a ? kiln_web_all_select(v->m, a, t, v->prof, v->w) :
			  kiln_tree_build_w(t, v->prof, v->type, reverse, v->w);
		if (a)
			kiln_web_all_put(v->m, a);
		if (err)
			return err;
	}
	if (diff && !t->has_base) {
		err = v->base_by_function ?
			kiln_tree_add_base_by_function(t, v->base, v->base_type) :
			kiln_tree_add_base(t, v->base, v->base_type);
		if (err)
			return err;
	}
	*out = t;
	return 0;
}

int kiln_web_view_paths(struct web_view *v, bool reverse,
			struct kiln_tree_paths **out)
{
	struct kiln_tree_paths *ps = &v->paths[reverse];
	int err;

	/* Read only on a shared input: every name was made at load. */
	if (!ps->off) {
		err = kiln_tree_paths_build_w(ps, v->prof, v->type, reverse, v->w);
		if (err)
			return err;
	}
	*out = ps;
	return 0;
}

int kiln_web_view_top(struct web_view *v, bool by_line, struct kiln_top **out)
{
	int err;

	if (!v->top_built[by_line]) {
		err = kiln_top_build_w(&v->top[by_line], v->prof, v->type,
				       by_line ? KILN_TOP_LINES : KILN_TOP_FUNCTIONS,
				       false, v->w);
		if (err)
			return err;
		v->top_built[by_line] = true;
	}
	*out = &v->top[by_line];
	return 0;
}

int kiln_web_view_base_top(struct web_view *v, bool by_line,
			   struct kiln_top **out)
{
	int err;

	if (!v->base_top_built[by_line]) {
		err = kiln_top_build(&v->base_top[by_line], v->base,
				     v->base_type,
				     by_line ? KILN_TOP_LINES : KILN_TOP_FUNCTIONS,
				     false);
		if (err)
			return err;
		v->base_top_built[by_line] = true;
	}
	*out = &v->base_top[by_line];
	return 0;
}

