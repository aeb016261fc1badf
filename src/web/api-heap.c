/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap views of kiln serve's API (web stage), for kiln heap traces
 * (docs/kiln-serve.md "Heap"):
 *
 *  - /api/heap/sites: per-site memory over time (the sites that held the
 *    most, each with a label no other shares, the rest as "other"),
 *    allocations and temporary allocations over time and the size
 *    histogram, all kept from the one analysis made when the trace was
 *    loaded (web_heapviews_make()), so a time range is a slice of them;
 *  - /api/heap/allocs: the allocation list with filters, read from the
 *    trace's time index (format/heaptrace-allocs.c) without the model's
 *    lock, one page at a time, stopped when a newer list is asked.
 *
 * Top-down and bottom-up tables per cost type are the call tree
 * (/api/calltree) with the heap trace's sample types: not made twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "format/heaptrace.h"
#include "profile/heapsite.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "web/call.h"

/* Sites kept with their series; /api/heap/sites shows up to this many. */
#define HEAP_SITES 32
/* The most blocks one page of the allocation list holds, and how far
 * it may page (the page is kept in memory up to offset + n). */
#define ALLOCS_MAX 10000
#define ALLOCS_OFFSET_MAX 1000000

void web_heapviews_release(struct web_heapline *hl)
{
	size_t i;

	for (i = 0; i < hl->nsites; i++) {
		free(hl->sites[i].label);
		free(hl->sites[i].values);
	}
	free(hl->sites);
	free(hl->calls_n);
	free(hl->temp_n);
	free(hl->sample_of);
	hl->sites = NULL;
	hl->calls_n = hl->temp_n = NULL;
	hl->sample_of = NULL;
	hl->nsites = 0;
}

static int make_sites(struct web_heapline *hl, const struct kiln_hprof *h,
		      struct kiln_prof *p)
{
	uint32_t ids[HEAP_SITES];
	long samples[HEAP_SITES], k = kiln_heapsite_top(h, HEAP_SITES, ids);
	char **names = NULL;
	size_t i, j, n;
	int err;

	if (k < 0)
		return (int)k;
	n = (size_t)k < HEAP_SITES ? (size_t)k : HEAP_SITES;
	for (i = 0; i < n; i++)
		samples[i] = ids[i] <= hl->nstacks ? hl->sample_of[ids[i]] : -1;
	err = kiln_heapsite_labels(p, samples, n, &names);
	if (err)
		return err;
	hl->sites = calloc(n + 1, sizeof(*hl->sites));
	if (!hl->sites) {
		kiln_heapsite_labels_free(names, n);
		return -ENOMEM;
	}
	hl->sites_total = (size_t)k;
	for (i = 0; i < n; i++) {
		struct web_heapsite *s = &hl->sites[i];
		const struct kiln_hprof_site *hs = &h->sites[ids[i]];

		s->stack = ids[i];
		s->label = names[i];
		names[i] = NULL;
		s->values = calloc(hl->n + 1, sizeof(*s->values));
		hl->nsites = i + 1;
		if (!s->values) {
			err = -ENOMEM;
			break;
		}
		kiln_hprof_site_series(h, ids[i], s->values);
		for (j = 0; j < hl->n; j++)
			if (s->values[j] > s->max)
				s->max = s->values[j];
		s->peak = hs->peak_bytes;
		s->leaked = hs->live_bytes;
		s->allocated = hs->bytes;
		s->calls = hs->calls;
	}
	kiln_heapsite_labels_free(names, n);
	return err;
}

int web_heapviews_make(struct web_heapline *hl, const struct kiln_hprof *h,
		       struct kiln_prof *p, long *so)
{
	hl->sample_of = so;
	hl->nstacks = so ? h->nsites : 0;
	hl->calls_n = malloc((hl->n + 1) * sizeof(*hl->calls_n));
	hl->temp_n = malloc((hl->n + 1) * sizeof(*hl->temp_n));
	if (!hl->calls_n || !hl->temp_n)
		return -ENOMEM;
	if (hl->n) {
		memcpy(hl->calls_n, h->calls_n, hl->n * sizeof(*hl->calls_n));
		memcpy(hl->temp_n, h->temp_n, hl->n * sizeof(*hl->temp_n));
	}
	memcpy(hl->size_calls, h->size_calls, sizeof(hl->size_calls));
	memcpy(hl->size_bytes, h->size_bytes, sizeof(hl->size_bytes));
	return p && so ? make_sites(hl, h, p) : 0;
}

