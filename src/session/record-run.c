/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recording session (session stage): targets opened, the command
 * started, the rings drained into the recorder until the end, the profile
 * handed back.  See record-run.h.
 */
#include "session/record-run.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "capture/offcpu.h"
#include "profile/profile.h"
#include "session/follow.h"
#include "session/targets.h"
#include "util/buf.h"
#include "util/child.h"

/* What one recording holds while it runs. */
struct run {
	const struct kiln_record_opts *o;
	struct kiln_record_result *res;
	struct kiln_perf *s;
	struct kiln_rec *rec;
	struct kiln_offcpu *oc;
	struct kiln_child child;
	struct kiln_follow *follow;	/* -p: each process's threads */
	uint64_t start_real;
	double start;
};

static int fail(struct run *r, enum kiln_record_failure f, int err)
{
	r->res->failed = f;
	r->res->err = err;
	kiln_child_kill(&r->child);
	return -1;
}

/*
 * -a: learns every process running now (mappings and thread names), as
 * perf synthesizes them, so that their samples meet their own mappings.
 * Processes that end meanwhile are skipped.
 */
static int seed_all(struct kiln_rec *rec)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid <= 0 || *end || pid == (long)getpid())
			continue;
		err = kiln_rec_seed(rec, (pid_t)pid);
		if (err && err != -ENOMEM)
			err = 0;	/* gone, or a kernel thread */
	}
	closedir(d);
	return err;
}

/* The rings, the recorder and the off-CPU intervals.  0 or -1. */
static int setup(struct run *r)
{
	const struct kiln_record_opts *o = r->o;
	int e;

	/*
	 * Room for a few hundred milliseconds of samples per CPU, so that a
	 * pause of kiln's (loading a large debug file) loses nothing: the
	 * caller's ring size; less where the memory-lock limit of an
	 * unprivileged user says so.  A reader thread empties the buffers
	 * into memory while the samples are symbolized.
	 */
	r->s = kiln_perf_new(&o->pa, o->ring_pages);
	r->rec = kiln_rec_new(&o->ro);
	if (r->rec && (o->offcpu || o->wall)) {
		struct kiln_offcpu_sink sink;

		kiln_rec_sink(r->rec, &sink);
		r->oc = kiln_offcpu_new(&sink, o->tp_id, o->wall);
	}
	if (r->s && o->wall)
		kiln_perf_add_event(r->s, &o->swa);
	e = errno;
	if ((o->offcpu || o->wall) && r->rec && !r->oc)
		return fail(r, KILN_RECORD_OFFCPU, -e);
	if (!r->s || !r->rec)
		return fail(r, KILN_RECORD_NOMEM, -ENOMEM);
	if (o->cpu_arg && kiln_perf_set_cpus(r->s, o->cpu_arg))
		return fail(r, KILN_RECORD_CPUS, -EINVAL);
	return 0;
}

/* -t: each thread, its process learnt first. */
static int open_threads(struct run *r)
{
	const struct kiln_record_opts *o = r->o;
	int i, err = 0;

	for (i = 0; i < o->ntids && !err; i++) {
		pid_t tgid = kiln_targets_tgid(o->tids[i]);

		err = tgid < 0 ? tgid : kiln_rec_seed(r->rec, tgid);
		if (err == -ENOENT)
			err = -ESRCH;
		if (err == -EACCES)
			err = -EPERM;
		if (!err)
			err = kiln_perf_open(r->s, o->tids[i], false);
		if (err == -ESRCH)
			r->res->gone_tid = o->tids[i];
	}
	return err;
}

/*
 * -p: each process, learnt, with every thread, each thread's samples
 * taken from one event (a thread started while the listing runs may
 * inherit one event and get another), and the names of the threads that
 * started meanwhile.
 */
/* A rescan's new threads of pid: their names. */
static void names_of(void *ctx, pid_t pid)
{
	struct run *r = ctx;

	kiln_rec_seed_names(r->rec, pid);
}

