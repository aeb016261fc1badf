/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` text, the writer (format stage): a profile printed as
 * perf script prints samples, one record per sample with its frames, for
 * the Firefox Profiler (which counts records), FlameGraph, inferno and
 * kiln's own reader (perfscript.c, which says what the text looks like).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"

static inline bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}


/* Writes a name with the characters that would break the line format
 * (line breaks) replaced. */
static int add_clean(struct kiln_buf *out, const char *s)
{
	size_t n = strcspn(s, "\r\n");
	int err = kiln_buf_add(out, s, n);

	while (!err && s[n]) {
		s += n + 1;
		err = kiln_buf_addc(out, ' ');
		n = strcspn(s, "\r\n");
		if (!err)
			err = kiln_buf_add(out, s, n);
	}
	return err;
}

/*
 * The address to print for a frame.  A location without lines is named
 * "dso+0xOFFSET" after its file offset; perf script mappings have no
 * range, so print that offset for the name to survive a round trip.
 */
static uint64_t frame_address(const struct kiln_prof *p,
			      const struct kiln_location *l)
{
	const struct kiln_mapping *m = &p->mappings[l->mapping];

	if (!l->nlines && l->mapping && m->limit > m->start &&
	    l->address >= m->start)
		return l->address - m->start + m->offset;
	return l->address;
}

uint64_t kiln_perfscript_max_lines = KILN_PERFSCRIPT_MAX_LINES;

struct wrec {
	int64_t time;		/* ns, -1: none (synthetic) */
	size_t sample;
	size_t ord;		/* its place: the events, then the samples */
	const int64_t *v;	/* its values: the event's or the sample's */
	uint64_t n;		/* records */
};

static int cmp_wrec(const void *a, const void *b)
{
	const struct wrec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/*
 * How many records values vs (a sample's or an event's) stand for: the
 * samples/count value where the profile has one, else the value in
 * periods of the chosen type, else 1.
 */
static uint64_t sample_records(const struct kiln_prof *p, const int64_t *vs,
			       int type, int count_type, int64_t v)
{
	int64_t c;

	if (count_type >= 0) {
		c = vs[count_type];
		return c > 0 ? (uint64_t)c : 1;
	}
	if (p->period > 0 && p->period_type.type == p->types[type].type &&
	    p->period_type.unit == p->types[type].unit) {
		c = (v + p->period / 2) / p->period;
		return c > 0 ? (uint64_t)c : 1;
	}
	return 1;
}

/*
 * The records to write, in *recs: the time column's events, then the
 * samples without any, each with its record count; *lines: the lines
 * they take.  0 or -ENOMEM.
 */
static int collect(const struct kiln_prof *p, int type, int count_type,
		   struct wrec **out, size_t *nout, uint64_t *nlines)
{
	struct wrec *recs;
	uint8_t *timed;
	uint64_t lines = 0;
	size_t i, nrecs = 0;

	recs = calloc(p->nevents + p->nsamples + 1, sizeof(*recs));
	timed = calloc(p->nsamples + 1, 1);
	if (!recs || !timed) {
		free(recs);
		free(timed);
		return -ENOMEM;
	}
	/* The time column's events, then the samples without any. */
	for (i = 0; i < p->nevents + p->nsamples; i++) {
		bool ev = i < p->nevents;
		size_t si = ev ? p->events[i].sample : i - p->nevents;
		const int64_t *vs = ev ? kiln_prof_event_values(p, i) :
			p->values + si * p->ntypes;
		int64_t v = vs[type];

		if (ev)
			timed[si] = 1;
		if (v <= 0 || (!ev && timed[si]))
			continue;
		recs[nrecs].time = ev && p->events[i].time >= 0 ?
			p->events[i].time : -1;
		recs[nrecs].sample = si;
		recs[nrecs].ord = nrecs;
		recs[nrecs].v = vs;
		recs[nrecs].n = sample_records(p, vs, type, count_type, v);
		{
			unsigned __int128 l = (unsigned __int128)recs[nrecs].n *
					      (p->samples[si].depth + 2u);

			lines = l > UINT64_MAX - lines ? UINT64_MAX : lines + (uint64_t)l;
		}
		nrecs++;
	}
	free(timed);
	*out = recs;
	*nout = nrecs;
	*nlines = lines;
	return 0;
}

int kiln_perfscript_write(struct kiln_prof *p, int type, struct kiln_buf *out)
{
	struct kiln_frame *frames = NULL;
	struct wrec *recs = NULL;
	struct kiln_buf stack = KILN_BUF_INIT;
	size_t cap = 0, i, nrecs = 0;
	char event[128];
	const char *tname, *unit;
	bool ns;
	uint32_t k_pid, k_tid, k_comm;
	int count_type = -1;
	uint64_t lines = 0, t_ns = 1000000000;	/* synthetic: from 1.000000 s */
	int64_t base;
	int err = 0;

	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	tname = kiln_prof_str(p, p->types[type].type);
	unit = kiln_prof_str(p, p->types[type].unit);
	ns = !strcmp(unit, "nanoseconds");
	/* The event names the value: kiln reads "cpu-clock" back as
	 * cpu/nanoseconds, "samples" as samples/count, others as NAME/count. */
	if (ns && (!strcmp(tname, "cpu") || !*tname))
		snprintf(event, sizeof(event), "cpu-clock");
	else
		snprintf(event, sizeof(event), "%s", *tname ? tname : "samples");
	for (i = 0; event[i]; i++)
		if (is_ws(event[i]) || event[i] == '\n' || event[i] == '\r')
			event[i] = '_';
	k_pid = kiln_prof_find_str(p, "pid", 3);
	k_tid = kiln_prof_find_str(p, "thread", 6);
	k_comm = kiln_prof_find_str(p, "thread_name", 11);
	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(kiln_prof_str(p, p->types[i].type), "samples") &&
		    !strcmp(kiln_prof_str(p, p->types[i].unit), "count"))
			count_type = (int)i;
	/*
	 * One record per original sample: viewers such as the Firefox
	 * Profiler count records and ignore the period.  Records go in time
	 * order where the profile has times (its time column).
	 */
	err = collect(p, type, count_type, &recs, &nrecs, &lines);
	if (err)
		return err;
	if (lines > kiln_perfscript_max_lines)
		for (i = 0; i < nrecs; i++) {
			uint64_t n = (uint64_t)((unsigned __int128)recs[i].n *
						kiln_perfscript_max_lines / lines);

			recs[i].n = n ? n : 1;
		}
	if (nrecs)
		qsort(recs, nrecs, sizeof(*recs), cmp_wrec);
	/* Since 1970 where the recording's start is known, as kiln reads it
	 * back; else from 1 s. */
	base = p->time_nanos > 0 ? p->time_nanos : 1000000000;
	for (i = 0; i < nrecs && !err; i++) {
		const struct kiln_sample *s = &p->samples[recs[i].sample];
		int64_t v = recs[i].v[type];
		const struct kiln_label *pid, *tid, *comm;
		uint64_t k, n = recs[i].n;
		long nf, j;

		pid = kiln_prof_label(p, s->labels, k_pid);
		tid = kiln_prof_label(p, s->labels, k_tid);
		comm = kiln_prof_label(p, s->labels, k_comm);
		nf = kiln_prof_frames(p, s, &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		/* The frames once; every record of the sample repeats them. */
		kiln_buf_reset(&stack);
		for (j = 0; j < nf && !err; j++) {
			const struct kiln_frame *f = &frames[j];
			const struct kiln_location *l = &p->locations[f->location];
			const char *dso = l->mapping && p->mappings[l->mapping].file ?
				kiln_prof_str(p, p->mappings[l->mapping].file) :
				"[unknown]";

			err = kiln_buf_addf(&stack, "\t%16" PRIx64 " ",
					    frame_address(p, l));
			if (!err)
				err = add_clean(&stack, f->function ?
						kiln_prof_str(p, f->name) : "[unknown]");
			if (!err)
				err = kiln_buf_adds(&stack, " (");
			if (!err)
				err = add_clean(&stack, dso);
			if (!err)
				err = kiln_buf_adds(&stack, ")\n");
		}
		if (!err)
			err = kiln_buf_addc(&stack, '\n');
		for (k = 0; k < n && !err; k++) {
			/* The value split evenly, the remainder on the first. */
			int64_t pv = v / (int64_t)n + (k < (uint64_t)v % n ? 1 : 0);
			uint64_t t;

			if (recs[i].time >= 0)	/* spread over the time bucket */
				t = (uint64_t)(base + recs[i].time) +
				    k * (uint64_t)KILN_PROF_TIME_BUCKET_NS / n;
			else
				t = t_ns;
			/* Synthetic time runs with the value for time types,
			 * else 1 ms a record. */
			t_ns += ns && pv > 0 ? (uint64_t)pv : 1000000;
			err = add_clean(out, comm && comm->str ?
					kiln_prof_str(p, comm->str) : "kiln");
			if (err)
				break;
			if (pid)
				err = kiln_buf_addf(out, " %" PRId64 "/%" PRId64,
						    pid->num, tid ? tid->num : pid->num);
			else
				err = kiln_buf_addf(out, " %" PRId64,
						    tid ? tid->num : 0);
			if (!err)
				err = kiln_buf_addf(out, " %" PRIu64 ".%06" PRIu64 ": %"
						    PRId64 " %s: \n", t / 1000000000,
						    t % 1000000000 / 1000, pv, event);
			if (!err)
				err = kiln_buf_add(out, stack.data, stack.len);
		}
	}
	kiln_buf_release(&stack);
	free(recs);
	free(frames);
	return err ? err : p->err;
}
