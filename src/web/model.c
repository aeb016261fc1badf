/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model behind kiln serve (web stage): the inputs, parsed once, and a
 * small cache of selections (input, sample type, focus, ignore) with their
 * trees and top tables, so that zooming, searching and switching views
 * re-use what the last request built.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/heaptrace.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "profile/transform.h"
#include "util/buf.h"
#include "util/diag.h"
#include "web/web.h"
#include "web/webint.h"

struct kiln_web_model *kiln_web_model_new_pending(const char *const *names,
						  size_t n)
{
	struct kiln_web_model *m = calloc(1, sizeof(*m));
	size_t i;

	if (!m)
		goto out_nomem;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->ready_cv, NULL);
	pthread_mutex_init(&m->st.lock, NULL);
	m->in = calloc(n ? n : 1, sizeof(*m->in));
	if (!m->in)
		goto out_free;
	for (i = 0; i < n; i++) {
		m->n++;
		m->in[i].name = strdup(names[i]);
		m->in[i].format = strdup("");
		if (!m->in[i].name || !m->in[i].format)
			goto out_free;
	}
	return m;
out_free:
	kiln_web_model_free(m);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

struct kiln_web_model *kiln_web_model_new(struct kiln_prof **profs,
					  const char *const *names,
					  const char *const *formats, size_t n)
{
	struct kiln_web_model *m = kiln_web_model_new_pending(names, n);
	size_t i;

	for (i = 0; m && i < n; i++) {
		free(m->in[i].format);
		m->in[i].format = strdup(formats[i]);
		if (!m->in[i].format) {
			kiln_web_model_free(m);
			m = NULL;
			break;
		}
		m->in[i].prof = profs[i];
		profs[i] = NULL;
	}
	if (!m) {
		for (i = 0; i < n; i++) {
			kiln_prof_free(profs[i]);
			profs[i] = NULL;
		}
		errno = ENOMEM;
		return NULL;
	}
	m->st.loaded = n;
	m->st.ready = true;
	return m;
}

/* Heavy work on the loader's side reports to the status as it goes. */
static int on_load_progress(void *arg, size_t done, size_t total)
{
	struct kiln_web_model *m = arg;

	pthread_mutex_lock(&m->st.lock);
	m->st.load_done = done;
	m->st.load_total = total;
	pthread_mutex_unlock(&m->st.lock);
	return m->stop && *m->stop;
}

void kiln_web_model_stop_on(struct kiln_web_model *m,
			    const volatile sig_atomic_t *flag)
{
	m->stop = flag;
}

void kiln_web_model_loading(struct kiln_web_model *m, const char *what)
{
	pthread_mutex_lock(&m->st.lock);
	snprintf(m->st.loading, sizeof(m->st.loading), "%s", what);
	m->st.load_done = m->st.load_total = 0;
	pthread_mutex_unlock(&m->st.lock);
}

static int make_heapline(struct kiln_web_model *m, const char *trace,
			 size_t len, struct web_heapline **out,
			 struct kiln_heaptrace_index **index,
			 struct kiln_diag *d);
static void heapline_free(struct web_heapline *hl)
{
	if (hl) {
		web_heapviews_release(hl);
		free(hl->max);
		free(hl->end);
		free(hl->cmdline);
		free(hl);
	}
}

/* The memory over time kept from a finished analysis h, with the
 * summary's figures from it and info (whose cmdline moves to the line).
 * NULL on ENOMEM. */
static struct web_heapline *heapline_of(const struct kiln_hprof *h,
					struct kiln_heaptrace_info *info)
{
	struct web_heapline *hl = calloc(1, sizeof(*hl));

	if (hl) {
		hl->n = h->nbuckets;
		hl->max = malloc((hl->n ? hl->n : 1) * sizeof(*hl->max));
		hl->end = malloc((hl->n ? hl->n : 1) * sizeof(*hl->end));
	}
	if (!hl || !hl->max || !hl->end) {
		heapline_free(hl);
		return NULL;
	}
	if (hl->n) {
		memcpy(hl->max, h->total_max, hl->n * sizeof(*hl->max));
		memcpy(hl->end, h->total_end, hl->n * sizeof(*hl->end));
	}
	hl->bucket_ns = h->bucket_ns;
	hl->peak = h->tot.peak;
	hl->peak_t = h->tot.peak_t;
	hl->span = h->tot.t_last - h->tot.t_first;
	hl->tot = h->tot;
	hl->pid = info->pid;
	hl->sample_bytes = info->sample_bytes;
	hl->threads = info->threads;
	hl->cmdline = info->cmdline;
	info->cmdline = NULL;
	return hl;
}

