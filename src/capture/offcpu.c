/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU and wall time from context switches (capture stage).  See
 * offcpu.h.
 */
#include "capture/offcpu.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/htab.h"
#include "util/buf.h"

/* A thread that left the CPU and has not come back yet. */
struct pending {
	uint32_t tid, pid;
	bool open;
	uint64_t t_out;
	const char *state;
	uint32_t *locs;		/* the stack at which it left */
	uint32_t n, alloc;
	/* --wall: CPU time run since the thread's last cpu-clock sample. */
	bool on;		/* on a CPU since run_start */
	bool seen_in;		/* a switch-in was seen: run times are known */
	uint64_t run_start, ran;
};

struct kiln_offcpu {
	struct kiln_offcpu_sink rec;
	uint16_t tp_type;		/* common_type of sched_switch records */
	uint32_t state_off, state_size;	/* prev_state in the raw record */
	struct pending *v;
	size_t n, alloc;
	struct kiln_htab index;		/* tid -> v[id - 1] */
	uint64_t intervals;
	bool wall;
};

const char *kiln_offcpu_state(int64_t prev_state)
{
	/* Bits as sched_switch prints them: S D T t X Z P I; none of them
	 * (R, or R+ with the preempted bit 0x100 above them): runnable. */
	if (!(prev_state & 0xff))
		return "runnable";
	if (prev_state & 0x2)
		return "blocked-io";
	if (prev_state & 0x1)
		return "sleeping";
	return "other";
}

/* Parses "offset:N;" and "size:N;" of the field line holding name. */
static int field_of(const char *path, const char *name, uint32_t *off,
		    uint32_t *size)
{
	FILE *f = fopen(path, "r");
	char line[512], want[64];
	int err = -ENOENT;

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), " %s;", name);
	while (fgets(line, sizeof(line), f)) {
		const char *o, *z;

		if (!strstr(line, "field:") || !strstr(line, want))
			continue;
		o = strstr(line, "offset:");
		z = strstr(line, "size:");
		if (o && z && sscanf(o, "offset:%u;", off) == 1 &&
		    sscanf(z, "size:%u;", size) == 1 &&
		    (*size == 4 || *size == 8))
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

struct kiln_offcpu *kiln_offcpu_new_layout(const struct kiln_offcpu_sink *rec,
					   uint16_t tp_type, uint32_t state_off,
					   uint32_t state_size, bool wall)
{
	struct kiln_offcpu *o;

	if (state_size != 4 && state_size != 8) {
		errno = EINVAL;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->rec = *rec;
	o->wall = wall;
	o->tp_type = tp_type;
	o->state_off = state_off;
	o->state_size = state_size;
	return o;
}

struct kiln_offcpu *kiln_offcpu_new(const struct kiln_offcpu_sink *rec,
				    uint64_t tp_id, bool wall)
{
	static const char *const roots[] = { "/sys/kernel/tracing/events",
					     "/sys/kernel/debug/tracing/events" };
	char path[128];
	uint32_t off = 0, size = 0;
	size_t i;
	int err = -ENOENT;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]) && err; i++) {
		snprintf(path, sizeof(path), "%s/sched/sched_switch/format",
			 roots[i]);
		err = field_of(path, "prev_state", &off, &size);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return kiln_offcpu_new_layout(rec, (uint16_t)tp_id, off, size, wall);
}

void kiln_offcpu_free(struct kiln_offcpu *o)
{
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->n; i++)
		free(o->v[i].locs);
	free(o->v);
	kiln_htab_release(&o->index);
	free(o);
}

uint64_t kiln_offcpu_intervals(const struct kiln_offcpu *o)
{
	return o->intervals;
}

static bool tid_eq(const void *ctx, uint32_t id)
{
	const struct kiln_offcpu *o = ((const void **)ctx)[0];
	uint32_t tid = *(const uint32_t *)((const void **)ctx)[1];

	return o->v[id - 1].tid == tid;
}

static struct pending *find(struct kiln_offcpu *o, uint32_t tid, bool create)
{
	const void *ctx[2] = { o, &tid };
	uint32_t hash = (uint32_t)kiln_hash(&tid, sizeof(tid));
	uint32_t id = kiln_htab_find(&o->index, hash, tid_eq, ctx);
	struct pending *p;

