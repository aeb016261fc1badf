/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How a view of kiln serve is made (web stage): the selection's profile
 * filtered from the read-only input (only the samples that pass are
 * copied), or a heap trace analysed again over a time range; at most
 * m->work_max made at once; each stops when a newer request of its page
 * came and nobody else waits for it.  The cache is views.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/heaptrace.h"
#include "profile/profile.h"
#include "profile/transform.h"
#include "util/buf.h"
#include "util/diag.h"
#include "web/web.h"
#include "web/webint.h"

/*
 * Applies the label conditions (struct web_sel's format) and the
 * grouping to p.  0, -EINVAL (a condition without '=', d filled) or
 * -ENOMEM.
 */
static int by_labels(struct kiln_prof *p, const char *labels,
		     const char *group, struct kiln_diag *d)
{
	struct kiln_label_cond *c = NULL;
	size_t n = 0, cap = 0, i, len = labels ? strlen(labels) : 0;
	char *buf = malloc(len + 1), *w = buf, *item = buf, *eq;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	/* Unescape into buf, cutting items at the unescaped ';'. */
	for (i = 0; i <= len && !err; i++) {
		char ch = labels ? labels[i] : '\0';

		if (ch == '\\' && i + 1 < len) {
			*w++ = labels[++i];
			continue;
		}
		if (ch != ';' && ch) {
			*w++ = ch;
			continue;
		}
		*w++ = '\0';
		if (!*item) {
			item = w;
			continue;
		}
		if (kiln_array_grow((void **)&c, &cap, n + 1, sizeof(*c))) {
			err = -ENOMEM;
			break;
		}
		eq = strchr(item, '=');
		if (!eq || eq == item || (eq == item + 1 && *item == '!')) {
			err = kiln_diag(d, "bad label condition '%s': want KEY=VALUE "
					"or KEY!=VALUE", item);
			break;
		}
		c[n].exclude = eq[-1] == '!';
		if (c[n].exclude)
			eq[-1] = '\0';
		*eq = '\0';
		c[n].key = item;
		c[n].value = eq + 1;
		n++;
		item = w;
	}
	if (!err)
		err = kiln_prof_keep_labels(p, c, n);
	if (!err)
		err = kiln_prof_group_by_label(p, group);
	free(c);
	free(buf);
	return err;
}

/* The stack transforms tf (text form) applied to p.  0, -EINVAL (a bad
 * list, d filled) or -ENOMEM. */
static int transformed(struct kiln_prof *p, const char *tf,
		       struct kiln_diag *d)
{
	struct kiln_tf_list l = KILN_TF_LIST_INIT;
	int err;

	if (!tf)
		return 0;
	err = kiln_tf_parse(&l, tf, d);
	if (!err)
		err = kiln_prof_transform(p, &l);
	kiln_tf_release(&l);
	return err;
}

/* ---- pages: a newer request of a page stops its older ones ---- */

uint64_t kiln_web_page_hash(const char *page)
{
	uint64_t h = 1469598103934665603ull;

	for (; *page; page++)
		h = (h ^ (unsigned char)*page) * 1099511628211ull;
	return h | 1;	/* 0: a free slot */
}

/* Records that page (hash) asked request seq (m->cache_lock held).
 * False when a newer one of that page came already. */
bool kiln_web_page_asks(struct kiln_web_model *m, uint64_t hash, uint64_t seq)
{
	struct web_page *pg = NULL, *old = &m->pages[0];
	size_t i;

	for (i = 0; i < WEB_PAGES && !pg; i++) {
		if (m->pages[i].hash == hash)
			pg = &m->pages[i];
		else if (m->pages[i].tick < old->tick)
			old = &m->pages[i];
	}
	if (!pg) {
		pg = old;	/* the page heard from least recently */
		__atomic_store_n(&pg->seq, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&pg->hash, hash, __ATOMIC_RELAXED);
	}
	pg->tick = ++m->tick;
	if (seq < pg->seq)
		return false;
	if (seq > pg->seq) {
		__atomic_store_n(&pg->seq, seq, __ATOMIC_RELAXED);
		/* Its older requests waiting for a slot give up. */
		pthread_cond_broadcast(&m->work_cv);
	}
	return true;
}

