/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From perf records to a symbolized profile (session stage): the
 * recorder's life and sample assembly (stacks unwound or taken from the
 * call chain, the stack cache, values and labels).  See record.h; the
 * model is machine.c's, the symbols resolve.c's.
 */
#include "session/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session/recint.h"
#include "session/unwind.h"
#include "profile/profile.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/htab.h"
#include "util/file.h"
#include "util/maps.h"

struct kiln_rec *kiln_rec_new(const struct kiln_rec_opts *o)
{
	struct kiln_rec *r = calloc(1, sizeof(*r));
	const char *types[1 + KILN_REC_MAX_COLUMNS];
	char second[128];
	uint32_t i;

	if (!r)
		return NULL;
	r->o = *o;
	r->o.columns = NULL;	/* the caller's strings: interned below */
	r->p = kiln_prof_new();
	if (!r->p)
		goto out_free;
	types[0] = "samples/count";
	if (o->ncolumns > 1) {
		if (o->ncolumns > KILN_REC_MAX_COLUMNS) {
			kiln_rec_free(r);
			errno = EINVAL;
			return NULL;
		}
		r->ncols = o->ncolumns;
		for (i = 0; i < r->ncols; i++) {
			const char *u = strrchr(o->columns[i], '/');

			types[1 + i] = o->columns[i];
			r->col_ns[i] = u && !strcmp(u, "/nanoseconds");
		}
	} else {
		if (o->ncolumns == 1)
			snprintf(second, sizeof(second), "%s", o->columns[0]);
		else if (o->value_type)
			snprintf(second, sizeof(second), "%s", o->value_type);
		else if (o->ns_values)
			snprintf(second, sizeof(second), "cpu/nanoseconds");
		else
			snprintf(second, sizeof(second), "%s/count", o->event);
		types[1] = second;
		r->ncols = 1;
		r->col_ns[0] = o->ns_values;
	}
	r->values = calloc(1 + r->ncols, sizeof(*r->values));
	if (!r->values)
		goto out_free;
	if (kiln_prof_set_types_str(r->p, types, 1 + r->ncols))
		goto out_free;
	r->p->period_type = r->p->types[1];
	r->p->period = (int64_t)o->period_ns;
	r->p->default_type = r->p->types[1].type;
	r->s_pid = kiln_prof_interns(r->p, "pid");
	r->s_thread = kiln_prof_interns(r->p, "thread");
	r->s_thread_name = kiln_prof_interns(r->p, "thread_name");
	r->s_comm = kiln_prof_interns(r->p, "comm");
	/* The time label's key and unit, for the pprof writer's time
	 * labels (docs/formats.md, "Sample times"). */
	kiln_prof_interns(r->p, "time");
	kiln_prof_interns(r->p, "nanoseconds");
	r->s_state = kiln_prof_interns(r->p, "state");
	if (kiln_prof_error(r->p))
		goto out_free;
	return r;
out_free:
	kiln_rec_free(r);
	errno = ENOMEM;
	return NULL;
}

void kiln_rec_proc_release(struct proc *pr)
{
	free(pr->maps);
	kiln_sym_free(pr->sym);
	kiln_unwind_free(pr->uw);
	pr->maps = NULL;
	pr->nmaps = pr->maps_alloc = 0;
	pr->sym = NULL;
	pr->uw = NULL;
}

void kiln_rec_free(struct kiln_rec *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nprocs; i++)
		kiln_rec_proc_release(&r->procs[i]);
	free(r->procs);
	for (i = 0; i < r->ndsos; i++) {
		kiln_sym_free(r->dsos[i].sym);
		free(r->dsos[i].parts);
	}
	free(r->dsos);
	kiln_htab_release(&r->dso_index);
	free(r->threads);
	free(r->addrs);
	free(r->locs);
	free(r->last_locs);
	free(r->ubuf);
	kiln_htab_release(&r->proc_index);
	kiln_htab_release(&r->thread_index);
	kiln_htab_release(&r->addr_index);
	kiln_kallsyms_free(r->ksyms);
	if (r->stacks) {
		for (i = 0; i < STACK_CACHE; i++) {
			free(r->stacks[i].ips);
			free(r->stacks[i].locs);
		}
		free(r->stacks);
	}
	kiln_prof_free(r->p);
	free(r->values);
	if (r->vdso_ok)
		unlink(r->vdso_path);
	free(r);
}