/* The heap trace the request names (its selection's input), or NULL
 * with the answer made. */
static struct web_input *heap_input(struct call *c)
{
	struct web_view *v;
	struct web_input *in;

	if (call_selection_of(c, false, &v))
		return NULL;
	in = &c->m->in[v->p];
	if (!in->trace || !in->heap) {
		call_fail(c, 400, "'%s' is not a kiln heap trace: no heap views",
			  in->name);
		return NULL;
	}
	return in;
}

/* A time in nanoseconds (a whole number >= 0), def when absent. */
static int time_arg(struct call *c, const char *key, uint64_t def, uint64_t *out)
{
	long v;

	if (call_num_arg(c, key, 0, LONG_MAX, -1, &v))
		return -1;
	*out = v < 0 ? def : (uint64_t)v;
	return 0;
}

/* The buckets [*b0, *b1) that meet the time range [t0, t1). */
static void bucket_range(const struct web_heapline *hl, uint64_t t0,
			 uint64_t t1, size_t *b0, size_t *b1)
{
	uint64_t w = hl->bucket_ns ? hl->bucket_ns : 1;

	*b0 = t0 / w < hl->n ? (size_t)(t0 / w) : hl->n;
	*b1 = t1 == UINT64_MAX ? hl->n : (size_t)((t1 + w - 1) / w);
	if (*b1 > hl->n)
		*b1 = hl->n;
	if (*b1 < *b0)
		*b1 = *b0;
}

static void add_series(struct call *c, const char *key, const double *v,
		       size_t b0, size_t b1)
{
	size_t b;

	call_add(c, ",\"%s\":[", key);
	for (b = b0; b < b1; b++)
		call_add(c, "%s%.0f", b > b0 ? "," : "", v[b]);
	call_add(c, "]");
}

static void add_sizes(struct call *c, const double *calls, const double *bytes)
{
	size_t k;
	bool first = true;

	call_add(c, ",\"sizes\":[");
	for (k = 0; k < KILN_HPROF_SIZE_CLASSES; k++) {
		if (calls[k] <= 0)
			continue;
		/* Class k: sizes in [2^(k-1), 2^k - 1]; class 0: size 0. */
		call_add(c, "%s[%" PRIu64 ",%" PRIu64 ",%.0f,%.0f]",
			 first ? "" : ",", k ? (uint64_t)1 << (k - 1) : 0,
			 k ? (k == 64 ? UINT64_MAX : ((uint64_t)1 << k) - 1) : 0,
			 calls[k], bytes[k]);
		first = false;
	}
	call_add(c, "]");
}

struct shown {
	size_t i;
	double max;
};

