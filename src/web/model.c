/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model behind kiln serve (web stage): the inputs, parsed once and
 * then only read, their loading, and the diff base.  The views made from
 * them are views.c's and making.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	pthread_rwlockattr_t rwa;
	long ncpu;
	size_t i;

	if (!m)
		goto out_nomem;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->ready_cv, NULL);
	pthread_mutex_init(&m->st.lock, NULL);
	/* An exclusive request waiting holds back new views' requests, or
	 * a steady load would starve it. */
	pthread_rwlockattr_init(&rwa);
	pthread_rwlockattr_setkind_np(&rwa,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&m->rw, &rwa);
	pthread_rwlockattr_destroy(&rwa);
	pthread_mutex_init(&m->cache_lock, NULL);
	pthread_cond_init(&m->work_cv, NULL);
	pthread_mutex_init(&m->all_lock, NULL);
	m->cache_budget = WEB_CACHE_BYTES;
	/* A computation per CPU: more only share them, and hold more
	 * memory at once. */
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	m->work_max = ncpu < 2 ? 2 : ncpu > 16 ? 16 : (unsigned)ncpu;
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
		/* Read by many requests at once from now on: named now. */
		if (kiln_prof_name_all(m->in[i].prof)) {
			kiln_web_model_free(m);
			m = NULL;
			break;
		}
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


/* Frees an input's trees of every sample (views.c makes them; none is
 * in use: the input is being replaced, or the server freed). */
static void all_free(struct web_input *in)
{
	int r;

	for (r = 0; r < 3; r++) {
		kiln_web_all_free(in->all[r]);
		in->all[r] = NULL;
	}
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
	if (!err && prof)
		err = kiln_prof_name_all(prof);	/* shared read-only later */
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
	all_free(&m->in[i]);
	free(m->in[i].trace);
	m->in[i].trace = len ? bytes : NULL;
	m->in[i].trace_len = len;
	if (!len)
		free(bytes);
	heapline_free(m->in[i].heap);
	m->in[i].heap = hl;
	if (len)
		m->has_trace = true;
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

void kiln_web_model_free(struct kiln_web_model *m)
{
	size_t i;

	if (!m)
		return;
	kiln_web_views_free(m);
	kiln_web_srcpol_release(&m->src);
	for (i = 0; m->in && i < m->n; i++) {
		all_free(&m->in[i]);
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
	pthread_cond_destroy(&m->work_cv);
	pthread_mutex_destroy(&m->cache_lock);
	pthread_mutex_destroy(&m->all_lock);
	pthread_rwlock_destroy(&m->rw);
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
	m->has_trace = m->has_trace || m->in[i].trace;
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
	if (!err)
		err = kiln_prof_name_all(base);	/* shared read-only later */
	pthread_mutex_unlock(&m->lock);
	return err;
}

void kiln_web_model_diff_by_function(struct kiln_web_model *m, bool on)
{
	m->diff_by_function = on;
}
