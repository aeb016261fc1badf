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
	size_t ev, k = 0;

	*out = NULL;
	*n = 0;
	if (!p->nevents)
		return 0;
	s = malloc(p->nevents * sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (kiln_prof_events_begin(&it, p)) {
		free(s);
		return -ENOMEM;
	}
	while ((e = kiln_prof_events_next(&it, &ev))) {
		int64_t v = kiln_prof_event_values(p, ev)[type], pid, tid;

		if (!v || e->time < 0)
			continue;
		kiln_prof_thread(p, p->samples[e->sample].labels, &pid, &tid);
		s[k++] = (struct timed_sample){ e->time, pid, tid, e->sample,
						0, v };
	}
	kiln_prof_events_end(&it);
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
	/* at[t] is now where thread t + 1 starts: each range by time. */
	for (t = 0; t < tn.n; t++) {
		size_t a = t ? at[t - 1] : 0, b = at[t];

		for (i = a + 1; i < b && by_time(&o[i - 1], &o[i]) <= 0; i++)
			;
		if (i < b)
			qsort(o + a, b - a, sizeof(*o), by_time);
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

/* Samples with the same location ids (the cheap test, made first) have
 * the same names: a table of location stacks seen, each with the
 * canonical sample of its names. */
struct loc_seen {
	struct kiln_htab h;
	uint32_t *rep;		/* [id - 1]: a sample with those locations */
	uint32_t *canon;	/* [id - 1]: its canonical sample */
	size_t n, rep_alloc, canon_alloc;
};

struct loc_ctx {
	const struct kiln_prof *p;
	const uint32_t *rep;
	const struct kiln_sample *s;
};

static bool loc_eq(const void *ctx, uint32_t id)
{
	const struct loc_ctx *k = ctx;
	const struct kiln_sample *a = &k->p->samples[k->rep[id - 1]];

	return a->depth == k->s->depth && (!a->depth ||
		!memcmp(kiln_prof_sample_locs(k->p, a), kiln_prof_sample_locs(k->p, k->s),
			a->depth * sizeof(uint32_t)));
}

/* The canonical sample of sample i's locations, 0 when not seen yet
 * (*hash set for loc_add()); UINT32_MAX is never a sample index here. */
static uint32_t loc_find(const struct kiln_prof *p, struct loc_seen *ls,
			 uint32_t i, uint32_t *hash, uint32_t *id)
{
	const struct kiln_sample *x = &p->samples[i];
	struct loc_ctx k = { p, ls->rep, x };

	*hash = x->depth ? (uint32_t)kiln_hash(kiln_prof_sample_locs(p, x),
					       x->depth * sizeof(uint32_t)) : 0;
	*id = kiln_htab_find(&ls->h, *hash, loc_eq, &k);
	return *id ? ls->canon[*id - 1] : UINT32_MAX;
}

static int loc_add(struct loc_seen *ls, uint32_t hash, uint32_t i,
		   uint32_t canon)
{
	if (kiln_array_grow((void **)&ls->rep, &ls->rep_alloc, ls->n + 1,
			    sizeof(*ls->rep)) ||
	    kiln_array_grow((void **)&ls->canon, &ls->canon_alloc, ls->n + 1,
			    sizeof(*ls->canon)))
		return -ENOMEM;
	ls->rep[ls->n] = i;
	ls->canon[ls->n++] = canon;
	return kiln_htab_insert(&ls->h, hash, (uint32_t)ls->n);
}

static int canon_stacks(struct kiln_prof *p, struct timed_sample *s, size_t n)
{
	struct loc_seen ls = { KILN_HTAB_INIT, NULL, NULL, 0, 0, 0 };
	struct kiln_htab h = KILN_HTAB_INIT;
	struct stack_ctx k = { 0 };
	struct kiln_frame *fr = NULL;
	uint32_t *pool = NULL, *names = NULL, *first = NULL;
	size_t *at = NULL;
	size_t i, f, fcap = 0, pool_alloc = 0, pool_n = 0, names_alloc = 0;
	size_t nfirst = 0, first_alloc = 0, at_alloc = 0;
	int err = kiln_array_grow((void **)&at, &at_alloc, 1, sizeof(*at));

	if (!err)
		at[0] = 0;
	for (i = 0; i < n && !err; i++) {
		uint32_t hash, id, lhash, lid;
		uint32_t seen = loc_find(p, &ls, s[i].sample, &lhash, &lid);
		long nf;

		if (seen != UINT32_MAX) {
			s[i].stack = seen;
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
		if (!err)
			err = loc_add(&ls, lhash, s[i].sample, s[i].stack);
	}
	kiln_htab_release(&ls.h);
	free(ls.rep);
	free(ls.canon);
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
