/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One event per thread (capture stage): which of the events opened on a
 * process's threads (-p) delivers each thread's samples.  See
 * kiln_perf_one_event_per_thread() in perf.h.
 *
 * Attaching to a running process opens an inherited event on each thread
 * listed in /proc/PID/task, and lists again for threads started
 * meanwhile.  A thread started by a thread whose event was already open
 * inherits that event; if it is listed afterwards it gets its own too,
 * and so do all the threads it starts: the kernel then samples each of
 * them twice (1.4-2.0x the real CPU in issue 22).  Whether a thread
 * inherited cannot be asked of the kernel, but every sample says which
 * opened event it came from (PERF_SAMPLE_IDENTIFIER gives the id of the
 * event opened, for an inherited copy too): the first event to deliver a
 * sample of a thread is dropped when a newer event (opened later) counted
 * the same moment on the same thread: the thread's own event from the
 * time it was opened (known at the open, whether or not it has delivered
 * yet: the rings are read one CPU after another, so a thread's own
 * event's samples on one CPU can be read before its inherited copy's
 * earlier ones on another), and a newer inherited copy from the thread's
 * start, once its FORK record or a sample of it is read (of several
 * inherited copies on one thread the older ones were seen to fire less
 * often than their period says).  Samples between the thread's start and
 * its own event's open thus come from the inherited one.  Without times
 * of CLOCK_MONOTONIC (kernels before 4.1) a thread's own event counts
 * from its start.  A thread's events are forgotten at its exit (its
 * number may come back).
 * FORK records of our events say which new threads inherited one, so
 * that listing the threads again need not open those.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "capture/perfint.h"
#include "util/buf.h"
#include "util/htab.h"

struct own_id {
	uint64_t id;	/* the event's id (PERF_EVENT_IOC_ID) */
	uint32_t tid;	/* the thread it was opened on */
	uint32_t seq;	/* which kiln_perf_open() (1, 2, ...): the newest
			 * of a thread's events wins */
};

/* Opened while the events are disabled: counts from kiln_perf_enable(). */
#define OWN_START_PENDING UINT64_MAX

struct own_tid {
	uint32_t tid;
	uint32_t inherited;	/* the newest inherited event (own_id.seq)
				 * that delivered a sample of it, 0: none */
	uint32_t own_seq;	/* its own newest event (own_id.seq), 0: none */
	uint64_t own_start;	/* when that one began counting (CLOCK_MONOTONIC
				 * ns), or OWN_START_PENDING */
	bool covered;	/* an event of ours delivered a sample or its FORK */
};

struct kperf_own {
	struct own_id *ids;	/* sorted by id */
	size_t nids, ids_alloc;
	struct own_tid *tids;
	size_t ntids, tids_alloc;
	struct kiln_htab index;	/* tid -> tids[] (1-based) */
};

static struct own_tid *tid_entry(struct kperf_own *o, uint32_t tid, bool make);

/* CLOCK_MONOTONIC in ns: the clock of the samples' times (use_clockid). */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int kperf_own_add(struct kiln_perf *s, int fd, pid_t tid)
{
	struct kperf_own *o = s->own;
	struct own_tid *t;
	uint64_t id;
	size_t i;

	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return -errno;
	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		kiln_htab_init(&o->index);
		s->own = o;
	}
	if (KILN_GROW(o->ids, o->ids_alloc, o->nids + 1, 64))
		return -ENOMEM;
	/* The kernel numbers events in the order they are made: appended,
	 * in order, but kept sorted whatever it does. */
	for (i = o->nids; i > 0 && o->ids[i - 1].id > id; i--)
		o->ids[i] = o->ids[i - 1];
	o->ids[i].id = id;
	o->ids[i].tid = (uint32_t)tid;
	o->ids[i].seq = s->open_seq;
	o->nids++;
	t = tid_entry(o, (uint32_t)tid, true);
	if (!t)
		return -ENOMEM;
	if (s->open_seq >= t->own_seq) {
		t->own_seq = s->open_seq;
		t->own_start = s->attr.disabled ? OWN_START_PENDING : now_ns();
	}
	return 0;
}

void kperf_own_enabled(struct kiln_perf *s)
{
	struct kperf_own *o = s->own;
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; o && i < o->ntids; i++)
		if (o->tids[i].own_start == OWN_START_PENDING)
			o->tids[i].own_start = now;
}

