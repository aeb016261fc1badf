/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln stat`'s run (session stage): the targets opened (a command kiln
 * starts and follows with its children, -p processes thread by thread,
 * -a/-C whole CPUs), counting until the command ends, the processes are
 * gone, the duration is over or a signal asks to stop, with -I intervals
 * printed on the way.  See stat-run.h.
 */
#include "session/stat-run.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session/targets.h"
#include "util/child.h"

/* What one run holds. */
struct srun {
	const struct kiln_stat_opts *o;
	struct kiln_stat_result *res;
	struct kiln_stat *s;
	struct kiln_child child;
	struct kiln_stat_value *prev;	/* the last reads, for -I */
	char **names;
	size_t nnames;
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

/* Every thread of pid, each followed with what it starts (inherit). */
static int add_process(struct kiln_stat *s, pid_t pid, char ***names, size_t *nnames)
{
	char dir[64];
	DIR *d;
	struct dirent *de;
	int err = 0, opened = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);
		char name[96], **nn;

		if (tid <= 0)
			continue;
		err = kiln_stat_add(s, (pid_t)tid, -1, true, false);
		if (err == -ESRCH) {	/* the thread just ended */
			err = 0;
			continue;
		}
		if (err)
			break;
		opened++;
		thread_name(pid, (pid_t)tid, name, sizeof(name));
		nn = realloc(*names, (*nnames + 1) * sizeof(*nn));
		if (!nn || !(nn[*nnames] = strdup(name))) {
			if (nn)
				*names = nn;
			err = -ENOMEM;
			break;
		}
		*names = nn;
		(*nnames)++;
	}
	closedir(d);
	if (!err && !opened)
		err = -ESRCH;
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
		for (i = 0; i < (size_t)o->npids && !err; i++) {
			err = add_process(r->s, o->pids[i], &r->names, &r->nnames);
			if (err == -ESRCH)
				return fail(r, KILN_STAT_RUN_GONE, err, o->pids[i]);
		}
	} else {
		err = kiln_stat_add(r->s, r->child.pid, -1, true, true);
	}
	if (err)
		return fail(r, KILN_STAT_RUN_OPEN, err, 0);
	r->prev = calloc((kiln_stat_ntargets(r->s) + 1) * (o->n ? o->n : 1),
			 sizeof(*r->prev));
	if (!r->prev)
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
	return wake < 0 ? -1 : wake <= now ? 0 : (int)((wake - now) * 1000) + 1;
}

/* Counts until the end; prints the intervals. */
static void count(struct srun *r)
{
	const struct kiln_stat_opts *o = r->o;
	struct kiln_stat_result *res = r->res;
	double next_iv = 0, last_iv = r->t0;
	bool child_done = false, header = false;

	if (o->interval_ms)
		next_iv = r->t0 + o->interval_ms / 1000.0;
	for (;;) {
		double now = kiln_session_now();
		int timeout = timeout_of(r, now, next_iv);

		if (!*o->stop)
			poll(r->pfd, (nfds_t)r->npfd, timeout);
		now = kiln_session_now();
		if (o->ncmd && !child_done &&
		    kiln_child_wait(&r->child, false, &res->status, &res->ru) == 1) {
			child_done = true;
			res->have_status = true;
		}
		if (o->interval_ms && (now >= next_iv || child_done ||
				       (!o->ncmd && !kiln_targets_alive(o->pids, o->npids)))) {
			kiln_stat_print_interval(o, r->s, r->prev, r->names,
						 now - r->t0, now - last_iv, &header);
			last_iv = now;
			while (next_iv <= now)
				next_iv += o->interval_ms / 1000.0;
		}
		if (child_done)
			break;
		if (!o->ncmd && o->npids && !kiln_targets_alive(o->pids, o->npids))
			break;
		if (o->duration && now - r->t0 >= o->duration)
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
	free(r.prev);
	for (i = 0; i < r.nnames; i++)
		free(r.names[i]);
	free(r.names);
	kiln_stat_free(r.s);
	return err;
}