	if (id)
		return &o->v[id - 1];
	if (!create)
		return NULL;
	if (KILN_GROW(o->v, o->alloc, o->n + 1, 16))
		return NULL;
	if (kiln_htab_insert(&o->index, hash, (uint32_t)o->n + 1))
		return NULL;
	p = &o->v[o->n++];
	memset(p, 0, sizeof(*p));
	p->tid = tid;
	return p;
}

/* A thread leaves the CPU: remember where and why. */
static void switch_out(struct kiln_offcpu *o, const struct kiln_perf_sample *s)
{
	const uint32_t *locs;
	struct pending *p;
	int64_t state = 0;
	long n;

	if (o->state_size == 8) {
		memcpy(&state, s->raw + o->state_off, 8);
	} else {
		int32_t v;

		memcpy(&v, s->raw + o->state_off, 4);
		state = v;
	}
	/* A dying thread's last switch (X, Z): it never comes back. */
	if (state & 0x30)
		return;
	n = o->rec.stack(o->rec.ctx, s, &locs);
	p = find(o, s->tid, true);
	if (!p)
		return;
	p->open = false;
	if (n <= 0)
		return;
	if ((uint32_t)n > p->alloc) {
		uint32_t *l = realloc(p->locs, (size_t)n * sizeof(*l));

		if (!l)
			return;
		p->locs = l;
		p->alloc = (uint32_t)n;
	}
	memcpy(p->locs, locs, (size_t)n * sizeof(*locs));
	p->n = (uint32_t)n;
	p->pid = s->pid;
	p->t_out = s->time;
	p->state = kiln_offcpu_state(state);
	p->open = true;
}

/*
 * --wall, a cpu-clock sample: it weighs the CPU time the thread ran since
 * its previous sample, measured from the switch records, so that the
 * on-CPU values of a thread add up to its CPU time exactly (the timer's
 * own period under-counts a thread that is preempted often: 455 ms for
 * 504 ms of CPU on a loaded machine).  Before the thread's first switch-in
 * is seen (a command's first run after exec) the period stands.
 */
static void on_cpu_sample(struct kiln_offcpu *o,
			  const struct kiln_perf_sample *s)
{
	struct pending *p = find(o, s->tid, true);
	int64_t value = (int64_t)s->period;
	const uint32_t *locs;
	long n;

	if (p && p->seen_in && p->on && s->time >= p->run_start) {
		value = (int64_t)(p->ran + s->time - p->run_start);
		p->ran = 0;
		p->run_start = s->time;
	}
	n = o->rec.stack(o->rec.ctx, s, &locs);
	if (n > 0)
		o->rec.add(o->rec.ctx, s->pid, s->tid, s->time, locs, (uint32_t)n,
			     value, "running");
}

static void close_interval(struct kiln_offcpu *o, struct pending *p,
			   uint64_t t_in)
{
	p->open = false;
	if (t_in <= p->t_out)
		return;
	o->rec.add(o->rec.ctx, p->pid, p->tid, p->t_out, p->locs, p->n,
		     (int64_t)(t_in - p->t_out), p->state);
	o->intervals++;
}

void kiln_offcpu_event(void *ctx, const struct kiln_perf_event *ev)
{
	struct kiln_offcpu *o = ctx;
	struct pending *p;
	uint16_t type;

	switch (ev->kind) {
	case KILN_PERF_SAMPLE:
		if (ev->sample.raw_size >= o->state_off + o->state_size) {
			memcpy(&type, ev->sample.raw, 2);
			if (type == o->tp_type) {
				switch_out(o, &ev->sample);
				return;
			}
		}
		if (o->wall) {
			on_cpu_sample(o, &ev->sample);
			return;
		}
		break;
	case KILN_PERF_SWITCH:
		p = find(o, ev->sw.tid, !ev->sw.out);
		if (!p)
			return;
		if (!ev->sw.out) {
			if (p->open)
				close_interval(o, p, ev->time);
			p->on = p->seen_in = true;
			p->run_start = ev->time;
		} else if (p->on) {
			if (ev->time > p->run_start)
				p->ran += ev->time - p->run_start;
			p->on = false;
		}
		return;
	case KILN_PERF_EXIT:
		p = find(o, ev->task.tid, false);
		if (p)
			p->open = false;
		break;
	default:
		break;
	}
	o->rec.event(o->rec.ctx, ev);
}

void kiln_offcpu_finish(struct kiln_offcpu *o, uint64_t now)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->v[i].open)
			close_interval(o, &o->v[i], now);
}