/* Event id's entry, NULL if not one of ours. */
static const struct own_id *id_entry(const struct kperf_own *o, uint64_t id)
{
	size_t lo = 0, hi = o->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < o->nids && o->ids[lo].id == id ? &o->ids[lo] : NULL;
}

static uint32_t tid_hash(uint32_t tid)
{
	return (uint32_t)kiln_hash(&tid, sizeof(tid));
}

struct tid_key {
	const struct kperf_own *o;
	uint32_t tid;
};

static bool tid_eq(const void *ctx, uint32_t id)
{
	const struct tid_key *k = ctx;

	return k->o->tids[id - 1].tid == k->tid;
}

/* tid's entry, made (owner 0) if new and make; NULL if none or no memory. */
static struct own_tid *tid_entry(struct kperf_own *o, uint32_t tid, bool make)
{
	struct tid_key k = { o, tid };
	uint32_t h = tid_hash(tid), id = kiln_htab_find(&o->index, h, tid_eq, &k);

	if (id)
		return &o->tids[id - 1];
	if (!make || KILN_GROW(o->tids, o->tids_alloc, o->ntids + 1, 64))
		return NULL;
	if (kiln_htab_insert(&o->index, h, (uint32_t)o->ntids + 1))
		return NULL;
	memset(&o->tids[o->ntids], 0, sizeof(o->tids[0]));
	o->tids[o->ntids].tid = tid;
	return &o->tids[o->ntids++];
}

bool kperf_own_keep(struct kiln_perf *s, const char *rec,
		    struct kiln_perf_event *ev)
{
	struct kperf_own *o = s->own;
	const struct own_id *e;
	struct own_tid *t;
	uint32_t tid;
	bool newer;

	if (!o)
		return true;
	switch (ev->kind) {
	case KILN_PERF_EXIT:
		if ((e = id_entry(o, kperf_rec_id(s, rec)))) {
			ev->task.by_tid = e->tid;
			ev->task.by_seq = e->seq;
		}
		t = tid_entry(o, ev->task.tid, false);
		if (t) {
			t->inherited = t->own_seq = 0;
			t->covered = false;
		}
		return true;
	case KILN_PERF_FORK:
		/* Started by a thread one of our events covers: it inherited
		 * the event (kiln_perf_thread_covered()), counting from its
		 * start. */
		e = id_entry(o, kperf_rec_id(s, rec));
		if (e) {
			ev->task.by_tid = e->tid;
			ev->task.by_seq = e->seq;
		}
		if (e && (t = tid_entry(o, ev->task.tid, true))) {
			t->covered = true;
			if (e->seq > t->inherited)
				t->inherited = e->seq;
		}
		return true;
	case KILN_PERF_SAMPLE:
		tid = ev->sample.tid;
		break;
	case KILN_PERF_SWITCH:
		tid = ev->sw.tid;
		break;
	default:
		return true;
	}
	e = id_entry(o, kperf_rec_id(s, rec));
	if (!e)
		return true;	/* not an event of ours: nothing to judge */
	t = tid_entry(o, tid, true);
	if (!t)
		return true;	/* no memory: counted twice rather than lost */
	t->covered = true;
	if (e->tid != tid && e->seq > t->inherited)
		t->inherited = e->seq;
	/* A newer event counted this moment too: the thread's own from its
	 * open, a newer inherited copy from the thread's start. */
	newer = t->inherited > e->seq ||
		(t->own_seq > e->seq &&
		 (!s->attr.use_clockid || ev->time >= t->own_start));
	if (!newer)
		return true;
	if (ev->kind == KILN_PERF_SAMPLE)
		s->dropped_twice++;
	return false;
}

bool kiln_perf_thread_covered(struct kiln_perf *s, pid_t tid)
{
	struct own_tid *t;

	if (!s->own)
		return false;
	t = tid_entry(s->own, (uint32_t)tid, false);
	return t && t->covered;
}

void kperf_own_free(struct kiln_perf *s)
{
	struct kperf_own *o = s->own;

	if (!o)
		return;
	free(o->ids);
	free(o->tids);
	kiln_htab_release(&o->index);
	free(o);
	s->own = NULL;
}
