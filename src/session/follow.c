/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Following a running process's threads (session stage).  See follow.h.
 */
#include "session/follow.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/targets.h"
#include "util/buf.h"

/*
 * The threads of a process as last listed (sorted), so that listing
 * /proc/PID/task again opens only new ones; a number that left the list
 * and comes back is a new thread.
 */
struct seen {
	long *tids;
	size_t n, alloc;
	bool listed;		/* listed once already */
	struct young {		/* new threads waiting for their FORK record */
		long tid;
		uint64_t since;	/* first listed (CLOCK_MONOTONIC ns) */
	} *young;
	size_t nyoung, young_alloc;
};

/*
 * A thread that appears after the first listing may have inherited the
 * events, which its FORK record, read a little later, says (the kernel
 * writes it after the thread joins its process, and records are read up
 * to a millisecond old): it waits this long before being opened.  With
 * ops.has (kiln stat's counters, whose tracker runs from the start) from
 * the second listing on; with the capture stage's events (kiln record)
 * once the session runs (kiln_follow_rescan(): while they are disabled
 * no FORK record is written).  Opened at once, such a thread and all it
 * starts would be covered twice (kiln record drops the second copy's
 * samples, perfown.c, but t522's burst threads carried 2-13 copies each:
 * 600-13,000 samples dropped in a run).
 */
#define YOUNG_NS 3000000u

struct kiln_follow {
	struct kiln_perf *s;
	const pid_t *pids;
	int npids;
	struct kiln_follow_ops ops;
	struct seen *seen;	/* one per process */
	bool fresh;
	bool running;		/* kiln_follow_rescan() was called */
	size_t failed;		/* threads left out: their open failed */
	int failed_err;		/* the last such failure */
};

struct kiln_follow *kiln_follow_new(struct kiln_perf *s, const pid_t *pids,
				    int npids, const struct kiln_follow_ops *ops)
{
	struct kiln_follow *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->seen = calloc(npids > 0 ? (size_t)npids : 1, sizeof(*f->seen));
	if (!f->seen) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->s = s;
	f->pids = pids;
	f->npids = npids;
	if (ops)
		f->ops = *ops;
	return f;
}

void kiln_follow_free(struct kiln_follow *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->npids; i++) {
		free(f->seen[i].tids);
		free(f->seen[i].young);
	}
	free(f->seen);
	free(f);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Thread tid of pid opened: the capture events, then the caller's. */
static int open_thread(struct kiln_follow *f, pid_t pid, pid_t tid)
{
	int err = f->s ? kiln_perf_open(f->s, tid, true) : 0;

	if (!err && f->ops.opened)
		err = f->ops.opened(f->ops.ctx, pid, tid);
	return err == -ESRCH ? 0 : err;	/* the thread just ended */
}

/* Whether candidate tid must wait (kept in sn's young list, listed
 * again), or is opened now.  -ENOMEM, 1: it waits, 0: open it. */
static int wait_young(const struct kiln_follow *f, struct seen *sn, long tid,
		      uint64_t now, struct young *keep, size_t *nkeep)
{
	size_t i;

	if (!sn->listed || (!f->ops.has && !f->running))
		return 0;
	for (i = 0; i < sn->nyoung; i++)
		if (sn->young[i].tid == tid)
			break;
	if (i < sn->nyoung && now - sn->young[i].since >= YOUNG_NS)
		return 0;
	keep[*nkeep].tid = tid;
	keep[*nkeep].since = i < sn->nyoung ? sn->young[i].since : now;
	(*nkeep)++;
	return 1;
}

/*
 * One listing of /proc/PID/task: each thread not yet seen opened (and
 * following the threads and processes it creates), newest first: the
 * list is in the order the threads started, and a thread that starts
 * another after the listing and before its own open leaves that one
 * uncovered (and the threads it starts), so the newest, the likeliest to
 * start more, wait least.  *fresh: whether there was one.  0 or -errno.
 */
