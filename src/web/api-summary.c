/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The summary view of kiln serve's API (web stage): /api/summary, what a
 * profile says about itself (command line, host, event and period,
 * duration, samples and lost, threads and processes, the inputs, kiln's
 * version) and what the selection holds; for a kiln heap trace also
 * heaptrack_gui's summary (calls, temporary, peak and when, leaked).
 *
 * The command line and host come from the profile's comments, which the
 * readers and `kiln record` write (docs/kiln-serve.md "Summary"): the
 * host is the comment "hostname: NAME[, kernel RELEASE]", the event
 * "event: NAME, frequency N Hz" (or "period N"), lost samples "perf lost
 * N records" or "kiln lost N samples", and the command line the first
 * comment that is none of kiln's notes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "web/call.h"

/* kiln --version's: the version and the commit (cmake/version.cmake). */
#include "kiln-version.h"

/* Comments kiln's readers and recorders write that are not a command
 * line. */
static const char *const notes[] = {
	"hostname: ", "perf lost ", "kiln lost ", "kiln: ", "every process",
	"the trace was cut", "event: ", NULL,
};

static bool is_note(const char *s)
{
	size_t i;

	for (i = 0; notes[i]; i++)
		if (!strncmp(s, notes[i], strlen(notes[i])))
			return true;
	return false;
}