/* Whether a newer request than seq of page hash came (no lock: read as
 * the computations check it). */
bool kiln_web_page_moved_on(struct kiln_web_model *m, uint64_t hash, uint64_t seq)
{
	size_t i;

	if (!hash)
		return false;
	for (i = 0; i < WEB_PAGES; i++)
		if (__atomic_load_n(&m->pages[i].hash, __ATOMIC_RELAXED) == hash)
			return __atomic_load_n(&m->pages[i].seq,
					       __ATOMIC_RELAXED) > seq;
	return false;
}

/* A view being made stops when its page moved on and no other request
 * waits for it, or when the server stops. */
int kiln_web_make_stop(void *arg)
{
	const struct web_making *mk = arg;

	if (__atomic_load_n(&mk->m->closing, __ATOMIC_RELAXED))
		return 1;
	return kiln_web_page_moved_on(mk->m, mk->hash, mk->seq) &&
	       __atomic_load_n(&mk->v->refs, __ATOMIC_RELAXED) == 1;
}

/* Waits for one of m->work_max computation slots, in the order the
 * requests came (a queue: with a plain wake-up any waiter could take a
 * freed slot, and under load some waited 20 s while later ones went
 * first).  -ECANCELED when the page moved on meanwhile. */
static int work_begin(const struct web_making *mk)
{
	struct kiln_web_model *m = mk->m;
	struct web_waiter me = { NULL, NULL };
	int err = 0;

	pthread_mutex_lock(&m->cache_lock);
	me.prev = m->wait_tail;
	if (me.prev)
		me.prev->next = &me;
	else
		m->wait_head = &me;
	m->wait_tail = &me;
	while ((m->working >= m->work_max || m->wait_head != &me) &&
	       !(err = kiln_web_make_stop((void *)mk) ? -ECANCELED : 0))
		pthread_cond_wait(&m->work_cv, &m->cache_lock);
	if (!err)
		m->working++;
	if (me.prev)
		me.prev->next = me.next;
	else
		m->wait_head = me.next;
	if (me.next)
		me.next->prev = me.prev;
	else
		m->wait_tail = me.prev;
	/* The next in line may go now (a slot is left, or I gave up). */
	if (m->wait_head)
		pthread_cond_broadcast(&m->work_cv);
	pthread_mutex_unlock(&m->cache_lock);
	return err;
}

static void work_end(struct kiln_web_model *m)
{
	pthread_mutex_lock(&m->cache_lock);
	m->working--;
	pthread_cond_broadcast(&m->work_cv);
	pthread_mutex_unlock(&m->cache_lock);
}

/* A filtered copy of p, as kiln top filters what it read, and cut to
 * the time range when one is given: only the samples that pass focus
 * and ignore are copied (p, shared, is only read).  0 or -errno
 * (-ECANCELED: mk's request is no longer wanted). */
static int filtered(const struct kiln_prof *p, const char *focus,
		    const char *ignore, const char *hide, const int64_t *range,
		    const char *labels, const char *group, const char *tf,
		    const struct web_making *mk, struct kiln_prof **out,
		    struct kiln_diag *d)
{
	struct kiln_prof *copy = kiln_prof_new();
	uint8_t *keep = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	if (focus || ignore) {
		keep = malloc(p->nsamples + 1);
		err = keep ? 0 : -ENOMEM;
		/* Read-only on p: every name was made at load
		 * (kiln_prof_name_all()). */
		if (!err)
			err = kiln_prof_filter_mask((struct kiln_prof *)p, focus,
						    ignore, keep, kiln_web_make_stop,
						    (void *)mk, d);
	}
	if (!err)
		err = kiln_prof_merge_some(copy, p, keep, kiln_web_make_stop, (void *)mk, d);
	free(keep);
	if (!err)
		err = kiln_prof_hide(copy, hide, d);
	if (!err && range)
		err = kiln_prof_keep_time(copy, range[0], range[1]);
	if (!err)
		err = by_labels(copy, labels, group, d);
	if (!err)
		err = transformed(copy, tf, d);
	if (!err && kiln_web_make_stop((void *)mk))
		err = -ECANCELED;
	if (err) {
		kiln_prof_free(copy);
		return err;
	}
	*out = copy;
	return 0;
}

