/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-thread activity over time for kiln serve (web stage): the samples
 * of a selection summed per thread and per time bucket, from the time
 * column (profile.h) and the "pid", "thread" and "thread_name" (or
 * "comm") labels of the events' samples.  The page
 * draws one strip per thread and lets the user pick a time range, which
 * then filters every view (struct web_sel's t0, t1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "web/webint.h"

/* Threads by (pid, tid): open addressing on the packed key. */
struct thread_index {
	uint64_t *keys;		/* key + 1; 0: empty */
	uint32_t *slot;		/* index in tl->threads */
	size_t mask;
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

static int index_grow(struct thread_index *ix, const struct web_thread *th,
		      size_t n)
{
	size_t cap = ix->mask ? (ix->mask + 1) * 2 : 64, i, j;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (!keys || !slot) {
		free(keys);
		free(slot);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		uint64_t k = ((uint64_t)th[i].pid << 32 | (uint32_t)th[i].tid) + 1;

		for (j = mix(k) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = k;
		slot[j] = (uint32_t)i;
	}
	free(ix->keys);
	free(ix->slot);
	ix->keys = keys;
	ix->slot = slot;
	ix->mask = cap - 1;
	return 0;
}

/* The index of thread (pid, tid) in tl->threads, added if new; -1 when
 * out of memory. */
static long thread_of(struct web_timeline *tl, struct thread_index *ix,
		      size_t *alloc, int64_t pid, int64_t tid)
{
	uint64_t k = ((uint64_t)pid << 32 | (uint32_t)tid) + 1;
	size_t j;

	if ((tl->nthreads + 1) * 2 > ix->mask + 1 &&
	    index_grow(ix, tl->threads, tl->nthreads))
		return -1;
	for (j = mix(k) & ix->mask; ix->keys[j]; j = (j + 1) & ix->mask)
		if (ix->keys[j] == k)
			return ix->slot[j];
	if (kiln_array_grow((void **)&tl->threads, alloc, tl->nthreads + 1,
			    sizeof(*tl->threads)))
		return -1;
	memset(&tl->threads[tl->nthreads], 0, sizeof(*tl->threads));
	tl->threads[tl->nthreads].pid = pid;
	tl->threads[tl->nthreads].tid = tid;
	ix->keys[j] = k;
	ix->slot[j] = (uint32_t)tl->nthreads;
	return (long)tl->nthreads++;
}

static int by_total(const void *a, const void *b)
{
	const struct web_thread *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int kiln_web_timeline(const struct kiln_prof *p, int type, size_t nbuckets,
		      struct web_timeline *tl)
{
	uint32_t k_pid = kiln_prof_find_str(p, "pid", 3);
	uint32_t k_tid = kiln_prof_find_str(p, "thread", 6);
	uint32_t k_tname = kiln_prof_find_str(p, "thread_name", 11);
	uint32_t k_comm = kiln_prof_find_str(p, "comm", 4);
	struct thread_index ix = { 0 };
	size_t alloc = 0, i;
	long *thread = NULL;
	int64_t tmax = -1;
	int err = -ENOMEM;

	memset(tl, 0, sizeof(*tl));
	if (!nbuckets)
		return -EINVAL;
	thread = malloc((p->nsamples ? p->nsamples : 1) * sizeof(*thread));
	if (!thread)
		goto out;
	/* What has no time: the samples' values beyond their events'. */
	for (i = 0; i < p->nsamples; i++) {
		thread[i] = -1;
		tl->untimed += kiln_prof_value(p, i, (size_t)type);
	}
	/* First pass over the time column: the threads and the last time. */
	for (i = 0; i < p->nevents; i++) {
		uint32_t si = p->events[i].sample, ls = p->samples[si].labels;
		const struct kiln_label *pid, *tid, *name;
		long th;

		if (p->events[i].time < 0)	/* as untimed (absurd input) */
			continue;
		tl->untimed -= kiln_prof_event_values(p, i)[type];
		if (p->events[i].time > tmax)
			tmax = p->events[i].time;
		if (thread[si] >= 0)
			continue;
		pid = kiln_prof_label(p, ls, k_pid);
		tid = kiln_prof_label(p, ls, k_tid);
		th = thread_of(tl, &ix, &alloc, pid && !pid->str ? pid->num : -1,
			       tid && !tid->str ? tid->num : -1);
		if (th < 0)
			goto out;
		thread[si] = th;
		if (!tl->threads[th].name) {
			name = kiln_prof_label(p, ls, k_tname);
			if (!name || !name->str)
				name = kiln_prof_label(p, ls, k_comm);
			if (name && name->str)
				tl->threads[th].name = name->str;
		}
	}
	if (tmax < 0) {		/* nothing timed */
		err = 0;
		goto out;
	}
	/* Buckets of whole milliseconds (the labels' resolution) covering
	 * [0, tmax + 1 ms). */
	{
		int64_t span = tmax + KILN_PROF_TIME_BUCKET_NS;
		int64_t b = (span + (int64_t)nbuckets - 1) / (int64_t)nbuckets;

		/* No finer than one sampling period of time (a 99 Hz
		 * profile's samples are 10 ms apart): finer buckets would be
		 * mostly empty, a comb instead of a strip. */
		if (p->period > 0 && p->period_type.unit &&
		    !strcmp(kiln_prof_str(p, p->period_type.unit), "nanoseconds") &&
		    p->period > b)
			b = p->period;

		b = (b + KILN_PROF_TIME_BUCKET_NS - 1) / KILN_PROF_TIME_BUCKET_NS *
		    KILN_PROF_TIME_BUCKET_NS;
		tl->bucket_ns = b;
		tl->nbuckets = (size_t)((span + b - 1) / b);
		tl->end = (int64_t)tl->nbuckets * b;
	}
	for (i = 0; i < tl->nthreads; i++) {
		tl->threads[i].values = calloc(tl->nbuckets, sizeof(int64_t));
		if (!tl->threads[i].values)
			goto out;
	}
	tl->total = calloc(tl->nbuckets, sizeof(int64_t));
	if (!tl->total)
		goto out;
	for (i = 0; i < p->nevents; i++) {
		const struct kiln_prof_event *e = &p->events[i];
		int64_t v = kiln_prof_event_values(p, i)[type];
		size_t b;

		if (e->time < 0)
			continue;
		b = (size_t)(e->time / tl->bucket_ns);
		tl->threads[thread[e->sample]].values[b] += v;
		tl->threads[thread[e->sample]].total += v;
		tl->total[b] += v;
	}
	qsort(tl->threads, tl->nthreads, sizeof(*tl->threads), by_total);
	err = 0;
out:
	free(thread);
	free(ix.keys);
	free(ix.slot);
	if (err)
		kiln_web_timeline_release(tl);
	return err;
}

void kiln_web_timeline_release(struct web_timeline *tl)
{
	size_t i;

	for (i = 0; i < tl->nthreads; i++)
		free(tl->threads[i].values);
	free(tl->threads);
	free(tl->total);
	memset(tl, 0, sizeof(*tl));
}