/* The comment starting with prefix (its text after it), or NULL. */
static const char *comment_after(const struct kiln_prof *p, const char *prefix)
{
	size_t i;

	for (i = 0; i < p->ncomments; i++) {
		const char *s = kiln_prof_str(p, p->comments[i]);

		if (!strncmp(s, prefix, strlen(prefix)))
			return s + strlen(prefix);
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* What a profile's samples carry: distinct values of the labels pid and
 * thread, and the earliest and latest time (the time column). */
struct census {
	size_t pids, threads;
	bool timed;
	int64_t tmin, tmax;
	int64_t samples;	/* records with a value */
};

static size_t distinct(int64_t *v, size_t n)
{
	size_t i, k = 0;

	qsort(v, n, sizeof(*v), cmp_i64);
	for (i = 0; i < n; i++)
		if (!i || v[i] != v[i - 1])
			k++;
	return k;
}

/* The census of the samples of p with a non-zero value of type `type`
 * (every sample when type < 0).  0 or -ENOMEM. */
static int census_of(const struct kiln_prof *p, int type, struct census *cs)
{
	uint32_t kpid = kiln_prof_find_str(p, "pid", 3);
	uint32_t kthr = kiln_prof_find_str(p, "thread", 6);
	uint8_t *timed = calloc(p->nsamples + 1, 1);
	int64_t *pids = malloc((p->nsamples + 1) * sizeof(*pids));
	int64_t *thr = malloc((p->nsamples + 1) * sizeof(*thr));
	size_t i, np = 0, nt = 0;

	memset(cs, 0, sizeof(*cs));
	if (!pids || !thr || !timed) {
		free(pids);
		free(thr);
		free(timed);
		return -ENOMEM;
	}
	/* Records: the time column's events, and the samples without any. */
	for (i = 0; i < p->nevents; i++) {
		const struct kiln_prof_event *e = &p->events[i];

		timed[e->sample] = 1;
		if (type >= 0 && !kiln_prof_event_values(p, i)[type])
			continue;
		cs->samples++;
		if (!cs->timed || e->time < cs->tmin)
			cs->tmin = e->time;
		if (!cs->timed || e->time > cs->tmax)
			cs->tmax = e->time;
		cs->timed = true;
	}
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const struct kiln_label *l;

		if (type >= 0 && !kiln_prof_value(p, i, (size_t)type))
			continue;
		if (!timed[i])
			cs->samples++;
		/* A string label (another tool's) counts by its text's id. */
		l = kiln_prof_label(p, s->labels, kpid);
		if (l)
			pids[np++] = l->str ? -(int64_t)l->str : l->num;
		l = kiln_prof_label(p, s->labels, kthr);
		if (l)
			thr[nt++] = l->str ? -(int64_t)l->str : l->num;
	}
	cs->pids = distinct(pids, np);
	cs->threads = distinct(thr, nt);
	free(pids);
	free(thr);
	free(timed);
	return 0;
}

/* The sample type counting samples ("samples/count"), or -1. */
static int count_type(const struct kiln_prof *p)
{
	size_t t;

	for (t = 0; t < p->ntypes; t++)
		if (!strcmp(kiln_prof_str(p, p->types[t].unit), "count") &&
		    !strcmp(kiln_prof_str(p, p->types[t].type), "samples"))
			return (int)t;
	return -1;
}

static void add_census(struct call *c, const struct census *cs)
{
	call_add(c, "\"records\":%" PRId64 ",\"processes\":%zu,\"threads\":%zu,"
	    "\"time_span\":", cs->samples, cs->pids, cs->threads);
	if (cs->timed)
		call_add(c, "[%" PRId64 ",%" PRId64 "]", cs->tmin, cs->tmax);
	else
		call_add(c, "null");
}

static void add_heap(struct call *c, const struct web_heapline *hl)
{
	const struct kiln_hprof_totals *t = &hl->tot;

	call_add(c, ",\"heap\":{\"calls\":%.0f,\"allocated\":%.0f,\"temporary\":%.0f,"
	    "\"peak\":%.0f,\"peak_objs\":%.0f,\"peak_t\":%" PRIu64 ",\"leaked\":%.0f,"
	    "\"leaked_objs\":%.0f,\"cross_thread\":%.0f,\"lost\":%" PRIu64
	    ",\"ended\":%s,\"span\":%" PRIu64 ",\"pid\":%" PRIu64 ",\"threads\":%zu,"
	    "\"sample_bytes\":%" PRIu64 ",\"peak_rss\":null}", t->calls,
	    t->allocated, t->temporary, t->peak, t->peak_objs, t->peak_t, t->leaked,
	    t->leaked_objs, t->cross_thread, t->lost, t->ended ? "true" : "false",
	    hl->span, hl->pid, hl->threads, hl->sample_bytes);
}

/* The whole input: its comments, types, period and census. */
static int add_input(struct call *c, struct web_input *in)
{
	const struct kiln_prof *p = in->prof;
	const char *host = comment_after(p, "hostname: ");
	const char *lost = comment_after(p, "perf lost ");
	const char *event = comment_after(p, "event: ");
	const char *cmd = NULL;
	struct census cs;
	size_t i;
	int ct = count_type(p), err;

	if (!lost)
		lost = comment_after(p, "kiln lost ");
	for (i = 0; i < p->ncomments && !cmd; i++)
		if (!is_note(kiln_prof_str(p, p->comments[i])))
			cmd = kiln_prof_str(p, p->comments[i]);
	err = census_of(p, -1, &cs);
	if (err)
		return err;
	call_add(c, "\"name\":");
	call_add_str(c, in->name);
	call_add(c, ",\"format\":");
	call_add_str(c, in->format);
	call_add(c, ",\"command\":");
	if (cmd)
		call_add_str(c, cmd);
	else
		call_add(c, "null");
	call_add(c, ",\"host\":");
	if (host)
		call_add_str(c, host);
	else
		call_add(c, "null");
	call_add(c, ",\"event\":");
	if (event)
		call_add_str(c, event);
	else
		call_add(c, "null");
	call_add(c, ",\"lost\":");
	if (lost)
		call_add(c, "%lld", strtoll(lost, NULL, 10));
	else
		call_add(c, "null");
	call_add(c, ",\"comments\":[");
	for (i = 0; i < p->ncomments; i++) {
		call_add(c, i ? "," : "");
		call_add_str(c, kiln_prof_str(p, p->comments[i]));
	}
	call_add(c, "],\"period_type\":");
	call_add_str(c, p->period_type.type ?
		     kiln_prof_str(p, p->period_type.type) : "");
	call_add(c, ",\"period_unit\":");
	call_add_str(c, p->period_type.unit ?
		     kiln_prof_str(p, p->period_type.unit) : "");
	call_add(c, ",\"period\":%" PRId64 ",\"start_ns\":%" PRId64
	    ",\"duration_ns\":%" PRId64 ",\"samples\":", p->period,
	    p->time_nanos, p->duration_nanos);
	if (ct >= 0)
		call_add(c, "%" PRId64, kiln_prof_total(p, (size_t)ct));
	else
		call_add(c, "null");
	call_add(c, ",\"types\":[");
	for (i = 0; i < p->ntypes; i++) {
		int64_t total = kiln_prof_total(p, i);

		call_add(c, "%s{\"type\":", i ? "," : "");
		call_add_str(c, call_type_name(p, (int)i));
		call_add(c, ",\"unit\":");
		call_add_str(c, call_unit_name(p, (int)i));
		call_add(c, ",\"total\":%" PRId64 ",\"total_str\":", total);
		call_add_value_str(c, total, call_unit_name(p, (int)i));
		call_add(c, "}");
	}
	call_add(c, "],");
	add_census(c, &cs);
	return 0;
}

int web_api_summary(struct call *c)
{
	struct web_view *v;
	struct web_input *in;
	struct census cs;
	size_t i, from;
	int ct, err;

	if (call_selection(c, &v))
		return c->status;
	if (call_memo_get(c, v, WEB_MEMO_SUMMARY, 0))
		return c->err ? 500 : 200;
	from = c->out->len;
	in = &c->m->in[v->p];
	call_add(c, "{\"kiln_version\":\"%s (commit %s)\",", KILN_VERSION,
		 KILN_COMMIT);
	err = add_input(c, in);
	if (!err && in->trace) {
		struct web_heapline *hl;

		err = kiln_web_heapline(in, &hl, &c->d);
		if (err == -EINVAL)
			return call_fail(c, 500, "%s", c->d.msg);
		if (!err)
			add_heap(c, hl);
	}
	/* The selection: its type's total and what its samples carry. */
	if (!err)
		err = census_of(v->prof, v->type, &cs);
	if (err) {
		c->err = err;
		return 500;
	}
	ct = count_type(v->prof);
	call_add(c, ",\"selection\":{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"total\":%" PRId64 ",\"total_str\":",
	    kiln_prof_total(v->prof, (size_t)v->type));
	call_add_value_str(c, kiln_prof_total(v->prof, (size_t)v->type),
			   call_unit_name(v->prof, v->type));
	call_add(c, ",\"samples\":");
	if (ct >= 0)
		call_add(c, "%" PRId64, kiln_prof_total(v->prof, (size_t)ct));
	else
		call_add(c, "null");
	call_add(c, ",");
	add_census(c, &cs);
	call_add(c, "},\"inputs\":[");
	for (i = 0; i < c->m->n; i++) {
		call_add(c, "%s{\"name\":", i ? "," : "");
		call_add_str(c, c->m->in[i].name);
		call_add(c, ",\"format\":");
		call_add_str(c, c->m->in[i].format);
		call_add(c, ",\"shown\":%s}", i == v->p ? "true" : "false");
	}
	call_add(c, "],\"base\":");
	if (c->m->base.prof) {
		call_add(c, "{\"name\":");
		call_add_str(c, c->m->base.name);
		call_add(c, ",\"format\":");
		call_add_str(c, c->m->base.format);
		call_add(c, "}");
	} else {
		call_add(c, "null");
	}
	call_add(c, "}\n");
	call_memo_put(c, v, WEB_MEMO_SUMMARY, 0, from);
	return c->err ? 500 : 200;
}