/* A heap trace read once: its profile, memory over time and time index,
 * progress to m's status.  0, -EINVAL (d filled) or -ENOMEM. */
static int read_trace(struct kiln_web_model *m, const char *data, size_t len,
		      struct kiln_prof **prof, struct web_heapline **hl,
		      struct kiln_heaptrace_index **index, struct kiln_diag *d)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_heaptrace_info info;
	struct kiln_hprof *h = NULL;
	long *so = NULL;
	int err;

	if (!p)
		return -ENOMEM;
	err = kiln_heaptrace_read_index(p, data, len, on_load_progress, m, &h,
					&so, &info, index, d);
	if (!err) {
		*hl = heapline_of(h, &info);
		if (!*hl)
			err = -ENOMEM;
		kiln_heaptrace_info_release(&info);
	}
	if (!err)
		err = web_heapviews_make(*hl, h, p, so);
	else
		free(so);
	kiln_hprof_free(h);
	if (err) {
		kiln_prof_free(p);
		kiln_heaptrace_index_free(*index);
		*index = NULL;
		return err;
	}
	*prof = p;
	return 0;
}

int kiln_web_model_set_input(struct kiln_web_model *m, size_t i,
			     struct kiln_prof *prof, const char *format,
			     struct kiln_buf *trace, struct kiln_diag *d)
{
	struct web_heapline *hl = NULL;
	struct kiln_heaptrace_index *index = NULL;
	char *fmt = strdup(format);
	size_t len = 0;
	char *bytes;
	int err = 0;

	/* A heap trace is read here, on the loader's thread, not under the
	 * lock: once for its profile (unless given), its memory over time
	 * and its time index. */
	if (fmt && trace && trace->len && !prof)
		err = read_trace(m, trace->data, trace->len, &prof, &hl, &index, d);
	else if (fmt && trace && trace->len)
		err = make_heapline(m, trace->data, trace->len, &hl, &index, d);
	if (!fmt || err || !prof) {
		free(fmt);
		kiln_prof_free(prof);
		heapline_free(hl);
		kiln_heaptrace_index_free(index);
		return err ? err : fmt ? -EINVAL : -ENOMEM;
	}
	bytes = trace ? kiln_buf_detach(trace, &len) : NULL;
	pthread_mutex_lock(&m->lock);
	free(m->in[i].format);
	m->in[i].format = fmt;
	kiln_prof_free(m->in[i].prof);
	m->in[i].prof = prof;
	free(m->in[i].trace);
	m->in[i].trace = len ? bytes : NULL;
	m->in[i].trace_len = len;
	if (!len)
		free(bytes);
	heapline_free(m->in[i].heap);
	m->in[i].heap = hl;
	kiln_heaptrace_index_free(m->in[i].index);
	m->in[i].index = index;
	pthread_mutex_unlock(&m->lock);
	pthread_mutex_lock(&m->st.lock);
	m->st.loaded++;
	m->st.loading[0] = '\0';
	pthread_mutex_unlock(&m->st.lock);
	return 0;
}

void kiln_web_model_ready(struct kiln_web_model *m, const char *failed)
{
	pthread_mutex_lock(&m->lock);
	pthread_mutex_lock(&m->st.lock);
	m->st.ready = true;
	m->st.loading[0] = '\0';
	if (failed)
		snprintf(m->st.failed, sizeof(m->st.failed), "%s", failed);
	pthread_mutex_unlock(&m->st.lock);
	pthread_cond_broadcast(&m->ready_cv);
	pthread_mutex_unlock(&m->lock);
}

