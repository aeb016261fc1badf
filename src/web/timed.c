/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stack chart's order of samples (web stage): a selection's timed
 * samples by thread and time, their stacks numbered by function names,
 * split by thread (timed.h).  Made once per view and kept in it, so that
 * each window the page asks for costs a binary search and its own
 * samples (api-stack.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "util/htab.h"
#include "web/timed.h"
#include "web/webint.h"

void kiln_web_timed_free(struct web_timed *tm)
{
	if (!tm)
		return;
	free(tm->s);
	free(tm->th);
	free(tm);
}

static int by_time(const void *a, const void *b)
{
	const struct timed_sample *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->sample < y->sample ? -1 : x->sample > y->sample;
}

/*
 * The one reader of sample times for the stack chart: the events of p's
 * time column (profile.h) with a value of type `type` -- (time, pid,
 * tid, sample, value) -- in time order, into *out (malloc'd, the caller
 * frees it).  0 or -ENOMEM.
 */
static int timed_samples(const struct kiln_prof *p, int type,
			 struct timed_sample **out, size_t *n)
{
	const struct kiln_prof_event *e;
	struct kiln_prof_events it;
	struct timed_sample *s;
	/* [label set]: its pid and tid, and whether they are known: each
	 * costs two string lookups, and a million events have a few
	 * thousand label sets. */
	struct { int64_t pid, tid; bool known; } *th;
	size_t ev, k = 0;

	*out = NULL;
	*n = 0;
	if (!p->nevents)
		return 0;
	s = malloc(p->nevents * sizeof(*s));
	th = calloc(p->nlabelsets + 1, sizeof(*th));
	if (!s || !th || kiln_prof_events_begin(&it, p)) {
		free(s);
		free(th);
		return -ENOMEM;
	}
	while ((e = kiln_prof_events_next(&it, &ev))) {
		int64_t v = kiln_prof_event_values(p, ev)[type];
		uint32_t ls = p->samples[e->sample].labels;

		if (!v || e->time < 0)
			continue;
		if (!th[ls].known) {
			kiln_prof_thread(p, ls, &th[ls].pid, &th[ls].tid);
			th[ls].known = true;
		}
		s[k++] = (struct timed_sample){ e->time, th[ls].pid, th[ls].tid,
						e->sample, 0, v };
	}
	kiln_prof_events_end(&it);
	free(th);
	*out = s;
	*n = k;
	return 0;
}

/* Threads numbered in first-seen order: open addressing on (pid, tid). */
struct thread_no {
	int64_t *pid, *tid;
	uint32_t *no;		/* number + 1; 0: empty */
	size_t mask, n;
};

static int thread_no_grow(struct thread_no *tn)
{
	size_t cap = tn->mask ? (tn->mask + 1) * 2 : 64, i, j;
	int64_t *pid = calloc(cap, sizeof(*pid)), *tid = calloc(cap, sizeof(*tid));
	uint32_t *no = calloc(cap, sizeof(*no));

	if (!pid || !tid || !no) {
		free(pid);
		free(tid);
		free(no);
		return -ENOMEM;
	}
	for (i = 0; tn->no && i <= tn->mask; i++) {
		if (!tn->no[i])
			continue;
		for (j = (size_t)kiln_hash(&tn->tid[i], 8) & (cap - 1); no[j];
		     j = (j + 1) & (cap - 1))
			;
		pid[j] = tn->pid[i];
		tid[j] = tn->tid[i];
		no[j] = tn->no[i];
	}
	free(tn->pid);
	free(tn->tid);
	free(tn->no);
	tn->pid = pid;
	tn->tid = tid;
	tn->no = no;
	tn->mask = cap - 1;
	return 0;
}

/* Sample x's thread number, from 0; -1 when out of memory. */
static long thread_no_of(struct thread_no *tn, const struct timed_sample *x)
{
	size_t j;

	if ((tn->n + 1) * 2 > tn->mask + 1 && thread_no_grow(tn))
		return -1;
	for (j = (size_t)kiln_hash(&x->tid, 8) & tn->mask; tn->no[j];
	     j = (j + 1) & tn->mask)
		if (tn->pid[j] == x->pid && tn->tid[j] == x->tid)
			return (long)tn->no[j] - 1;
	tn->pid[j] = x->pid;
	tn->tid[j] = x->tid;
	tn->no[j] = (uint32_t)++tn->n;
	return (long)tn->n - 1;
}

/*
 * Orders s[n] by thread (a stable counting sort, threads in first-seen
 * order) and by time within each thread: a profile is mostly read in
 * time order, so a thread's samples are sorted only when they are not.
 * 0 or -ENOMEM.
 */
static int order_by_thread(struct timed_sample **s, size_t n)
{
	struct thread_no tn = { 0 };
	uint32_t *no = malloc((n ? n : 1) * sizeof(*no));
	size_t *at = NULL, i, t;
	struct timed_sample *o = malloc((n ? n : 1) * sizeof(*o));
	int err = -ENOMEM;

	if (!no || !o)
		goto out;
	for (i = 0; i < n; i++) {
		long k = thread_no_of(&tn, &(*s)[i]);

		if (k < 0)
			goto out;
		no[i] = (uint32_t)k;
	}
	at = calloc(tn.n + 1, sizeof(*at));
	if (!at)
		goto out;
	for (i = 0; i < n; i++)
		at[no[i] + 1]++;
	for (t = 0; t < tn.n; t++)
		at[t + 1] += at[t];
	for (i = 0; i < n; i++)
		o[at[no[i]]++] = (*s)[i];
	/* at[t] is now where thread t + 1 starts: each range by time.  The
	 * events come in time order (kiln_prof_events_next()), the samples
	 * of one millisecond in the column's order: then only those runs of
	 * one time are sorted (by sample), not the whole range.  (time,
	 * sample) is unique, so both ways give the same order. */
	for (t = 0; t < tn.n; t++) {
		size_t a = t ? at[t - 1] : 0, b = at[t], r;

		for (i = a + 1; i < b && o[i - 1].t <= o[i].t; i++)
			;
		if (i < b) {
			qsort(o + a, b - a, sizeof(*o), by_time);
			continue;
		}
		for (i = a; i < b; i = r) {
			for (r = i + 1; r < b && o[r].t == o[i].t; r++)
				;
			if (r - i > 1)
				qsort(o + i, r - i, sizeof(*o), by_time);
		}
	}
	free(*s);
	*s = o;
	o = NULL;
	err = 0;
out:
	free(o);
	free(no);
	free(at);
	free(tn.pid);
	free(tn.tid);
	free(tn.no);
	return err;
}

static int by_total(const void *a, const void *b)
{
	const struct timed_thread *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The thread's name: its thread_name label, else its comm, else 0. */
static uint32_t thread_name(const struct kiln_prof *p, uint32_t labels)
{
	static const char *const keys[] = { "thread_name", "comm" };
	size_t i;

	for (i = 0; i < 2; i++) {
		uint32_t k = kiln_prof_find_str(p, keys[i], strlen(keys[i]));
		const struct kiln_label *l = k ? kiln_prof_label(p, labels, k) : NULL;

		if (l && l->str)
			return l->str;
	}
	return 0;
}

/* Samples of one stack share one id: the same function names root to
 * leaf (the addresses and lines inside them may differ), as the stack
 * chart draws them.  The pool holds a stack per sample, so equal stacks
 * have different offsets there. */
struct stack_ctx {
	const uint32_t *pool;		/* the stacks' names, one after another */
	const size_t *at;		/* [id - 1]: where its names start */
	const uint32_t *names;		/* the stack looked up */
	size_t n;
};

static bool stack_eq(const void *ctx, uint32_t id)
{
	const struct stack_ctx *k = ctx;

	return k->at[id] - k->at[id - 1] == k->n &&
	       (!k->n || !memcmp(k->pool + k->at[id - 1], k->names,
				 k->n * sizeof(*k->names)));
}

static int canon_stacks(struct kiln_prof *p, struct timed_sample *s, size_t n)
{
	struct kiln_htab h = KILN_HTAB_INIT;
	struct stack_ctx k = { 0 };
	struct kiln_frame *fr = NULL;
	uint32_t *pool = NULL, *names = NULL, *first = NULL;
	/* [sample]: its canonical sample + 1, 0 not known yet: a sample's
	 * many events (one per millisecond it was seen) look it up once. */
	uint32_t *memo = calloc(p->nsamples + 1, sizeof(*memo));
	size_t *at = NULL;
	size_t i, f, fcap = 0, pool_alloc = 0, pool_n = 0, names_alloc = 0;
	size_t nfirst = 0, first_alloc = 0, at_alloc = 0;
	int err = memo ? kiln_array_grow((void **)&at, &at_alloc, 1, sizeof(*at)) :
			 -ENOMEM;

	if (!err)
		at[0] = 0;
	for (i = 0; i < n && !err; i++) {
		uint32_t hash, id;
		long nf;

		if (memo[s[i].sample]) {
			s[i].stack = memo[s[i].sample] - 1;
			continue;
		}
		nf = kiln_prof_frames(p, &p->samples[s[i].sample], &fr, &fcap);
		if (nf < 0 || kiln_array_grow((void **)&names, &names_alloc,
					      (size_t)nf + 1, sizeof(*names))) {
			err = -ENOMEM;
			break;
		}
		for (f = 0; f < (size_t)nf; f++)
			names[f] = fr[f].name;
		hash = (uint32_t)kiln_hash(names, (size_t)nf * sizeof(*names));
		k = (struct stack_ctx){ pool, at, names, (size_t)nf };
		id = kiln_htab_find(&h, hash, stack_eq, &k);
		if (!id) {
			if (kiln_array_grow((void **)&first, &first_alloc, nfirst + 1,
					    sizeof(*first)) ||
			    kiln_array_grow((void **)&at, &at_alloc, nfirst + 2,
					    sizeof(*at)) ||
			    kiln_array_grow((void **)&pool, &pool_alloc,
					    pool_n + (size_t)nf + 1, sizeof(*pool))) {
				err = -ENOMEM;
				break;
			}
			memcpy(pool + pool_n, names, (size_t)nf * sizeof(*names));
			pool_n += (size_t)nf;
			first[nfirst++] = s[i].sample;
			at[nfirst] = pool_n;
			id = (uint32_t)nfirst;
			err = kiln_htab_insert(&h, hash, id);
		}
		s[i].stack = first[id - 1];
		memo[s[i].sample] = s[i].stack + 1;
	}
	free(memo);
	kiln_htab_release(&h);
	free(fr);
	free(pool);
	free(names);
	free(first);
	free(at);
	return err;
}

/* Orders the view's timed samples and splits them by thread. */
int kiln_web_timed_build(struct kiln_prof *p, int type,
			 struct web_timed **out)
{
	struct web_timed *tm = calloc(1, sizeof(*tm));
	size_t i, alloc = 0;
	int err;

	if (!tm)
		return -ENOMEM;
	tm->type = type;
	err = timed_samples(p, type, &tm->s, &tm->n);
	if (!err)
		err = order_by_thread(&tm->s, tm->n);
	if (!err)
		err = canon_stacks(p, tm->s, tm->n);
	if (err)
		goto out_free;
	/* A lone sample stands for one sampling period (a millisecond, the
	 * times' resolution, at least). */
	tm->step = KILN_PROF_TIME_BUCKET_NS;
	if (p->period > tm->step && p->period_type.unit &&
	    !strcmp(kiln_prof_str(p, p->period_type.unit), "nanoseconds"))
		tm->step = p->period;
	for (i = 0; i < tm->n; i++) {
		const struct timed_sample *s = &tm->s[i];
		struct timed_thread *th;

		if (!i || s->pid != s[-1].pid || s->tid != s[-1].tid) {
			err = kiln_array_grow((void **)&tm->th, &alloc, tm->nth + 1,
					      sizeof(*tm->th));
			if (err)
				goto out_free;
			tm->th[tm->nth++] = (struct timed_thread){ s->pid, s->tid, 0,
				thread_name(p, p->samples[s->sample].labels), i, 0 };
		}
		th = &tm->th[tm->nth - 1];
		th->n++;
		th->total += s->v;
		if (s->t + tm->step > tm->end)
			tm->end = s->t + tm->step;
	}
	if (tm->nth)
		qsort(tm->th, tm->nth, sizeof(*tm->th), by_total);
	*out = tm;
	return 0;
out_free:
	kiln_web_timed_free(tm);
	return err;
}
