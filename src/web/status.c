/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln serve's progress (web stage): what the loader is reading and the
 * heavy work (heap traces analysed again for a range) running now, for
 * /api/status, the page's busy state.  Its own lock (m->st.lock), held
 * only to copy a few numbers: the status answers while the model is busy.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/buf.h"
#include "web/web.h"
#include "web/webint.h"

int kiln_web_job_start(struct kiln_web_model *m, unsigned p, const char *what,
		       size_t total)
{
	int i, job = -1;

	pthread_mutex_lock(&m->st.lock);
	for (i = 0; i < WEB_JOBS && job < 0; i++) {
		struct web_job *j = &m->st.jobs[i];

		if (j->active)
			continue;
		job = i;
		j->active = true;
		j->p = p;
		snprintf(j->what, sizeof(j->what), "%s", what);
		j->done = 0;
		j->total = total;
		j->id = ++m->st.next_id;
	}
	pthread_mutex_unlock(&m->st.lock);
	return job;
}

void kiln_web_job_progress(struct kiln_web_model *m, int job, size_t done,
			   size_t total)
{
	if (job < 0)
		return;
	pthread_mutex_lock(&m->st.lock);
	m->st.jobs[job].done = done;
	m->st.jobs[job].total = total;
	pthread_mutex_unlock(&m->st.lock);
}

void kiln_web_job_end(struct kiln_web_model *m, int job)
{
	if (job < 0)
		return;
	pthread_mutex_lock(&m->st.lock);
	m->st.jobs[job].active = false;
	pthread_mutex_unlock(&m->st.lock);
}

/* s as a JSON string literal: the names are the user's file names. */
static int add_json_str(struct kiln_buf *out, const char *s)
{
	int err = kiln_buf_addc(out, '"');

	for (; *s && !err; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			err = kiln_buf_addf(out, "\\%c", ch);
		else if (ch < 0x20)
			err = kiln_buf_addf(out, "\\u%04x", ch);
		else
			err = kiln_buf_addc(out, (char)ch);
	}
	return err ? err : kiln_buf_addc(out, '"');
}

/* "cache":{...}: the view cache now (views.c; its lock is held only
 * for moments). */
static int cache_status(struct kiln_web_model *m, struct kiln_buf *out)
{
	size_t views, bytes, budget;
	unsigned long made, hits;
	unsigned working;

	pthread_mutex_lock(&m->cache_lock);
	views = m->nviews;
	bytes = m->cache_bytes;
	budget = m->cache_budget;
	made = m->made;
	hits = m->hits;
	working = m->working;
	pthread_mutex_unlock(&m->cache_lock);
	return kiln_buf_addf(out, "\"cache\":{\"views\":%zu,\"bytes\":%zu,"
			     "\"budget\":%zu,\"made\":%lu,\"hits\":%lu,"
			     "\"working\":%u}", views, bytes, budget, made,
			     hits, working);
}

int kiln_web_status(struct kiln_web_model *m, struct kiln_buf *out)
{
	struct web_status st;
	int i, err, n = 0;

	/* A copy: the names and the buffer are written without the lock. */
	pthread_mutex_lock(&m->st.lock);
	memcpy(&st, &m->st, sizeof(st));
	pthread_mutex_unlock(&m->st.lock);
	err = kiln_buf_addf(out, "{\"ready\":%s,\"inputs\":%zu,\"loaded\":%zu,"
			    "\"loading\":", st.ready ? "true" : "false", m->n,
			    st.loaded);
	if (!err)
		err = st.loading[0] ? add_json_str(out, st.loading)
				    : kiln_buf_addf(out, "null");
	if (!err)
		err = kiln_buf_addf(out, ",\"load_done\":%zu,\"load_total\":%zu,"
				    "\"failed\":", st.load_done, st.load_total);
	if (!err)
		err = st.failed[0] ? add_json_str(out, st.failed)
				   : kiln_buf_addf(out, "null");
	if (!err)
		err = kiln_buf_addf(out, ",\"jobs\":[");
	for (i = 0; i < WEB_JOBS && !err; i++) {
		const struct web_job *j = &st.jobs[i];

		if (!j->active)
			continue;
		/* The input's name is set before the server answers and never
		 * changes. */
		err = kiln_buf_addf(out, "%s{\"id\":%lu,\"p\":%u,\"name\":",
				    n++ ? "," : "", j->id, j->p);
		if (!err)
			err = add_json_str(out, m->in[j->p].name);
		if (!err)
			err = kiln_buf_addf(out, ",\"what\":");
		if (!err)
			err = add_json_str(out, j->what);
		if (!err)
			err = kiln_buf_addf(out, ",\"done\":%zu,\"total\":%zu}",
					    j->done, j->total);
	}
	if (!err)
		err = kiln_buf_addf(out, "],");
	if (!err)
		err = cache_status(m, out);
	if (!err)
		err = kiln_buf_addf(out, "}\n");
	return err;
}