static void view_release(struct web_view *v)
{
	int i;

	for (i = 0; i < 2; i++) {
		kiln_tree_release(&v->tree[i]);
		kiln_top_release(&v->top[i]);
		kiln_top_release(&v->base_top[i]);
	}
	for (i = 0; i < WEB_MEMOS; i++)
		kiln_buf_release(&v->memo[i]);
	kiln_tree_release(&v->sw_callers);
	kiln_tree_release(&v->sw_callees);
	kiln_web_timed_free(v->timed);
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
	memset(v, 0, sizeof(*v));
}

void kiln_web_model_free(struct kiln_web_model *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < WEB_VIEWS; i++)
		view_release(&m->views[i]);
	kiln_web_srcpol_release(&m->src);
	for (i = 0; m->in && i < m->n; i++) {
		kiln_prof_free(m->in[i].prof);
		free(m->in[i].trace);
		heapline_free(m->in[i].heap);
		kiln_heaptrace_index_free(m->in[i].index);
		free(m->in[i].name);
		free(m->in[i].format);
	}
	free(m->in);
	kiln_prof_free(m->base.prof);
	free(m->base.name);
	free(m->base.format);
	pthread_cond_destroy(&m->ready_cv);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->st.lock);
	free(m);
}

void kiln_web_model_set_trace(struct kiln_web_model *m, size_t i,
			      struct kiln_buf *trace)
{
	pthread_mutex_lock(&m->lock);
	free(m->in[i].trace);
	m->in[i].trace = kiln_buf_detach(trace, &m->in[i].trace_len);
	pthread_mutex_unlock(&m->lock);
}

int kiln_web_heapline(struct web_input *in, struct web_heapline **out,
		      struct kiln_diag *d)
{
	int err = 0;

	/* Made when the input was set (kiln_web_model_set_input); a model
	 * given a trace otherwise makes it here, once. */
	if (!in->heap)
		err = make_heapline(NULL, in->trace, in->trace_len, &in->heap,
				    NULL, d);
	*out = in->heap;
	return err;
}

/* The memory over time of a trace, and with index its time index, in
 * one analysis; progress to m's status (m: NULL, none).  0, -EINVAL (d
 * filled) or -ENOMEM. */
static int make_heapline(struct kiln_web_model *m, const char *trace,
			 size_t len, struct web_heapline **out,
			 struct kiln_heaptrace_index **index,
			 struct kiln_diag *d)
{
	struct kiln_heaptrace_info info;
	struct web_heapline *hl;
	struct kiln_hprof *h = NULL;
	int err;

	if (index)
		err = kiln_heaptrace_analyse_index(trace, len,
						   m ? on_load_progress : NULL,
						   m, &h, &info, index, d);
	else
		err = kiln_heaptrace_analyse_progress(trace, len,
						      m ? on_load_progress : NULL,
						      m, &h, &info, d);
	if (err) {
		kiln_heaptrace_info_release(&info);
		return err;
	}
	hl = heapline_of(h, &info);
	kiln_heaptrace_info_release(&info);
	if (hl && web_heapviews_make(hl, h, NULL, NULL)) {
		heapline_free(hl);
		hl = NULL;
	}
	kiln_hprof_free(h);
	if (!hl) {
		if (index) {
			kiln_heaptrace_index_free(*index);
			*index = NULL;
		}
		return -ENOMEM;
	}
	*out = hl;
	return 0;
}

int kiln_web_model_set_base(struct kiln_web_model *m, struct kiln_prof *base,
			    const char *name, const char *format)
{
	int err;

	pthread_mutex_lock(&m->lock);
	m->base.prof = base;
	m->base.name = strdup(name);
	m->base.format = strdup(format);
	err = m->base.name && m->base.format ? 0 : -ENOMEM;
	pthread_mutex_unlock(&m->lock);
	return err;
}

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

/* A filtered copy of p, as kiln top filters what it read, and cut to
 * the time range when one is given.  0 or -errno. */
static int filtered(const struct kiln_prof *p, const char *focus,
		    const char *ignore, const char *hide, const int64_t *range,
		    const char *labels, const char *group, const char *tf,
		    struct kiln_prof **out, struct kiln_diag *d)
{
	struct kiln_prof *copy = kiln_prof_new();
	int err;

