/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` text read by several threads (format stage): a large
 * input is cut into chunks at blank lines (the end of a -g sample, where
 * the serial reader keeps no state), each chunk's two passes
 * (perfscript.c) run on a thread of their own, and the chunks' models are
 * merged in chunk order into the one the serial reader would have built:
 * the same strings, mappings, functions, locations, label sets and
 * samples with the same ids, the same time column, the same warnings
 * with the same line numbers.  docs/design.md ("Reading text in
 * parallel").
 *
 * The first pass of each chunk finds its events, first time stamp and
 * line count; merged in chunk order they give the sample types and every
 * chunk's first line number.  In the second pass chunk 0 is read into
 * the profile itself and every other chunk into a profile of its own
 * with the same types; merging one replays its samples in their order
 * (each new one's locations, leaf first, then its label set) and then
 * its time column, which interns every table's new entries in the order
 * of their first use in the chunk, as the serial reader does.
 *
 * One thing breaks that equivalence: a frame's location taken from the
 * srcline printed after the frame text's first occurrence (perf script
 * -F +srcline), since a chunk's first occurrence need not be the
 * input's.  When a chunk saw one, the chunks after the first are read
 * again serially, on from the first chunk's reader.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/perfscriptint.h"
#include "profile/profile.h"
#include "util/workers.h"

/* Inputs below two chunks' worth are read serially: threads and
 * merging would cost more than they save. */
#define CHUNK_MIN ((size_t)8 << 20)
/* The most chunks (and threads) an input is cut into. */
#define CHUNKS_MAX 16
/* How far past its share a chunk looks for a blank line to end at (an
 * input without -g has none). */
#define SEEK_MAX ((size_t)1 << 20)

struct chunk {
	struct reader r;
	struct kiln_prof *p;	/* NULL for chunk 0: the caller's profile */
	struct kiln_diag d;
	bool scan;
	bool nul;		/* the first pass found a NUL byte */
	int err;
	pthread_t th;
	bool started;
};

/* The start of the line after the first blank line in [s, end), not
 * looking further than SEEK_MAX; NULL if none. */
static const char *after_blank(const char *s, const char *end)
{
	const char *lim = end - s > (ptrdiff_t)SEEK_MAX ? s + SEEK_MAX : end;
	const char *nl;

	while (s < lim && (nl = memchr(s, '\n', (size_t)(lim - s)))) {
		s = nl + 1;
		if (s < end && *s == '\n')
			return s + 1 < end ? s + 1 : NULL;
		if (end - s >= 2 && s[0] == '\r' && s[1] == '\n')
			return s + 2 < end ? s + 2 : NULL;
	}
	return NULL;
}

/* Cuts [data, data + len) into at most max chunks at blank lines: the
 * starts in b[0..n), b[n] the end.  Returns n (1: not cut).  Chunk 0 is
 * a tenth shorter than the others: its thread merges the others after
 * it (in units of a tenth of a chunk, 10 * max - 1 in all). */
static size_t cut(const char *data, size_t len, size_t max, const char **b)
{
	size_t n = 1, k, units = 10 * max - 1;

	b[0] = data;
	for (k = 1; k < max; k++) {
		const char *t = data + (size_t)((double)len * (double)(10 * k - 1) /
					       (double)units), *a;

		if (t <= b[n - 1])
			continue;
		a = after_blank(t, data + len);
		if (a && a > b[n - 1])
			b[n++] = a;
	}
	b[n] = data + len;
	return n;
}

static void *run(void *arg)
{
	struct chunk *c = arg;

	/* kiln_text_check()'s refusal of binary data, on every thread. */
	if (c->scan)
		c->nul = memchr(c->r.data, '\0', (size_t)(c->r.end - c->r.data));
	c->err = kiln_perfscript_walk(&c->r, c->scan);
	return NULL;
}

/* Runs every chunk's pass (scan or not) on threads of their own, chunk 0
 * on this one.  The first error, in chunk order (errors in d). */
static int run_all(struct chunk *c, size_t n, bool scan, struct kiln_diag *d)
{
	size_t i;
	int err = 0;

	for (i = 0; i < n; i++) {
		c[i].scan = scan;
		c[i].err = 0;
		c[i].started = false;
	}
	for (i = 1; i < n; i++) {
		if (pthread_create(&c[i].th, NULL, run, &c[i])) {
			run(&c[i]);	/* no thread: this one does it */
			continue;
		}
		c[i].started = true;
	}
	run(&c[0]);
	for (i = 1; i < n; i++)
		if (c[i].started)
			pthread_join(c[i].th, NULL);
	for (i = 0; i < n && !err; i++) {
		err = c[i].err;
		if (err && i > 0 && d)
			*d = c[i].d;
	}
	return err;
}

/* ---- merging a chunk's profile into the caller's ---- */

struct remap {
	struct kiln_prof *dst;
	const struct kiln_prof *src;
	uint32_t *str, *func, *map, *loc, *lset;
	long *sample;
};

static uint32_t rstr(struct remap *m, uint32_t id)
{
	if (!id)
		return 0;
	if (!m->str[id])
		m->str[id] = kiln_prof_intern(m->dst, kiln_prof_str(m->src, id),
					      kiln_prof_strlen(m->src, id));
	return m->str[id];
}

/* The mapping, then the function's strings, then the function, as
 * perfscript.c's make_location() interns them. */
static uint32_t rmap(struct remap *m, uint32_t id)
{
	struct kiln_mapping mp;

	if (!id || m->map[id])
		return m->map[id];
	mp = m->src->mappings[id];
	mp.file = rstr(m, mp.file);
	mp.build_id = rstr(m, mp.build_id);
	return m->map[id] = kiln_prof_mapping(m->dst, &mp);
}

static uint32_t rfunc(struct remap *m, uint32_t id)
{
	const struct kiln_function *f = &m->src->functions[id];
	uint32_t name, sys, file;

	if (!id || m->func[id])
		return m->func[id];
	name = rstr(m, f->name);
	sys = rstr(m, f->system_name);
	file = rstr(m, f->filename);
	return m->func[id] = kiln_prof_function(m->dst, name, sys, file,
						f->start_line);
}

static uint32_t rloc(struct remap *m, uint32_t id)
{
	const struct kiln_location *l = &m->src->locations[id];
	struct kiln_line ln[8];
	uint32_t map, i;

	if (m->loc[id])
		return m->loc[id];
	/* perf script's locations have one line or none. */
	if (l->nlines > 8) {
		m->dst->err = -EINVAL;
		return 0;
	}
	map = rmap(m, l->mapping);
	for (i = 0; i < l->nlines; i++) {
		ln[i].function = rfunc(m, m->src->lines[l->line0 + i].function);
		ln[i].line = m->src->lines[l->line0 + i].line;
	}
	return m->loc[id] = kiln_prof_location(m->dst, map, l->address, ln,
					       l->nlines);
}

static uint32_t rlset(struct remap *m, uint32_t id)
{
	const struct kiln_labelset *s = &m->src->labelsets[id];
	struct kiln_label l[8];
	uint32_t i;

	if (!id || m->lset[id])
		return m->lset[id];
	/* perf script's label sets: thread_name, pid, thread. */
	if (s->n > 8) {
		m->dst->err = -EINVAL;
		return 0;
	}
	for (i = 0; i < s->n; i++) {
		const struct kiln_label *a = &m->src->labels[s->first + i];

		l[i].key = rstr(m, a->key);
		l[i].str = rstr(m, a->str);
		l[i].num = a->num;
		l[i].unit = rstr(m, a->unit);
	}
	return m->lset[id] = kiln_prof_labelset(m->dst, l, s->n);
}

/* Adds chunk profile src to dst as if its lines came after dst's. */
static int merge(struct kiln_prof *dst, const struct kiln_prof *src)
{
	struct remap m = { dst, src, NULL, NULL, NULL, NULL, NULL, NULL };
	uint32_t *locs = NULL;
	size_t i, j, cap = 0;
	int err;

	m.str = calloc(src->nstrs + 1, sizeof(*m.str));
	m.func = calloc(src->nfunctions + 1, sizeof(*m.func));
	m.map = calloc(src->nmappings + 1, sizeof(*m.map));
	m.loc = calloc(src->nlocations + 1, sizeof(*m.loc));
	m.lset = calloc(src->nlabelsets + 1, sizeof(*m.lset));
	m.sample = malloc((src->nsamples + 1) * sizeof(*m.sample));
	if (!m.str || !m.func || !m.map || !m.loc || !m.lset || !m.sample) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < src->nsamples && !dst->err; i++) {
		const struct kiln_sample *s = &src->samples[i];
		const uint32_t *sl = kiln_prof_sample_locs(src, s);
		uint32_t lset;

		if (s->depth > cap) {
			uint32_t *n = realloc(locs, s->depth * 2 * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				goto out;
			}
			locs = n;
			cap = s->depth * 2;
		}
		for (j = 0; j < s->depth; j++)
			locs[j] = rloc(&m, sl[j]);
		lset = rlset(&m, s->labels);
		m.sample[i] = kiln_prof_add_sample(dst, locs, s->depth,
						   src->values + i * src->ntypes,
						   lset);
	}
	/* The time column in its order, each event on its sample's new
	 * index: kiln_prof_add_event() joins one to the sample's latest
	 * event of the same bucket as the serial reader's additions did. */
	for (i = 0; i < src->nevents && !dst->err; i++)
		kiln_prof_add_event(dst, (size_t)m.sample[src->events[i].sample],
				    src->events[i].time,
				    kiln_prof_event_values(src, i));
	err = dst->err;
out:
	free(locs);
	free(m.str);
	free(m.func);
	free(m.map);
	free(m.loc);
	free(m.lset);
	free(m.sample);
	return err;
}

/* ---- the two passes ---- */

/* Merges the chunks' first passes into c[0]'s reader: the events in
 * order of first appearance, the first time stamp; numbers each chunk's
 * lines on from the one before. */
static int merge_scans(struct chunk *c, size_t n)
{
	struct reader *r = &c[0].r;
	size_t i, k;
	int err;

	for (i = 1; i < n; i++) {
		struct reader *o = &c[i].r;

		/* The first pass counted each chunk's lines from 0; a
		 * chunk's last line, empty after its final newline, is the
		 * next chunk's first. */
		o->line0 = c[i - 1].r.line0 + c[i - 1].r.lineno - 1;
		if (o->t_min < r->t_min)
			r->t_min = o->t_min;
		for (k = 0; k < o->ev.n; k++) {
			struct hdr h;

			memset(&h, 0, sizeof(h));
			h.event = o->ev.v[k].name;
			h.event_len = o->ev.v[k].len;
			h.has_period = o->ev.v[k].has_period;
			err = kiln_perfscript_event_add(&r->ev, &h);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Gives chunk c (not 0) a profile with r0's sample types and its
 * reader the second pass's state. */
static int chunk_begin(struct chunk *c, const struct reader *r0)
{
	struct reader *r = &c->r;

	c->p = kiln_prof_new();
	if (!c->p)
		return -ENOMEM;
	r->p = c->p;
	free(r->ev.v);
	r->ev.v = malloc(r0->ev.n * sizeof(*r->ev.v));
	if (!r->ev.v)
		return -ENOMEM;
	memcpy(r->ev.v, r0->ev.v, r0->ev.n * sizeof(*r->ev.v));
	r->ev.n = r->ev.alloc = r0->ev.n;
	r->ev.last = 0;
	/* Times since the whole input's first one. */
	r->t_min = r0->t_min;
	return kiln_perfscript_begin(r);
}

/* Adds chunk o's counts to r: skipped lines, lines taken, samples, the
 * last time, the period. */
static void add_counts(struct reader *r, const struct reader *o)
{
	if (o->skips.n && !r->skips.n) {
		r->skips.first = o->skips.first;
		r->skips.why = o->skips.why;
	}
	r->skips.n += o->skips.n;
	r->good += o->good;
	r->nsamples += o->nsamples;
	r->lineno = o->lineno;
	if (o->t_max > r->t_max)
		r->t_max = o->t_max;
	if (!r->have_period && o->have_period) {
		r->p->period = o->p->period;
		r->have_period = true;
	}
}

int kiln_perfscript_read_par(struct kiln_prof *p, const char *data,
			     size_t len, struct kiln_diag *d)
{
	const char *b[CHUNKS_MAX + 1];
	struct chunk *c;
	size_t n = kiln_workers(), i;
	bool serial = false;
	int err;

	if (n > CHUNKS_MAX)
		n = CHUNKS_MAX;
	if (n > len / CHUNK_MIN)
		n = len / CHUNK_MIN;
	if (n < 2 || (n = cut(data, len, n, b)) < 2)
		return 1;
	c = calloc(n, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		kiln_perfscript_reader_init(&c[i].r, NULL, b[i], b[i + 1],
					    i ? &c[i].d : d);
	c[0].r.p = p;
	err = run_all(c, n, true, d);
	for (i = 0; i < n && !err; i++)
		if (c[i].nul)	/* the message, with its line, as serially */
			err = kiln_text_check(data, len, d);
	if (!err)
		err = merge_scans(c, n);
	if (!err)
		err = kiln_perfscript_begin(&c[0].r);
	for (i = 1; i < n && !err; i++)
		err = chunk_begin(&c[i], &c[0].r);
	if (!err)
		err = run_all(c, n, false, d);
	for (i = 0; i < n && !err; i++)
		serial |= c[i].r.srclines;
	if (!err && serial) {
		/* Locations taken from srclines: the rest of the input read
		 * on by chunk 0's reader, its caches and all. */
		struct reader *r = &c[0].r;

		r->line0 = r->lineno - 1;
		r->data = b[1];
		r->end = b[n];
		err = kiln_perfscript_walk(r, false);
	}
	for (i = 1; i < n && !err && !serial; i++) {
		err = merge(p, c[i].p);
		add_counts(&c[0].r, &c[i].r);
	}
	if (!err)
		err = kiln_perfscript_end(&c[0].r);
	for (i = 0; i < n; i++) {
		kiln_perfscript_reader_release(&c[i].r);
		kiln_prof_free(c[i].p);
	}
	free(c);
	return err;
}