static int list_once(struct kiln_follow *f, struct seen *sn, pid_t pid,
		     bool *fresh)
{
	char dir[64];
	DIR *d;
	struct dirent *de;
	long *list = NULL, *fresh_tids = NULL;
	struct young *keep = NULL;
	size_t n = 0, alloc = 0, nf = 0, falloc = 0, nkeep = 0, kalloc = 0, i;
	uint64_t now = kiln_session_ns(CLOCK_MONOTONIC);
	int err = 0, w;
	bool first;

	*fresh = false;
	first = !sn->listed;
	if (f->ops.before)
		f->ops.before(f->ops.ctx);
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (KILN_GROW(list, alloc, n + 1, 64) ||
		    KILN_GROW(keep, kalloc, nkeep + 1, 16)) {
			err = -ENOMEM;
			break;
		}
		if (sn->n && bsearch(&tid, sn->tids, sn->n, sizeof(*sn->tids),
				     cmp_long)) {
			list[n++] = tid;
			continue;
		}
		if (f->ops.has ? f->ops.has(f->ops.ctx, (pid_t)tid) :
		    f->s && kiln_perf_thread_covered(f->s, (pid_t)tid)) {
			list[n++] = tid;
			continue;	/* it inherited the events */
		}
		w = wait_young(f, sn, tid, now, keep, &nkeep);
		if (w)
			continue;	/* not seen yet: listed again */
		list[n++] = tid;
		if (KILN_GROW(fresh_tids, falloc, nf + 1, 64))
			err = -ENOMEM;
		else
			fresh_tids[nf++] = tid;
	}
	closedir(d);
	*fresh = nf > 0;
	if (!err) {
		free(sn->young);
		sn->young = keep;
		sn->nyoung = nkeep;
		sn->young_alloc = kalloc;
		keep = NULL;
		sn->listed = true;
	}
	free(keep);
	/* Once counting, a thread that cannot be opened (a limit, a
	 * kernel's refusal) is left out, counted and said, not tried again;
	 * the others are opened still.  Out of memory or descriptors stops
	 * the listing, and so does any failure in the first (a process kiln
	 * may not count: the caller says why). */
	for (i = nf; !err && i-- > 0;) {
		int e = open_thread(f, pid, (pid_t)fresh_tids[i]);

		if (e == -ENOMEM || e == -EMFILE || e == -ENFILE || (e && first)) {
			err = e;
		} else if (e) {
			f->failed++;
			f->failed_err = e;
		}
	}
	if (!err) {
		if (n > 1)
			qsort(list, n, sizeof(*list), cmp_long);
		free(sn->tids);
		sn->tids = list;
		sn->n = n;
		sn->alloc = alloc;
		list = NULL;
	}
	free(list);
	free(fresh_tids);
	return err;
}

int kiln_follow_process(struct kiln_follow *f, int i, bool *any)
{
	bool fresh = true;
	int err = 0, pass;

	*any = false;
	/* Without events to follow threads, a thread listed later may have
	 * inherited the caller's: one listing only. */
	for (pass = 0; pass < (f->s ? 16 : 1) && fresh && !err; pass++) {
		err = list_once(f, &f->seen[i], f->pids[i], &fresh);
		*any |= fresh;
	}
	return err;
}

void kiln_follow_rescan(struct kiln_follow *f)
{
	bool any;

	f->fresh = false;
	f->running = true;
	for (int i = 0; f->s && i < f->npids; i++) {
		if (!kiln_follow_process(f, i, &any) && any) {
			if (f->ops.listed)
				f->ops.listed(f->ops.ctx, f->pids[i]);
			f->fresh = true;
		}
		if (f->seen[i].nyoung)
			f->fresh = true;	/* threads waiting for their FORK */
	}
}

void kiln_follow_forget(struct kiln_follow *f, pid_t tid)
{
	long key = tid;

	for (int i = 0; i < f->npids; i++) {
		struct seen *sn = &f->seen[i];
		long *at = sn->n ? bsearch(&key, sn->tids, sn->n,
					   sizeof(*sn->tids), cmp_long) : NULL;

		if (!at)
			continue;
		memmove(at, at + 1, (size_t)(sn->tids + sn->n - at - 1) * sizeof(*at));
		sn->n--;
		f->fresh = true;
	}
}

bool kiln_follow_fresh(const struct kiln_follow *f)
{
	return f->fresh;
}

struct kiln_perf *kiln_follow_tracker(pid_t pid)
{
	static const struct kiln_perf_attr dummy = {
		.type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.sample = 1, .tasks_only = true,
	};
	struct kiln_perf *t = kiln_perf_new(&dummy, 64);

	/* Tried on pid first (not inherited, then closed). */
	if (t && !kiln_perf_one_event_per_thread(t) && !kiln_perf_open(t, pid, false)) {
		kiln_perf_free(t);
		t = kiln_perf_new(&dummy, 64);
		if (t && !kiln_perf_one_event_per_thread(t)) {
			kiln_perf_enable(t);	/* FORK records from the start */
			return t;
		}
	}
	kiln_perf_free(t);
	return NULL;
}

size_t kiln_follow_failed(const struct kiln_follow *f, int *err)
{
	if (err)
		*err = f ? f->failed_err : 0;
	return f ? f->failed : 0;
}
