/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln stat`'s run (session stage): the targets opened (a command kiln
 * starts and follows with its children, -p processes thread by thread,
 * -a/-C whole CPUs), counting until the command ends, the processes are
 * gone, the duration is over or a signal asks to stop, with -I intervals
 * printed on the way.  See stat-run.h.
 */
#include "session/stat-run.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session/follow.h"
#include "session/inherit.h"
#include "session/targets.h"
#include "util/buf.h"
#include "util/child.h"
#include "util/htab.h"

/* -p: a thread and whether it has counters (its own or inherited).
 * Times are CLOCK_MONOTONIC ns (the records' clock), 0: none. */
struct counted {
	pid_t tid;
	bool has;
	uint64_t own_from;	/* its own counters: just before their open
				 * (0: none of its own) */
	uint64_t own_end;	/* and just after */
	uint64_t seen;		/* first listed in /proc */
	/* Inherited: the family, the thread whose counters it has and
	 * that thread's open (its first tracker's seq); 0: none. */
	pid_t root;
	uint32_t root_seq;
	/* Its own latest open: the tracker's seq (kept when it ends: its
	 * family's records still come).  inherit.c notes it too, but only
	 * while a marker is open; reopen() needs it without one. */
	uint32_t seq1;
	unsigned reopened;	/* times its counters were replaced */
};

/* A FORK or EXIT record of a tracker, kept for the next reading: by_tid
 * and by_seq say which open's event (or inherited copy) wrote it. */
struct task_rec {
	uint64_t time;
	pid_t tid, ptid;
	bool fork;
	uint32_t by_tid, by_seq;
};

/* A family (a thread's counters from one open) closed by reopen(). */
struct dead_family {
	pid_t tid;
	uint32_t seq;
};

/* What one run holds. */
struct srun {
	const struct kiln_stat_opts *o;
	struct kiln_stat_result *res;
	struct kiln_stat *s;
	struct kiln_child child;
	struct kiln_stat_value *prev;	/* the last reads, for -I */
	size_t nprev;			/* targets prev has room for */
	char **names;			/* -p: each target thread's */
	size_t nnames;
	struct kiln_perf *tracker;	/* -p: follows the threads */
	struct kiln_inherit *inherit;	/* -p: which threads have it all */
	struct kiln_follow *follow;
	struct dead_family *dead;	/* -p: families reopen() closed */
	size_t ndead, dead_alloc;
	/* Fault injection for the tests (KILN_FAULT_FOLLOW_GAP_US, as
	 * SQLite's fault.c): a pause in each thread's open after its first
	 * tracker's event and before its counters, where a thread it starts
	 * gets the one and not the others (t927). */
	unsigned fault_gap_us;
	struct counted *counted;	/* -p: threads known to the tracker */
	size_t ncounted, counted_alloc;
	struct task_rec *later;		/* -p: records after the last horizon */
	size_t nlater, later_alloc;
	uint64_t horizon;		/* records before it are all read */
	struct kiln_htab counted_index;	/* tid -> counted[] (1-based) */
	struct pollfd pfd[64];		/* pidfds of what is waited for */
	int npfd;
	double t0;
};

static int fail(struct srun *r, enum kiln_stat_failure f, int err, int which)
{
	r->res->failed = f;
	r->res->err = err;
	r->res->which = which;
	kiln_child_kill(&r->child);
	return -1;
}

static void thread_name(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[96], comm[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = 0;
	snprintf(buf, size, "%s-%d", comm[0] ? comm : "?", (int)tid);
}

/* Room in r->prev for the targets and one more (-p's grow while
 * counting), the new ones' last reads zero.  0 or -ENOMEM. */
static int grow_prev(struct srun *r)
{
	size_t nt = kiln_stat_ntargets(r->s) + 1, n = r->o->n ? r->o->n : 1;
	struct kiln_stat_value *p;

	if (nt <= r->nprev)
		return 0;
	p = realloc(r->prev, nt * n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + r->nprev * n, 0, (nt - r->nprev) * n * sizeof(*p));
	r->prev = p;
	r->nprev = nt;
	return 0;
}

struct counted_key {
	const struct srun *r;
	pid_t tid;
};

static bool counted_eq(const void *ctx, uint32_t id)
{
	const struct counted_key *k = ctx;

	return k->r->counted[id - 1].tid == k->tid;
}

/* Thread tid's entry, made (no counters) if new and make; NULL if none
 * or no memory. */
static struct counted *counted_entry(struct srun *r, pid_t tid, bool make)
{
	struct counted_key key = { r, tid };
	uint32_t h = (uint32_t)kiln_hash(&tid, sizeof(tid)), id;

	id = kiln_htab_find(&r->counted_index, h, counted_eq, &key);
	if (id)
		return &r->counted[id - 1];
	if (!make || KILN_GROW(r->counted, r->counted_alloc, r->ncounted + 1, 64) ||
	    kiln_htab_insert(&r->counted_index, h, (uint32_t)r->ncounted + 1))
		return NULL;
	r->counted[r->ncounted] = (struct counted){ .tid = tid };
	return &r->counted[r->ncounted++];
}

/* Also notes when the thread was first listed (apply()). */
static bool has_counters(void *ctx, pid_t tid)
{
	struct srun *r = ctx;
	struct counted *c = counted_entry(r, tid, r->tracker != NULL);

	if (c && !c->seen)
		c->seen = kiln_session_ns(CLOCK_MONOTONIC);
	return c && c->has;
}

/* -p: thread tid of pid gets the counters (inherited by what it starts)
 * and its name. */
static int count_thread(void *ctx, pid_t pid, pid_t tid)
{
	struct srun *r = ctx;
	char name[96], **nn;
	int err = grow_prev(r);	/* -I's last reads: room for this one */
	uint64_t from = kiln_session_ns(CLOCK_MONOTONIC);

	if (r->fault_gap_us)
		usleep(r->fault_gap_us);
	if (!err)
		err = kiln_stat_add(r->s, tid, -1, true, false);
	if (err)
		return err;
	if (r->tracker) {
		struct counted *c = counted_entry(r, tid, true);

		if (!c)
			return -ENOMEM;
		c->has = true;
		c->own_from = from;
		c->own_end = kiln_session_ns(CLOCK_MONOTONIC);
		c->root = 0;
		c->root_seq = 0;
		c->seq1 = kiln_perf_open_seq(r->tracker);
		/* The marker after the counters (inherit.h). */
		kiln_inherit_opened(r->inherit, tid, c->seq1);
	}
	thread_name(pid, tid, name, sizeof(name));
	nn = realloc(r->names, (r->nnames + 1) * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	r->names = nn;
	if (!(nn[r->nnames] = strdup(name)))
		return -ENOMEM;
	r->nnames++;
	return 0;
}

/* Whether record t comes from a family reopen() closed. */
static bool dead_family(const struct srun *r, const struct task_rec *t)
{
	for (size_t i = 0; i < r->ndead; i++)
		if (r->dead[i].tid == (pid_t)t->by_tid && r->dead[i].seq == t->by_seq)
			return true;
	return false;
}

/*
 * Thread `root`'s counters, and the copies its threads inherited, are
 * not to be trusted (a thread of its family has the tracker's event and
 * not the marker's, or started during root's open: maybe the counters,
 * maybe not; inherit.h): they are closed,
 * what they counted kept, and the thread and the family's threads are
 * listed again as new (their records from now on ignored).  A thread
 * that starts threads all the time may be caught starting one at each
 * open: three times at most.  Whether it was done.
 */
static bool reopen(struct srun *r, pid_t root)
{
	struct counted *fam = counted_entry(r, root, false);
	uint32_t seq;

	if (!fam || fam->reopened >= 3 ||
	    KILN_GROW(r->dead, r->dead_alloc, r->ndead + 1, 8))
		return false;
	seq = fam->seq1;
	r->dead[r->ndead++] = (struct dead_family){ root, seq };
	kiln_stat_retire(r->s, root);
	fam->has = false;
	fam->own_from = 0;
	fam->reopened++;
	kiln_follow_forget(r->follow, root);
	for (size_t i = 0; i < r->ncounted; i++) {
		struct counted *c = &r->counted[i];

		if (c->root != root || c->root_seq != seq)
			continue;
		c->has = false;
		c->root = 0;
		c->root_seq = 0;
		if (!c->own_from)
			kiln_follow_forget(r->follow, c->tid);
	}
	return true;
}

/*
 * The tracker's records, in time order.  A thread inherits its
 * starter's counters if they were there when the kernel copied the
 * starter's events into it (early in clone()); the FORK record is
 * written at the end of clone(), after the thread joined its process
 * (and /proc lists it), and its time can be late: a starter preempted
 * in between (a loaded machine) writes it milliseconds later.  So a
 * starter whose own counters were opened after the new thread was
 * listed, or after the record's time, gave it none: it is opened as a
 * thread not yet seen would be.  Otherwise it inherited them (a record
 * time within the open itself is taken so too).  A thread inherits
 * before /proc can list it, so its own counters, if opened (its record
 * not yet read: kiln_follow's young threads wait only so long), always
 * came after the inherited ones: they are closed, or they would count
 * it, and all it starts, twice.
 * That guess can be wrong: a thread started while its starter's events
 * were being opened may have the tracker's event (opened before the
 * counters) and not the counters, and a thread it starts gets the same,
 * so that a whole chain of threads would go uncounted (issue 22: a
 * quarter of t927's threads, one run in fifty).  Its records say it: a
 * thread with the counters has the marker's event too (opened after
 * them), whose copy writes the same FORK record; where it does not, or
 * where a thread started during its starter's open, the family is
 * reopened.
 */
static void apply(struct srun *r, const struct task_rec *t)
{
	struct counted *c, *parent;
	bool inherited;

	if (!t->fork) {
		c = counted_entry(r, t->tid, false);
		if (c) {
			c->has = false;
			c->own_from = c->seen = 0;
			c->root = 0;
			c->root_seq = 0;
		}
		return;
	}
	if (t->by_tid && dead_family(r, t))
		return;
	if (kiln_inherit_judge(r->inherit, t->time, t->tid, t->ptid, t->by_tid,
			       t->by_seq) == KILN_INHERIT_PART &&
	    reopen(r, (pid_t)t->by_tid))
		return;
	c = counted_entry(r, t->tid, true);	/* may move the entries */
	parent = counted_entry(r, t->ptid, false);
	if (!c)
		return;
	inherited = parent && parent->has;
	if (inherited && parent->own_from &&
	    (t->time < parent->own_from || (c->seen && c->seen < parent->own_from)))
		inherited = false;
	if (!inherited)
		return;
	/* Started during the open: its counters, maybe not. */
	if (parent->own_from && t->time <= parent->own_end &&
	    reopen(r, parent->tid))
		return;
	if (c->own_from) {
		kiln_stat_drop(r->s, c->tid);
		c->own_from = 0;
	}
	c->has = true;
	c->root = t->by_tid ? (pid_t)t->by_tid : 0;
	c->root_seq = t->by_seq;
}

/* The records kept from earlier readings up to time `until`, in order. */
static void apply_later(struct srun *r, uint64_t until)
{
	size_t i = 0, n;

	while (i < r->nlater && r->later[i].time < until)
		apply(r, &r->later[i++]);
	n = r->nlater - i;
	if (i && n)
		memmove(r->later, r->later + i, n * sizeof(*r->later));
	r->nlater = n;
}

/*
 * A reading's records come in time order, but the rings are read one
 * after another: a thread's FORK record in one ring can be read while
 * that of the thread that started it, written a little earlier into a
 * ring read just before, is not (its starter then looks unknown: the
 * thread would be opened and counted twice).  Records from before the
 * reading began (less a millisecond for the kernel's write) are all
 * there: those are applied, the later ones kept for the next reading.
 */
static void on_record(void *ctx, const struct kiln_perf_event *ev)
{
	struct srun *r = ctx;
	struct task_rec t;

	if (ev->kind != KILN_PERF_FORK && ev->kind != KILN_PERF_EXIT)
		return;
	t = (struct task_rec){ ev->time, (pid_t)ev->task.tid,
			       (pid_t)ev->task.ptid, ev->kind == KILN_PERF_FORK,
			       ev->task.by_tid, ev->task.by_seq };
	if (t.time < r->horizon) {
		apply_later(r, t.time);
		apply(r, &t);
		return;
	}
	if (KILN_GROW(r->later, r->later_alloc, r->nlater + 1, 64)) {
		apply(r, &t);	/* no memory: perhaps out of order */
		return;
	}
	r->later[r->nlater++] = t;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct task_rec *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

static void read_forks(void *ctx)
{
	struct srun *r = ctx;
	uint64_t now = kiln_session_ns(CLOCK_MONOTONIC);

	if (!r->tracker)
		return;
	/* Kept records first where older than the new ones (on_record). */
	r->horizon = now > 1000000 ? now - 1000000 : 0;
	kiln_inherit_read(r->inherit, r->horizon);	/* the markers first */
	kiln_perf_drain(r->tracker, on_record, r);
	if (r->nlater > 1)
		qsort(r->later, r->nlater, sizeof(*r->later), cmp_rec);
	apply_later(r, r->horizon);
}

/*
 * -p: every thread of each process, each followed with what it starts.
 * Beside the counters, a dummy event on each thread (inherited the same
 * way) gives a FORK record for each thread started by a counted one
 * (capture/perfown.c): those are not opened again (their counts are
 * their starter's), and the threads started by one not yet counted are
 * found by listing again, at once and while counting (perf stat -p
 * lists once: a process whose threads start threads all the time was
 * counted 0.1-100% of its CPU).  Where that event cannot be made (the
 * memory-lock limit of an unprivileged user on a large machine), each
 * process is listed once.  0 or -errno (-ESRCH: *gone is gone).
 */
static int follow_processes(struct srun *r, pid_t *gone)
{
	const struct kiln_stat_opts *o = r->o;
	const struct kiln_follow_ops ops = {
		.before = read_forks, .opened = count_thread,
		.has = has_counters, .ctx = r,
	};
	bool any;
	int i, err = 0;

	const char *gap = getenv("KILN_FAULT_FOLLOW_GAP_US");
	struct rlimit rl;

	/* Each thread takes a descriptor per counter and two per CPU: as
	 * many as allowed (perf does the same; no command inherits it). */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r->fault_gap_us = gap ? (unsigned)strtoul(gap, NULL, 10) : 0;
	r->tracker = getenv("KNOTRACK") ? NULL : kiln_follow_tracker(o->pids[0]);
	/* Without it (the memory-lock limit), the tracker's records alone
	 * say which threads inherited. */
	r->inherit = r->tracker ? kiln_inherit_new(o->pids[0]) : NULL;
	r->follow = kiln_follow_new(r->tracker, o->pids, o->npids, &ops);
	if (!r->follow)
		return -ENOMEM;
	for (i = 0; i < o->npids && !err; i++) {
		size_t before = kiln_stat_ntargets(r->s);

		err = kiln_follow_process(r->follow, i, &any);
		if (!err && kiln_stat_ntargets(r->s) == before)
			err = -ESRCH;	/* no thread left to count */
		if (err == -ESRCH)
			*gone = o->pids[i];
	}
	/* The records read as they come (a burst of thread starts would
	 * fill the buffers between two listings: a FORK record lost is a
	 * thread counted twice). */
	if (!err && r->tracker)
		err = kiln_perf_start_reader(r->tracker);
	if (!err)
		kiln_inherit_start(r->inherit);
	return err;
}

static long pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* Starts the command (held) and opens the counters on the targets. */
static int open_targets(struct srun *r)
{
	const struct kiln_stat_opts *o = r->o;
	size_t i;
	int err = 0;

	if (o->ncmd) {
		err = kiln_child_spawn(&r->child, o->cmd);
		if (err)
			return fail(r, KILN_STAT_RUN_SPAWN, err, 0);
	}
	if (o->ncpus) {
		for (i = 0; i < (size_t)o->ncpus && !err; i++) {
			err = kiln_stat_add(r->s, -1, o->cpus[i], false, false);
			if (err == -ENODEV || err == -EINVAL)
				return fail(r, KILN_STAT_RUN_CPU, err, o->cpus[i]);
		}
	} else if (o->npids) {
		pid_t gone = 0;

		err = follow_processes(r, &gone);
		if (err == -ESRCH)
			return fail(r, KILN_STAT_RUN_GONE, err, gone);
	} else {
		err = kiln_stat_add(r->s, r->child.pid, -1, true, true);
	}
	if (err)
		return fail(r, KILN_STAT_RUN_OPEN, err, 0);
	if (grow_prev(r))
		return fail(r, KILN_STAT_RUN_NOMEM, -ENOMEM, 0);
	return 0;
}

static void watch(struct srun *r, pid_t pid)
{
	long fd = pidfd_open_(pid);

	if (fd >= 0) {
		r->pfd[r->npfd].fd = (int)fd;
		r->pfd[r->npfd++].events = POLLIN;
	}
}

/* Lets the command run (or starts counting), with pidfds to wait on. */
static int start(struct srun *r)
{
	const struct kiln_stat_opts *o = r->o;
	int err, i;

	r->t0 = kiln_session_now();
	if (o->ncmd) {
		err = kiln_child_start(&r->child);
		if (err) {
			r->res->failed = KILN_STAT_RUN_EXEC;
			r->res->err = err;
			while (kiln_child_wait(&r->child, true, NULL, NULL) == -EINTR)
				;
			return -1;
		}
		watch(r, r->child.pid);
	} else {
		for (i = 0; i < o->npids && r->npfd < 64; i++)
			watch(r, o->pids[i]);
	}
	if (!(o->ncmd && !o->npids && !o->ncpus))
		kiln_stat_enable(r->s);
	return 0;
}

/* When to wake next (-1: no limit), as a poll() timeout from now. */
static int timeout_of(const struct srun *r, double now, double next_iv)
{
	const struct kiln_stat_opts *o = r->o;
	double wake = -1;

	if (o->interval_ms)
		wake = next_iv;
	if (o->duration && (wake < 0 || r->t0 + o->duration < wake))
		wake = r->t0 + o->duration;
	/* Without a pidfd (old kernels), look every 100 ms. */
	if ((o->ncmd || o->npids) && !r->npfd && (wake < 0 || wake > now + 0.1))
		wake = now + 0.1;
	if (o->npids && !o->ncmd && r->npfd && (wake < 0 || wake > now + 1))
		wake = now + 1;	/* a PID whose pidfd failed */
	/* -p: threads started by one not yet counted are listed again
	 * (soon after a listing found one: it may have started more). */
	if (r->tracker) {
		double w = now + (kiln_follow_fresh(r->follow) ? 0.002 : 0.1);

		if (wake < 0 || wake > w)
			wake = w;
	}
	return wake < 0 ? -1 : wake <= now ? 0 : (int)((wake - now) * 1000) + 1;
}

/* Counts until the end; prints the intervals. */
static void count(struct srun *r)
{
	const struct kiln_stat_opts *o = r->o;
	struct kiln_stat_result *res = r->res;
	double next_iv = 0, last_iv = r->t0;
	bool child_done = false, header = false, gone, over;

	if (o->interval_ms)
		next_iv = r->t0 + o->interval_ms / 1000.0;
	for (;;) {
		double now = kiln_session_now();
		int timeout = timeout_of(r, now, next_iv);

		if (!*o->stop)
			poll(r->pfd, (nfds_t)r->npfd, timeout);
		if (r->tracker)
			kiln_follow_rescan(r->follow);
		now = kiln_session_now();
		if (o->ncmd && !child_done &&
		    kiln_child_wait(&r->child, false, &res->status, &res->ru) == 1) {
			child_done = true;
			res->have_status = true;
		}
		/* Whether this pass ends, decided once: a process found gone
		 * after the interval check would take the counts since the
		 * last interval with it (an -I total short of the run's). */
		gone = !o->ncmd && o->npids && !kiln_targets_alive(o->pids, o->npids);
		over = o->duration && now - r->t0 >= o->duration;
		if (o->interval_ms && (now >= next_iv || child_done || gone || over ||
				       (*o->stop && !o->ncmd))) {
			kiln_stat_print_interval(o, r->s, r->prev, r->names,
						 now - r->t0, now - last_iv, &header);
			last_iv = now;
			while (next_iv <= now)
				next_iv += o->interval_ms / 1000.0;
		}
		if (child_done || gone || over)
			break;
		if (*o->stop) {
			/* The command gets the signal too (Ctrl-C reaches the
			 * whole foreground group; a kill of kiln alone is
			 * passed on); its totals print once it ends. */
			if (!o->ncmd)
				break;
			kill(r->child.pid, *o->stop);
			*o->stop = 0;
		}
	}
	kiln_stat_disable(r->s);
	res->elapsed_s = kiln_session_now() - r->t0;
	if (o->ncmd && !child_done) {
		/* --duration ended a command still running: stop it. */
		kiln_child_stop(&r->child, SIGTERM, &res->status, &res->ru);
		res->have_status = true;
	}
}

int kiln_stat_run(const struct kiln_stat_opts *o, struct kiln_stat_result *res,
		  struct kiln_stat **s_out, char ***names_out, size_t *nnames_out)
{
	struct srun r = { .o = o, .res = res, .child = KILN_CHILD_INIT };
	int err = -1;
	size_t i;

	res->failed = KILN_STAT_RUN_OK;
	r.s = kiln_stat_new(o->evs, o->leader, o->n);
	if (!r.s) {
		res->failed = KILN_STAT_RUN_NOMEM;
		res->err = -ENOMEM;
		return -1;
	}
	if (open_targets(&r) || start(&r))
		goto out;
	count(&r);
	for (i = 0; i < o->n; i++) {
		struct kiln_stat_value kv;

		kiln_stat_read(r.s, SIZE_MAX, i, &kv);
		kiln_stat_to_vals(r.s, i, &kv, &res->v[i]);
	}
	if (r.tracker) {
		read_forks(&r);
		res->follow_lost = kiln_perf_lost(r.tracker);
		res->follow_failed = kiln_follow_failed(r.follow, &res->follow_err);
	}
	*s_out = r.s;
	r.s = NULL;
	*names_out = r.names;
	*nnames_out = r.nnames;
	r.names = NULL;
	r.nnames = 0;
	err = 0;
out:
	while (r.npfd)
		close(r.pfd[--r.npfd].fd);
	kiln_child_release(&r.child);
	kiln_follow_free(r.follow);
	kiln_perf_free(r.tracker);
	kiln_inherit_free(r.inherit);
	kiln_htab_release(&r.counted_index);
	free(r.counted);
	free(r.later);
	free(r.dead);
	free(r.prev);
	for (i = 0; i < r.nnames; i++)
		free(r.names[i]);
	free(r.names);
	kiln_stat_free(r.s);
	return err;
}