static int open_processes(struct run *r)
{
	const struct kiln_record_opts *o = r->o;
	const struct kiln_follow_ops ops = { .listed = names_of, .ctx = r };
	int i, err = kiln_perf_one_event_per_thread(r->s);
	bool any;

	r->follow = err ? NULL : kiln_follow_new(r->s, o->pids, o->npids, &ops);
	if (!err && !r->follow)
		return -ENOMEM;
	for (i = 0; i < o->npids && !err; i++) {
		err = kiln_rec_seed(r->rec, o->pids[i]);
		if (err == -ENOENT)
			err = -ESRCH;
		if (err == -EACCES)
			err = -EPERM;
		if (!err)
			err = kiln_follow_process(r->follow, i, &any);
		if (!err)
			err = kiln_rec_seed_names(r->rec, o->pids[i]);
		if (err == -ESRCH)
			r->res->gone_pid = o->pids[i];
	}
	return err;
}

/* Opens the events on the targets (the command held before exec). */
static int open_targets(struct run *r)
{
	const struct kiln_record_opts *o = r->o;
	int err;

	if (o->on_stop) {
		signal(SIGINT, o->on_stop);
		signal(SIGTERM, o->on_stop);
		signal(SIGHUP, o->on_stop);
	}
	if (o->system_wide) {
		err = seed_all(r->rec);
		if (!err)
			err = kiln_perf_open(r->s, -1, false);
		if (!err && o->ncmd)
			err = kiln_child_spawn(&r->child, o->cmd);
	} else if (o->ncmd) {
		err = kiln_child_spawn(&r->child, o->cmd);
		if (!err)
			err = kiln_perf_open(r->s, r->child.pid, true);
	} else if (o->ntids) {
		err = open_threads(r);
	} else {
		err = open_processes(r);
	}
	if (err)
		return fail(r, KILN_RECORD_OPEN, err);
	err = kiln_perf_start_reader(r->s);
	if (err)
		return fail(r, KILN_RECORD_READER, err);
	return 0;
}

static void drain(struct run *r)
{
	kiln_perf_drain(r->s, r->oc ? kiln_offcpu_event : kiln_rec_event,
			r->oc ? (void *)r->oc : (void *)r->rec);
}

static void progress(struct run *r, bool final)
{
	r->o->progress(r->o->progress_arg, kiln_session_now() - r->start,
		       kiln_rec_samples(r->rec), kiln_perf_lost(r->s), final);
}

/* Starts the counting (and the command), records until the end. */
static int record(struct run *r)
{
	const struct kiln_record_opts *o = r->o;
	double last_progress = 0;
	bool child_done = false;
	int err;

	r->start = kiln_session_now();
	if (o->system_wide)
		kiln_perf_enable(r->s);
	if (o->ncmd) {
		err = kiln_child_start(&r->child);
		if (err) {
			r->res->failed = KILN_RECORD_EXEC;
			r->res->err = err;
			kiln_child_wait(&r->child, true, &r->res->status, NULL);
			r->child.pid = 0;
			return -1;
		}
	} else if (!o->system_wide) {
		kiln_perf_enable(r->s);
	}
	for (;;) {
		/* A thread just opened may have started others, uncounted
		 * until listed: list again in 2 ms rather than 100. */
		kiln_perf_wait(r->s, r->follow && kiln_follow_fresh(r->follow) ? 2 : 100);
		drain(r);
		/* -p: threads started by one that had no event yet (the
		 * attach's last listing can leave one); the others inherited
		 * theirs. */
		if (r->follow)
			kiln_follow_rescan(r->follow);
		if (o->ncmd && !child_done &&
		    kiln_child_wait(&r->child, false, &r->res->status, NULL) == 1)
			child_done = true;
		if (child_done)
			break;
		if (!o->ncmd && o->npids && !kiln_targets_alive(o->pids, o->npids))
			break;
		if (!o->ncmd && o->ntids && !kiln_targets_alive(o->tids, o->ntids))
			break;
		if (o->duration && kiln_session_now() - r->start >= o->duration)
			break;
		if (*o->stop) {
			/* As perf: recording stops at once; a command
			 * still running gets SIGTERM below. */
			r->res->stopped_by = *o->stop;
			break;
		}
		if (o->progress && kiln_session_now() - last_progress >= 0.5) {
			progress(r, false);
			last_progress = kiln_session_now();
		}
	}
	kiln_perf_disable(r->s);
	if (o->ro.carry_lost)
		r->res->counted = !kiln_perf_count(r->s, &r->res->count);
	kiln_perf_stop_reader(r->s);
	drain(r);
	if (o->progress)
		progress(r, true);
	if (o->ncmd && !child_done)
		/* A signal to kiln, or --duration, ended a command
		 * still running: stop it, as perf does. */
		kiln_child_stop(&r->child, SIGTERM, &r->res->status, NULL);
	else if (o->ncmd)
		/* It ended by itself: a daemon it forked may run on. */
		r->res->left_pid = kiln_rec_procs_running(r->rec, r->child.pid,
							  &r->res->nleft);
	return 0;
}