void kiln_web_model_cancel(struct kiln_web_model *m)
{
	size_t i;

	__atomic_store_n(&m->closing, 1, __ATOMIC_RELAXED);
	for (i = 0; i < m->n; i++) {
		__atomic_add_fetch(&m->in[i].gen, 1, __ATOMIC_RELAXED);
		/* and the allocation lists being read (api-heap.c) */
		__atomic_add_fetch(&m->in[i].agen, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&m->cache_lock);
	pthread_cond_broadcast(&m->work_cv);
	pthread_mutex_unlock(&m->cache_lock);
}

/* The analysis of one range: its input, generation and status slot. */
struct range_job {
	struct kiln_web_model *m;
	struct web_input *in;
	unsigned gen;
	int job;
	const struct web_making *mk;
};

/* Progress of a range analysis; stops it once another range is asked,
 * or the asking page moved on. */
static int on_range_progress(void *arg, size_t done, size_t total)
{
	struct range_job *j = arg;

	kiln_web_job_progress(j->m, j->job, done, total);
	return __atomic_load_n(&j->in->gen, __ATOMIC_RELAXED) != j->gen ||
	       kiln_web_make_stop((void *)j->mk);
}

/*
 * A heap trace's profile over [t0, t1), filtered, analysed again (no
 * lock held: the trace's bytes never change once set).  0, -ECANCELED
 * (another range was asked meanwhile, or the page moved on) or -errno.
 */
static int heap_range(struct kiln_web_model *m, unsigned pi, const char *focus,
		      const char *ignore, const char *hide, int64_t t0, int64_t t1,
		      const char *labels, const char *group, const char *tf,
		      const struct web_making *mk, struct kiln_prof **out,
		      struct kiln_diag *d)
{
	struct web_input *in = &m->in[pi];
	struct range_job j = { m, in, 0, -1, mk };
	struct kiln_prof *p = kiln_prof_new();
	char what[96];
	int err;

	if (!p)
		return -ENOMEM;
	pthread_mutex_lock(&m->cache_lock);
	if (in->want_t0 != t0 || in->want_t1 != t1) {
		in->want_t0 = t0;
		in->want_t1 = t1;
		__atomic_add_fetch(&in->gen, 1, __ATOMIC_RELAXED);
	}
	j.gen = __atomic_load_n(&in->gen, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->cache_lock);
	snprintf(what, sizeof(what), "time range %.3f s - %.3f s", t0 / 1e9,
		 t1 / 1e9);
	j.job = kiln_web_job_start(m, pi, what, in->trace_len);
	err = kiln_heaptrace_read_range(p, in->trace, in->trace_len, in->index,
					(uint64_t)t0, (uint64_t)t1,
					on_range_progress, &j, d);
	if (!err)
		err = kiln_prof_error(p);
	if (!err)
		err = kiln_prof_filter(p, focus, ignore, d);
	if (!err)
		err = kiln_prof_hide(p, hide, d);
	if (!err)
		err = by_labels(p, labels, group, d);
	if (!err)
		err = transformed(p, tf, d);
	kiln_web_job_end(m, j.job);
	if (err) {
		kiln_prof_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int kiln_web_view_whole(struct kiln_web_model *m, struct web_view *v,
			const struct web_making *mk, struct kiln_diag *d)
{
	const int64_t range[2] = { v->t0, v->t1 };
	struct kiln_prof *copy = NULL;
	int err = work_begin(mk);

	if (!err) {
		int job = kiln_web_job_start(m, v->p, "filtering", 0);

		err = filtered(v->prof, v->focus, v->ignore, NULL,
			       v->ranged ? range : NULL, NULL, NULL, NULL, mk,
			       &copy, d);
		kiln_web_job_end(m, job);
		work_end(m);
	}
	if (err)
		return err;
	/* What was built over the input goes: its names are the input's. */
	kiln_web_view_drop_built(v);
	free(v->w);
	v->w = NULL;
	v->prof = copy;
	v->own = true;
	return 0;
}

int kiln_web_view_make(struct kiln_web_model *m, struct web_view *v,
		       const struct web_sel *s, const struct web_making *mk,
		       struct kiln_diag *d)
{
	const int64_t range[2] = { s->t0, s->t1 };
	bool any = v->focus || v->ignore || v->hide || v->labels || v->group ||
		   v->tf;
	int err = 0;

	if (s->ranged && m->in[s->p].trace) {	/* analysed again over the range */
		err = work_begin(mk);
		if (!err) {
			err = heap_range(m, s->p, v->focus, v->ignore, v->hide,
					 s->t0, s->t1, v->labels, v->group, v->tf,
					 mk, &v->prof, d);
			work_end(m);
		}
	} else if ((v->focus || v->ignore || s->ranged) && !v->hide &&
		   !v->labels && !v->group && !v->tf && !m->base.prof) {
		/* focus, ignore, range: weighed, not copied */
		struct kiln_prof *in = m->in[s->p].prof;

		v->w = malloc((in->nsamples + 1) * sizeof(*v->w));
		err = v->w ? work_begin(mk) : -ENOMEM;
		if (!err) {
			int job = kiln_web_job_start(m, s->p, "filtering", 0);
			/* Judged by location and the matches' samples marked,
			 * where locations are few beside the stacks' frames. */
			struct web_all *ls = (v->focus || v->ignore) &&
				in->nlocations * 4 <= in->nstacks ?
				kiln_web_all_get(m, s->p, WEB_ALL_LOCS) : NULL;

			err = kiln_prof_weights(in, ls ? &ls->ls : NULL, v->focus, v->ignore,
						s->ranged ? range : NULL, v->type,
						v->w, kiln_web_make_stop,
						(void *)mk, d);
			if (ls)
				kiln_web_all_put(m, ls);
			if (!err && kiln_web_make_stop((void *)mk))
				err = -ECANCELED;
			kiln_web_job_end(m, job);
			work_end(m);
		}
		if (err) {
			free(v->w);
			v->w = NULL;
		}
	} else if (any || s->ranged) {	/* rewrites samples */
		err = work_begin(mk);
		if (!err) {
			/* Shown by /api/status while it runs. */
			int job = kiln_web_job_start(m, s->p, "filtering", 0);

			err = filtered(m->in[s->p].prof, v->focus, v->ignore,
				       v->hide, s->ranged ? range : NULL, v->labels,
				       v->group, v->tf, mk, &v->prof, d);
			kiln_web_job_end(m, job);
			work_end(m);
		}
	}
	if (err)
		return err;
	v->own = v->prof != NULL;
	if (!v->prof)
		v->prof = m->in[s->p].prof;
	v->base = m->base.prof;
	if (m->base.prof && any) {
		v->base = NULL;
		err = work_begin(mk);
		if (!err) {
			err = filtered(m->base.prof, v->focus, v->ignore, v->hide,
				       NULL, v->labels, v->group, v->tf, mk,
				       &v->base, d);
			work_end(m);
		}
		if (err)
			return err;
		v->base_own = true;
	}
	if (v->base) {
		const struct kiln_value_type *t = &v->prof->types[v->type];
		char name[256];

		snprintf(name, sizeof(name), "%s/%s", kiln_prof_str(v->prof, t->type),
			 kiln_prof_str(v->prof, t->unit));
		v->base_type = kiln_prof_type_index(v->base, name, NULL);
		v->base_by_function = m->diff_by_function;
	}
	return 0;
}