static int by_max(const void *a, const void *b)
{
	const struct shown *x = a, *y = b;

	if (x->max != y->max)
		return x->max < y->max ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int web_api_heap_sites(struct call *c)
{
	struct web_input *in = heap_input(c);
	struct shown sh[HEAP_SITES];
	const struct web_heapline *hl;
	uint64_t t0, t1;
	size_t b0, b1, b, i, k = 0;
	long n;
	double *other;

	if (!in || call_num_arg(c, "n", 1, HEAP_SITES, 8, &n) ||
	    time_arg(c, "t0", 0, &t0) || time_arg(c, "t1", UINT64_MAX, &t1))
		return c->status;
	if (t0 >= t1)
		return call_fail(c, 400, "a time range needs t0 < t1 (nanoseconds)");
	hl = in->heap;
	bucket_range(hl, t0, t1, &b0, &b1);
	/* The top n within the range, from the sites kept. */
	for (i = 0; i < hl->nsites; i++) {
		double mx = 0;

		for (b = b0; b < b1; b++)
			if (hl->sites[i].values[b] > mx)
				mx = hl->sites[i].values[b];
		if (mx > 0) {
			sh[k].i = i;
			sh[k++].max = mx;
		}
	}
	qsort(sh, k, sizeof(*sh), by_max);
	if (k > (size_t)n)
		k = (size_t)n;
	other = malloc((hl->n + 1) * sizeof(*other));
	if (!other) {
		c->err = -ENOMEM;
		return 500;
	}
	memcpy(other, hl->max, hl->n * sizeof(*other));
	call_add(c, "{\"bucket_ns\":%" PRIu64 ",\"span\":%" PRIu64 ",\"first\":%zu,"
		 "\"buckets\":%zu,\"peak\":%.0f,\"peak_t\":%" PRIu64
		 ",\"sites_total\":%zu,\"sites\":[", hl->bucket_ns, hl->span, b0,
		 b1 - b0, hl->peak, hl->peak_t, hl->sites_total);
	for (i = 0; i < k; i++) {
		const struct web_heapsite *s = &hl->sites[sh[i].i];

		call_add(c, "%s{\"stack\":%u,\"label\":", i ? "," : "", s->stack);
		call_add_str(c, s->label);
		call_add(c, ",\"max\":%.0f,\"peak\":%.0f,\"leaked\":%.0f,"
			 "\"allocated\":%.0f,\"calls\":%.0f", sh[i].max, s->peak,
			 s->leaked, s->allocated, s->calls);
		add_series(c, "values", s->values, b0, b1);
		call_add(c, "}");
		for (b = 0; b < hl->n; b++)
			other[b] -= s->values[b];
	}
	call_add(c, "]");
	for (b = 0; b < hl->n; b++)
		if (other[b] < 0.5)
			other[b] = 0;	/* float series: no dust */
	add_series(c, "other", other, b0, b1);
	add_series(c, "total", hl->max, b0, b1);
	add_series(c, "calls", hl->calls_n, b0, b1);
	add_series(c, "temporary", hl->temp_n, b0, b1);
	add_sizes(c, hl->size_calls, hl->size_bytes);
	call_add(c, "}\n");
	free(other);
	return c->err ? 500 : 200;
}

/* ---- /api/heap/allocs ---- */

struct allocs_job {
	struct kiln_web_model *m;
	struct web_input *in;
	unsigned gen;
	int job;
};

static int on_allocs_progress(void *arg, size_t done, size_t total)
{
	struct allocs_job *j = arg;

	kiln_web_job_progress(j->m, j->job, done, total);
	return __atomic_load_n(&j->in->agen, __ATOMIC_RELAXED) != j->gen;
}

/* The filters of the request into q.  -1 when bad (answer made). */
static int allocs_query(struct call *c, const struct web_heapline *hl,
			struct kiln_heaptrace_allocq *q)
{
	const char *alive;
	long n, off, site;

	memset(q, 0, sizeof(*q));
	if (time_arg(c, "t0", 0, &q->t0) || time_arg(c, "t1", UINT64_MAX, &q->t1) ||
	    time_arg(c, "life_min", 0, &q->life_min) ||
	    time_arg(c, "life_max", UINT64_MAX, &q->life_max) ||
	    time_arg(c, "size_min", 0, &q->size_min) ||
	    time_arg(c, "size_max", UINT64_MAX, &q->size_max) ||
	    call_num_arg(c, "site", 0, UINT32_MAX, 0, &site) ||
	    call_num_arg(c, "n", 1, ALLOCS_MAX, 100, &n) ||
	    call_num_arg(c, "offset", 0, ALLOCS_OFFSET_MAX, 0, &off))
		return -1;
	q->site = (uint32_t)site;
	q->n = (size_t)n;
	q->offset = (size_t)off;
	alive = call_arg(c, "alive");	/* used at once: not kept over calls */
	if (alive && *alive) {
		q->alive = true;
		/* "end": the trace's last event. */
		if (!strcmp(alive, "end"))
			q->alive_at = hl->span;
		else if (time_arg(c, "alive", 0, &q->alive_at))
			return -1;
	}
	if (q->t0 >= q->t1 || q->life_min > q->life_max ||
	    q->size_min > q->size_max) {
		call_fail(c, 400, "empty filter: t0, life_min or size_min is "
			  "not below t1, life_max or size_max");
		return -1;
	}
	return 0;
}

/* The labels of the sites on the page, as "sites":{"ID":"label",...}. */
static int add_site_labels(struct call *c, struct web_input *in,
			   const struct kiln_heaptrace_allocs *a)
{
	const struct web_heapline *hl = in->heap;
	uint32_t *ids = malloc((a->n + 1) * sizeof(*ids));
	long *samples = malloc((a->n + 1) * sizeof(*samples));
	char **names = NULL;
	size_t i, j, k = 0;
	int err = -ENOMEM;

	if (!ids || !samples)
		goto out;
	for (i = 0; i < a->n; i++) {
		for (j = 0; j < k && ids[j] != a->a[i].stack; j++)
			;
		if (j == k)
			ids[k++] = a->a[i].stack;
	}
	for (i = 0; i < k; i++)
		samples[i] = ids[i] <= hl->nstacks && hl->sample_of ?
			     hl->sample_of[ids[i]] : -1;
	err = kiln_heapsite_labels(in->prof, samples, k, &names);
	if (err)
		goto out;
	call_add(c, ",\"sites\":{");
	for (i = 0; i < k; i++) {
		call_add(c, "%s\"%u\":", i ? "," : "", ids[i]);
		call_add_str(c, names[i]);
	}
	call_add(c, "}");
	kiln_heapsite_labels_free(names, k);
out:
	free(ids);
	free(samples);
	return err;
}

static void add_allocs(struct call *c, const struct kiln_heaptrace_allocq *q,
		       const struct kiln_heaptrace_allocs *a)
{
	size_t i;

	call_add(c, "{\"count\":%" PRIu64 ",\"bytes\":%.0f,\"offset\":%zu,"
		 "\"read_from\":%" PRIu64 ",\"read_to\":%" PRIu64 ",\"to_end\":%s,"
		 "\"bytes_read\":%zu,\"allocs\":[", a->count, a->bytes, q->offset,
		 a->read_from, a->read_to, a->to_end ? "true" : "false",
		 a->bytes_read);
	for (i = 0; i < a->n; i++) {
		const struct kiln_heaptrace_alloc *b = &a->a[i];

		call_add(c, "%s[%" PRIu64 ",", i ? "," : "", b->t);
		if (b->freed == UINT64_MAX)
			call_add(c, "null");
		else
			call_add(c, "%" PRIu64, b->freed);
		call_add(c, ",%" PRIu64 ",%u,%u]", b->size, b->stack, b->tid);
	}
	call_add(c, "]");
}

int web_api_heap_allocs(struct call *c)
{
	struct web_input *in = heap_input(c);
	struct kiln_heaptrace_allocq q;
	struct kiln_heaptrace_allocs a;
	struct allocs_job j;
	double calls[KILN_HPROF_SIZE_CLASSES], bytes[KILN_HPROF_SIZE_CLASSES];
	size_t k;
	int err;

	if (!in || allocs_query(c, in->heap, &q))
		return c->status;
	j.m = c->m;
	j.in = in;
	j.gen = __atomic_add_fetch(&in->agen, 1, __ATOMIC_RELAXED);
	j.job = kiln_web_job_start(c->m, (unsigned)(in - c->m->in),
				   "allocation list", in->trace_len);
	/* The trace's bytes and index never change once loaded: read
	 * with no lock and no view held (heap_input()'s is not used
	 * after), so that no request waits for the list. */
	call_release(c);
	pthread_rwlock_unlock(&c->m->rw);
	err = kiln_heaptrace_allocs(in->trace, in->trace_len, in->index, &q,
				    on_allocs_progress, &j, &a, &c->d);
	kiln_web_job_end(c->m, j.job);
	pthread_rwlock_wrlock(&c->m->rw);
	if (err == -ECANCELED)
		return call_fail(c, 409, "cancelled: another allocation list of "
				 "'%s' was asked for meanwhile", in->name);
	if (err == -EINVAL)
		return call_fail(c, 400, "%s", c->d.msg);
	if (err) {
		c->err = err;
		return 500;
	}
	add_allocs(c, &q, &a);
	for (k = 0; k < KILN_HPROF_SIZE_CLASSES; k++) {
		calls[k] = (double)a.size_calls[k];
		bytes[k] = (double)a.size_bytes[k];
	}
	add_sizes(c, calls, bytes);
	err = add_site_labels(c, in, &a);
	if (err)
		c->err = err;
	call_add(c, "}\n");
	kiln_heaptrace_allocs_release(&a);
	return c->err ? 500 : 200;
}