void kiln_record_comment_cmdline(struct kiln_prof *p, char **argv, int argc,
				 const char *prefix)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int i;

	kiln_buf_adds(&b, prefix);
	for (i = 0; i < argc; i++) {
		if (i)
			kiln_buf_addc(&b, ' ');
		kiln_buf_adds(&b, argv[i]);
	}
	if (b.data)
		kiln_prof_add_comment(p, b.data);
	kiln_buf_release(&b);
}

/* The command line of a running process (from /proc/PID/cmdline) as a
 * comment; its name in brackets where it has none (a kernel thread). */
static void add_pid_comment(struct kiln_prof *p, pid_t pid)
{
	char path[64], buf[4096];
	size_t n = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	while (n && !buf[n - 1])
		n--;
	if (!n) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		f = fopen(path, "r");
		buf[0] = '[';
		n = 1;
		if (f) {
			n += fread(buf + 1, 1, sizeof(buf) - 3, f);
			fclose(f);
		}
		while (n > 1 && buf[n - 1] == '\n')
			n--;
		buf[n++] = ']';
	}
	for (i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	kiln_prof_add_comment(p, buf);
}

/*
 * A counting event: the events counted whose records were lost at the
 * end (no LOST record says so) go to the last sample's stack; the count
 * and the estimate beside the samples, in a comment.
 */
static void carry_lost(struct run *r)
{
	struct kiln_record_result *res = r->res;
	uint64_t had = kiln_rec_event_total(r->rec) + kiln_rec_self_samples(r->rec);

	if (res->counted && res->count > had)
		kiln_rec_carry(r->rec, res->count - had);
	res->estimated = kiln_rec_carried(r->rec);
}

static void count_comment(struct kiln_prof *prof,
			  const struct kiln_record_result *res)
{
	char c[300];

	if (res->counted && res->estimated)
		snprintf(c, sizeof(c), "event count: %" PRIu64 " (the kernel's), "
			 "%" PRIu64 " of them without a record of their own (lost): "
			 "added to the stacks recorded next to their loss, the "
			 "shares are estimates", res->count, res->estimated);
	else if (res->counted)
		snprintf(c, sizeof(c), "event count: %" PRIu64 " (the kernel's), "
			 "every one recorded", res->count);
	else if (res->estimated)
		snprintf(c, sizeof(c), "%" PRIu64 " events without a record of "
			 "their own (lost): added to the stacks recorded next to "
			 "their loss, the shares are estimates", res->estimated);
	else
		return;
	kiln_prof_add_comment(prof, c);
}