	if (!copy)
		return -ENOMEM;
	err = kiln_prof_merge(copy, p, d);
	if (!err)
		err = kiln_prof_filter(copy, focus, ignore, d);
	if (!err)
		err = kiln_prof_hide(copy, hide, d);
	if (!err && range)
		err = kiln_prof_keep_time(copy, range[0], range[1]);
	if (!err)
		err = by_labels(copy, labels, group, d);
	if (!err)
		err = transformed(copy, tf, d);
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

	for (i = 0; i < m->n; i++) {
		__atomic_add_fetch(&m->in[i].gen, 1, __ATOMIC_RELAXED);
		/* and the allocation lists being read (api-heap.c) */
		__atomic_add_fetch(&m->in[i].agen, 1, __ATOMIC_RELAXED);
	}
}

/* The analysis of one range: its input, generation and status slot. */
struct range_job {
	struct kiln_web_model *m;
	struct web_input *in;
	unsigned gen;
	int job;
};

/* Progress of a range analysis; stops it once another range is asked. */
static int on_range_progress(void *arg, size_t done, size_t total)
{
	struct range_job *j = arg;

	kiln_web_job_progress(j->m, j->job, done, total);
	return __atomic_load_n(&j->in->gen, __ATOMIC_RELAXED) != j->gen;
}

/*
 * A heap trace's profile over [t0, t1), filtered, analysed again without
 * m->lock (held on entry and on return): the trace's bytes never change
 * once set.  0, -ECANCELED (another range was asked meanwhile) or -errno.
 */
static int heap_range(struct kiln_web_model *m, unsigned pi, const char *focus,
		      const char *ignore, const char *hide, int64_t t0, int64_t t1,
		      const char *labels, const char *group, const char *tf,
		      struct kiln_prof **out, struct kiln_diag *d)
{
	struct web_input *in = &m->in[pi];
	struct range_job j = { m, in, 0, -1 };
	struct kiln_prof *p = kiln_prof_new();
	char what[96];
	int err;

	if (!p)
		return -ENOMEM;
	if (in->want_t0 != t0 || in->want_t1 != t1) {
		in->want_t0 = t0;
		in->want_t1 = t1;
		__atomic_add_fetch(&in->gen, 1, __ATOMIC_RELAXED);
	}
	j.gen = in->gen;
	snprintf(what, sizeof(what), "time range %.3f s - %.3f s", t0 / 1e9,
		 t1 / 1e9);
	j.job = kiln_web_job_start(m, pi, what, in->trace_len);
	pthread_mutex_unlock(&m->lock);
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
	pthread_mutex_lock(&m->lock);
	if (err) {
		kiln_prof_free(p);
		return err;
	}
	*out = p;
	return 0;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The cached view of selection s, or NULL. */
static struct web_view *cached(struct kiln_web_model *m, const struct web_sel *s,
			       const char *focus, const char *ignore,
			       const char *hide, const char *labels,
			       const char *group, const char *tf)
{
	size_t i;

	for (i = 0; i < WEB_VIEWS; i++) {
		struct web_view *v = &m->views[i];

		if (v->used && v->p == s->p && v->type == s->type &&
		    same(v->focus, focus) && same(v->ignore, ignore) &&
		    same(v->hide, hide) && same(v->labels, labels) &&
		    same(v->group, group) && same(v->tf, tf) &&
		    v->ranged == s->ranged &&
		    (!s->ranged || (v->t0 == s->t0 && v->t1 == s->t1))) {
			v->tick = ++m->tick;
			return v;
		}
	}
	return NULL;
}

int kiln_web_view(struct kiln_web_model *m, const struct web_sel *s,
		  struct web_view **out, struct kiln_diag *d)
{
	const char *focus = s->focus && *s->focus ? s->focus : NULL;
	const char *ignore = s->ignore && *s->ignore ? s->ignore : NULL;
	const char *hide = s->hide && *s->hide ? s->hide : NULL;
	const char *labels = s->labels && *s->labels ? s->labels : NULL;
	const char *group = s->group && *s->group ? s->group : NULL;
	const char *tf = s->tf && *s->tf ? s->tf : NULL;
	const int64_t range[2] = { s->t0, s->t1 };
	unsigned p = s->p;
	int type = s->type;
	struct web_view *v, *slot = NULL;
	struct kiln_prof *prof = NULL;
	size_t i;
	int err = 0;