uint64_t kiln_rec_samples(const struct kiln_rec *r)
{
	return r->nsamples;
}

uint64_t kiln_rec_self_samples(const struct kiln_rec *r)
{
	return r->nself;
}

struct kiln_prof *kiln_rec_detach(struct kiln_rec *r)
{
	struct kiln_prof *p = r->p;
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		kiln_rec_name_misses(r, &r->procs[i]);
	if (r->err || kiln_prof_error(p)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Mappings tell readers truthfully what their locations carry. */
	for (i = 1; i <= p->nlocations; i++) {
		const struct kiln_location *l = &p->locations[i];
		struct kiln_mapping *m;

		if (!l->mapping || !l->nlines)
			continue;
		m = &p->mappings[l->mapping];
		m->has_functions = true;
		if (p->lines[l->line0].line) {
			m->has_filenames = true;
			m->has_line_numbers = true;
		}
		if (l->nlines > 1)
			m->has_inline_frames = true;
	}
	r->p = NULL;
	return p;
}

/* ---- samples (their stacks: stacks.c) ---- */

/*
 * kiln_prof_add_sample(), through the memo of the stack cache entry that
 * gave locs when there is one (cur: r->cur_stack, taken by the caller):
 * the same locations (the entry's, still in r->locs) and the same label
 * set are the same profile sample.  The profile's sample it went to, or
 * -1.
 */
static long add_sample(struct kiln_rec *r, struct stack_ent *cur,
		       const uint32_t *locs, uint32_t n, const int64_t *values,
		       uint32_t lset, int64_t bucket)
{
	long idx;

	if (cur && (locs != r->locs || n != cur->nlocs))
		cur = NULL;
	if (cur && cur->memo && cur->memo_lset == lset) {
		kiln_prof_add_to_sample(r->p, cur->memo_sample, values);
		kiln_prof_add_event(r->p, cur->memo_sample, bucket, values);
		return (long)cur->memo_sample;
	}
	idx = kiln_prof_add_timed(r->p, locs, n, values, lset, bucket);
	if (cur && idx >= 0) {
		cur->memo = true;
		cur->memo_lset = lset;
		cur->memo_sample = (size_t)idx;
	}
	return idx;
}

/* kiln_rec_add() of a value in column col, weighing nsamp samples; the
 * profile's sample it went to, or -1. */
static long add_col(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		    uint64_t time, const uint32_t *locs, uint32_t n,
		    uint32_t col, int64_t nsamp, int64_t value, const char *state)
{
	struct stack_ent *cur = r->cur_stack;
	struct thread *t, *leader;
	struct kiln_label labels[6];
	uint32_t nl = 0, lset;
	int64_t *values = r->values, bucket;
	long idx;

	if (col >= r->ncols)
		col = 0;
	values[0] = nsamp;
	values[1 + col] = value;

	r->cur_stack = NULL;
	if (!r->o.start_ns)
		r->o.start_ns = time;
	bucket = (int64_t)((time > r->o.start_ns ? time - r->o.start_ns : 0) /
			   KILN_PROF_TIME_BUCKET_NS * KILN_PROF_TIME_BUCKET_NS);
	/* Samples come in runs of one thread: the labels of the last
	 * sample, unless a record changed names since. */
	if (!state && r->last_labels.valid && r->last_labels.pid == pid &&
	    r->last_labels.tid == tid && r->last_labels.epoch == r->epoch) {
		idx = add_sample(r, cur, locs, n, values, r->last_labels.lset,
				 bucket);
		values[1 + col] = 0;
		return idx;
	}
	t = kiln_rec_find_thread(r, tid, pid, true);
	leader = kiln_rec_find_thread(r, pid, pid, false);
	labels[nl++] = (struct kiln_label){ r->s_pid, 0, pid, 0 };
	/* The process's name: its main thread's, else this thread's. */
	if (leader && leader->comm)
		labels[nl++] = (struct kiln_label){ r->s_comm, leader->comm, 0, 0 };
	else if (t && t->comm)
		labels[nl++] = (struct kiln_label){ r->s_comm, t->comm, 0, 0 };
	labels[nl++] = (struct kiln_label){ r->s_thread, 0, tid, 0 };
	if (t && t->comm)
		labels[nl++] = (struct kiln_label){ r->s_thread_name, t->comm, 0, 0 };
	/* The time (since the recording's start, in buckets) goes to the
	 * time column (profile.h), not the labels. */
	if (state)
		labels[nl++] = (struct kiln_label){
			r->s_state, kiln_prof_interns(r->p, state), 0, 0 };
	lset = kiln_prof_labelset(r->p, labels, nl);
	r->last_labels.valid = !state && lset && t;
	r->last_labels.pid = pid;
	r->last_labels.tid = tid;
	r->last_labels.epoch = r->epoch;
	r->last_labels.lset = lset;
	idx = add_sample(r, cur, locs, n, values, lset, bucket);
	values[1 + col] = 0;
	return idx;
}

void kiln_rec_add(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		  uint64_t time, const uint32_t *locs, uint32_t n,
		  int64_t value, const char *state)
{
	add_col(r, pid, tid, time, locs, n, 0, 1, value, state);
}

/*
 * o.carry_lost: the value of sample s (v) with the events of the records
 * lost just before it (a LOST record precedes the first record the kernel
 * wrote after the loss); s kept as the last sample.
 */
static int64_t carry(struct kiln_rec *r, const struct kiln_perf_sample *s,
		     uint32_t col, const uint32_t *locs, uint32_t n, int64_t v)
{
	v += (int64_t)r->lost_pending * (v > 0 ? v : 1);
	r->carried += r->lost_pending;
	r->lost_pending = 0;
	r->event_total += (uint64_t)v;
	r->last.valid = GROW(r->last_locs, r->last_locs_alloc, n);
	if (r->last.valid) {
		memcpy(r->last_locs, locs, n * sizeof(*locs));
		r->last.pid = s->pid;
		r->last.tid = s->tid;
		r->last.col = col;
		r->last.n = n;
		r->last.time = s->time;
	}
	return v;
}

int kiln_rec_carry(struct kiln_rec *r, uint64_t n)
{
	if (!n)
		return 0;
	if (!r->last.valid)
		return -ENOENT;
	r->cur_stack = NULL;
	add_col(r, r->last.pid, r->last.tid, r->last.time, r->last_locs,
		r->last.n, r->last.col, 0, (int64_t)n, NULL);
	r->carried += n;
	r->event_total += n;
	return 0;
}

uint64_t kiln_rec_event_total(const struct kiln_rec *r)
{
	return r->event_total;
}

uint64_t kiln_rec_carried(const struct kiln_rec *r)
{
	return r->carried;
}

/*
 * o.carry_lost: a LOST record's n events happened between the sample
 * before it and the sample after it: half go to the one's stack now, the
 * rest to the other's (carry()).  Within a phase of the program both
 * are the same stack; where the phase changed during the loss, nothing
 * tells where, and the halves are the estimate.
 */
static void carry_run(struct kiln_rec *r, uint64_t n)
{
	uint64_t half = r->last.valid ? n / 2 : 0;

	if (half && !kiln_rec_carry(r, half))
		n -= half;
	r->lost_pending += n;
}

static void on_sample(struct kiln_rec *r, const struct kiln_perf_sample *s)
{
	const uint32_t *locs;
	long n = kiln_rec_stack(r, s, &locs);
	uint32_t col = s->column < r->ncols ? s->column : 0;
	struct thread *t;
	int64_t v;
	long idx;

	if (n <= 0)
		return;
	v = r->col_ns[col] || s->period ? (int64_t)s->period : 1;
	if (r->o.carry_lost)
		v = carry(r, s, col, locs, (uint32_t)n, v);
	idx = add_col(r, s->pid, s->tid, s->time, locs, (uint32_t)n, col, 1, v,
		      r->o.wall ? "running" : NULL);
	/* What the thread's exit count is weighed against (kiln_rec_on_read). */
	if (col == 0 && (t = kiln_rec_find_thread(r, s->tid, s->pid, false))) {
		t->sampled += (uint64_t)v;
		if (idx >= 0)
			t->last_sample = (size_t)idx + 1;
	}
}

/*
 * An inherited task's count at its exit (a READ record from each CPU's
 * event, attr.inherit_stat; capture/perf.c): what its samples did not
 * cover -- a task that ran less than a period has none, one that ran
 * longer loses part of its last -- goes to the sample its last sample
 * went to, or, with none, to a one-frame stack named by the program
 * ("[as]"), so that every process's share is its CPU's.  Added as it
 * comes (the records of one task's CPUs follow each other).
 */
static void on_read(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct thread *t = kiln_rec_find_thread(r, ev->read.tid, ev->read.pid, false);
	struct kiln_line line = { 0 };
	char name[64];
	uint64_t rest;
	uint32_t loc;

	if (!t)
		return;
	t->read += ev->read.value;
	if (t->read <= t->sampled + t->unsampled)
		return;
	rest = t->read - t->sampled - t->unsampled;
	t->unsampled += rest;
	if (t->last_sample) {
		int64_t *values = r->values;
		int64_t bucket = (int64_t)((ev->time > r->o.start_ns ?
					    ev->time - r->o.start_ns : 0) /
					   KILN_PROF_TIME_BUCKET_NS *
					   KILN_PROF_TIME_BUCKET_NS);

		values[0] = 0;
		values[1] = (int64_t)rest;
		kiln_prof_add_to_sample(r->p, t->last_sample - 1, values);
		kiln_prof_add_event(r->p, t->last_sample - 1, bucket, values);
		values[1] = 0;
		return;
	}
	snprintf(name, sizeof(name), "[%s]", t->comm ?
		 kiln_prof_str(r->p, t->comm) : "unknown");
	line.function = kiln_prof_function(r->p, kiln_prof_interns(r->p, name),
					   kiln_prof_interns(r->p, name), 0, 0);
	loc = kiln_prof_location(r->p, 0, 0, &line, 1);
	r->cur_stack = NULL;
	add_col(r, ev->read.pid, ev->read.tid, ev->time, &loc, 1, 0, 0,
		(int64_t)rest, NULL);
}

void kiln_rec_event(void *ctx, const struct kiln_perf_event *ev)
{
	struct kiln_rec *r = ctx;

	if (ev->kind != KILN_PERF_SAMPLE)
		r->epoch++;
	switch (ev->kind) {
	case KILN_PERF_SAMPLE: on_sample(r, &ev->sample); break;
	case KILN_PERF_MMAP: kiln_rec_on_mmap(r, ev); break;
	case KILN_PERF_COMM: kiln_rec_on_comm(r, ev); break;
	case KILN_PERF_FORK: kiln_rec_on_fork(r, ev); break;
	case KILN_PERF_EXIT: kiln_rec_on_exit(r, ev); break;
	case KILN_PERF_LOST:
		if (r->o.carry_lost)
			carry_run(r, ev->lost.lost);
		break;
	case KILN_PERF_SWITCH: break;
	case KILN_PERF_READ: on_read(r, ev); break;
	}
}

static long sink_stack(void *ctx, const struct kiln_perf_sample *s,
		       const uint32_t **locs)
{
	return kiln_rec_stack(ctx, s, locs);
}

static void sink_add(void *ctx, uint32_t pid, uint32_t tid, uint64_t time,
		     const uint32_t *locs, uint32_t n, int64_t value,
		     const char *state)
{
	kiln_rec_add(ctx, pid, tid, time, locs, n, value, state);
}

void kiln_rec_sink(struct kiln_rec *r, struct kiln_offcpu_sink *sink)
{
	sink->ctx = r;
	sink->stack = sink_stack;
	sink->add = sink_add;
	sink->event = kiln_rec_event;
}