/* The profile with its duration, time origin and comments. */
static int finish(struct run *r)
{
	const struct kiln_record_opts *o = r->o;
	struct kiln_prof *prof;
	struct utsname u;
	int i;

	if (r->oc)
		kiln_offcpu_finish(r->oc, kiln_perf_monotonic(r->s) ?
				   kiln_session_ns(CLOCK_MONOTONIC) : UINT64_MAX);
	if (o->ro.carry_lost)
		carry_lost(r);
	prof = kiln_rec_detach(r->rec);
	if (!prof)
		return fail(r, KILN_RECORD_DETACH, -ENOMEM);
	prof->duration_nanos = (int64_t)((kiln_session_now() - r->start) * 1e9);
	/* The origin of the time labels (docs/formats.md). */
	prof->time_nanos = (int64_t)r->start_real;
	if (o->ncmd)
		kiln_record_comment_cmdline(prof, o->cmd, o->ncmd, "");
	for (i = 0; i < o->npids; i++)
		add_pid_comment(prof, o->pids[i]);
	for (i = 0; i < o->ntids; i++) {
		pid_t tgid = kiln_targets_tgid(o->tids[i]);

		if (tgid > 0)
			add_pid_comment(prof, tgid);
	}
	if (o->system_wide && !o->ncmd)
		kiln_prof_add_comment(prof, o->cpu_arg ? "every process on the "
				      "CPUs given with -C" : "every process (-a)");
	/* What was sampled, where it ran and what it missed, the last two
	 * in the words perf.data's reader uses (kiln serve's summary reads
	 * them back). */
	if (o->ro.event) {
		char c[200];

		snprintf(c, sizeof(c), "event: %s, %s %" PRIu64 "%s", o->ro.event,
			 o->pa.freq ? "frequency" : "period", o->pa.sample,
			 o->pa.freq ? " Hz" : "");
		kiln_prof_add_comment(prof, c);
	}
	if (!uname(&u)) {
		char c[300];

		snprintf(c, sizeof(c), "hostname: %s, kernel %s", u.nodename,
			 u.release);
		kiln_prof_add_comment(prof, c);
	}
	if (kiln_perf_dropped_twice(r->s)) {
		char c[120];

		snprintf(c, sizeof(c), "kiln dropped %" PRIu64 " samples of "
			 "threads covered twice while it attached",
			 kiln_perf_dropped_twice(r->s));
		kiln_prof_add_comment(prof, c);
	}
	if (kiln_perf_lost(r->s)) {
		char c[80];

		snprintf(c, sizeof(c), "kiln lost %" PRIu64 " samples",
			 kiln_perf_lost(r->s));
		kiln_prof_add_comment(prof, c);
	}
	count_comment(prof, r->res);
	r->res->prof = prof;
	r->res->samples = kiln_rec_samples(r->rec);
	r->res->self_samples = kiln_rec_self_samples(r->rec);
	r->res->lost = kiln_perf_lost(r->s);
	r->res->ring_pages = kiln_perf_pages(r->s);
	r->res->kernel_counted = kiln_perf_kernel_counted(r->s);
	return 0;
}

int kiln_record_run(const struct kiln_record_opts *o,
		    struct kiln_record_result *res)
{
	struct kiln_record_opts oo = *o;
	struct run r = { .o = &oo, .res = res, .child = KILN_CHILD_INIT };
	int err;

	memset(res, 0, sizeof(*res));
	/* The time labels count from here (sample times are monotonic). */
	oo.ro.start_ns = kiln_session_ns(CLOCK_MONOTONIC);
	r.start_real = kiln_session_ns(CLOCK_REALTIME);
	err = setup(&r);
	if (!err)
		err = open_targets(&r);
	if (!err)
		err = record(&r);
	if (!err)
		err = finish(&r);
	kiln_child_release(&r.child);
	kiln_follow_free(r.follow);
	kiln_offcpu_free(r.oc);
	kiln_rec_free(r.rec);
	kiln_perf_free(r.s);
	return err;
}