	*out = cached(m, s, focus, ignore, hide, labels, group, tf);
	if (*out)
		return 0;
	if (s->ranged && m->in[p].trace) {	/* analysed again over the range */
		err = heap_range(m, p, focus, ignore, hide, s->t0, s->t1, labels,
				 group, tf, &prof, d);
		if (err)
			return err;
		/* Another request may have made it meanwhile. */
		*out = cached(m, s, focus, ignore, hide, labels, group, tf);
		if (*out) {
			kiln_prof_free(prof);
			return 0;
		}
	}
	for (i = 0; i < WEB_VIEWS; i++) {
		v = &m->views[i];
		if (!slot || !v->used || (slot->used && v->tick < slot->tick))
			slot = v;
	}
	view_release(slot);
	slot->p = p;
	slot->type = type;
	slot->base = m->base.prof;
	slot->base_type = -1;
	slot->prof = prof;
	if (!prof && (focus || ignore || hide || s->ranged || labels || group ||
		      tf))
		/* rewrites samples */
		err = filtered(m->in[p].prof, focus, ignore, hide,
			       s->ranged ? range : NULL, labels, group, tf,
			       &slot->prof, d);
	if (err)
		return err;
	if (!slot->prof) {
		slot->prof = m->in[p].prof;
	} else {
		slot->own = true;
		slot->ranged = s->ranged;
		slot->t0 = s->t0;
		slot->t1 = s->t1;
	}
	if (m->base.prof && (focus || ignore || hide || labels || group || tf)) {
		err = filtered(m->base.prof, focus, ignore, hide, NULL, labels,
			       group, tf, &slot->base, d);
		if (err) {
			slot->base = NULL;
			view_release(slot);
			return err;
		}
		slot->base_own = true;
	}
	slot->focus = focus ? strdup(focus) : NULL;
	slot->ignore = ignore ? strdup(ignore) : NULL;
	slot->hide = hide ? strdup(hide) : NULL;
	slot->labels = labels ? strdup(labels) : NULL;
	slot->group = group ? strdup(group) : NULL;
	slot->tf = tf ? strdup(tf) : NULL;
	if ((focus && !slot->focus) || (ignore && !slot->ignore) ||
	    (hide && !slot->hide) || (labels && !slot->labels) ||
	    (group && !slot->group) || (tf && !slot->tf)) {
		view_release(slot);
		return -ENOMEM;
	}
	if (slot->base) {
		const struct kiln_value_type *t = &slot->prof->types[type];
		char name[256];

		snprintf(name, sizeof(name), "%s/%s", kiln_prof_str(slot->prof, t->type),
			 kiln_prof_str(slot->prof, t->unit));
		slot->base_type = kiln_prof_type_index(slot->base, name, NULL);
		slot->base_by_function = m->diff_by_function;
	}
	slot->used = true;
	slot->tick = ++m->tick;
	*out = slot;
	return 0;
}

void kiln_web_model_diff_by_function(struct kiln_web_model *m, bool on)
{
	m->diff_by_function = on;
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
		err = kiln_tree_build(t, v->prof, v->type, reverse);
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

int kiln_web_view_top(struct web_view *v, bool by_line, struct kiln_top **out)
{
	int err;

	if (!v->top_built[by_line]) {
		err = kiln_top_build(&v->top[by_line], v->prof, v->type,
				     by_line ? KILN_TOP_LINES : KILN_TOP_FUNCTIONS,
				     false);
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

int kiln_web_model_warm(struct kiln_web_model *m)
{
	struct web_view *v;
	struct kiln_tree *t;
	size_t i;
	struct web_sel s = { 0 };
	int type, err = 0;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->n && i < WEB_VIEWS && !err; i++) {
		type = kiln_prof_type_index(m->in[i].prof, NULL, NULL);
		if (type < 0)
			continue;	/* no sample types: nothing to draw */
		s.p = (unsigned)i;
		s.type = type;
		err = kiln_web_view(m, &s, &v, NULL);
		if (!err)
			err = kiln_web_view_tree(v, false, false, &t, NULL);
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}
