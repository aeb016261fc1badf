/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` text read by several threads (format stage): a large
 * input is cut into chunks at blank lines (the end of a -g sample, where
 * the serial reader keeps no state), each chunk is read (perfscript.c)
 * on a thread of its own, and the chunks' models are
 * merged in chunk order into the one the serial reader would have built:
 * the same strings, mappings, functions, locations, label sets and
 * samples with the same ids, the same time column, the same warnings
 * with the same line numbers.  docs/design.md ("Reading text in
 * parallel").
 *
 * Each chunk is read once, from a guess: the events and the first time
 * stamp found by a walk of the input's first lines up to its first time
 * stamp (read_once()).  Chunk 0 and every other chunk are read into
 * profiles of their own with the types the guess gives; merging one into
 * chunk 0's replays its samples in their order (each new one's
 * locations, leaf first, then its label set) and then its time column,
 * which interns every table's new entries in the order of their first
 * use in the chunk, as the serial reader does.  A sample the guess does
 * not cover (another event, a period the guessed event lacked, a time
 * before the first) makes the input be read again in two passes
 * (read_twice()): the first of each chunk finds its events, first time
 * stamp and line count, merged in chunk order; the second reads as above
 * with them, chunk 0 into the caller's profile itself.
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
	struct kiln_prof *p;	/* NULL for chunk 0 read in two passes: the
				 * caller's profile */
	struct kiln_diag d;
	bool scan;
	bool nul;		/* a NUL byte in the chunk */
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

	/* kiln_text_check()'s refusal of binary data, on every thread, in
	 * a chunk's first pass (the single pass: its only one). */
	if (c->scan || c->r.guess)
		c->nul = memchr(c->r.data, '\0', (size_t)(c->r.end - c->r.data));
	c->err = c->nul ? 0 : kiln_perfscript_walk(&c->r, c->scan);
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

/* Inputs read in two passes since the process started. */
static unsigned long twice;

unsigned long kiln_perfscript_par_twice(void)
{
	return __atomic_load_n(&twice, __ATOMIC_RELAXED);
}

/* Frees the chunks' readers and profiles. */
static void chunks_free(struct chunk *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++) {
		kiln_perfscript_reader_release(&c[i].r);
		kiln_prof_free(c[i].p);
	}
	free(c);
}

/*
 * After the chunks' walks: the rest read on serially by chunk 0's reader
 * where a chunk took a location from a srcline (see above; its caches
 * and all), else every other chunk merged into dst (chunk 0's model) in
 * order, with its counts.  0 or a negative errno.
 */
static int finish(struct chunk *c, size_t n, const char **b,
		  struct kiln_prof *dst)
{
	struct reader *r = &c[0].r;
	bool serial = false;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		serial |= c[i].r.srclines;
	if (serial) {
		r->line0 = r->lineno - 1;
		r->data = b[1];
		r->end = b[n];
		return kiln_perfscript_walk(r, false);
	}
	for (size_t i = 1; i < n && !err; i++) {
		err = merge(dst, c[i].p);
		add_counts(r, &c[i].r);
	}
	return err;
}

/*
 * The single pass: the events and the first time stamp guessed from
 * the input's first samples (a walk that stops at the first time
 * stamp), each chunk read at once into a profile of its own with the
 * types the guess gives (chunk 0's becomes p), the chunks' line numbers
 * counted from their starts and moved on after.  A guess is right when
 * no sample has another event, a period where the guess had none, or a
 * time before the first: then the types and times are those the two
 * passes would have found, and so is the model.  -EAGAIN where it is
 * wrong or a chunk failed (the two passes then read the input again
 * and say what failed where), 0, or -EINVAL for binary data (d filled).
 */
static int read_once(struct kiln_prof *p, const char *data, size_t len,
		     const char **b, size_t n, struct kiln_diag *d)
{
	struct reader g;
	struct chunk *c;
	size_t i, at;
	int err;

	kiln_perfscript_reader_init(&g, NULL, b[0], b[1], NULL);
	g.first_time = true;
	err = kiln_perfscript_walk(&g, true);
	if (!err && (!g.ev.n || g.t_min == INT64_MAX))
		err = -EAGAIN;	/* no time stamp in chunk 0: no guess */
	c = err ? NULL : calloc(n, sizeof(*c));
	if (!err && !c)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		kiln_perfscript_reader_init(&c[i].r, NULL, b[i], b[i + 1], &c[i].d);
		c[i].r.guess = true;
		err = chunk_begin(&c[i], &g);
	}
	kiln_perfscript_reader_release(&g);
	if (!err)
		err = run_all(c, n, false, NULL);
	for (i = 0; i < n && !err; i++)
		if (c[i].nul) {	/* the message, with its line, as serially */
			err = kiln_text_check(data, len, d);
			chunks_free(c, n);
			return err ? err : -EAGAIN;
		}
	/* Each chunk's lines were counted from its start; a chunk's last
	 * line, empty after its final newline, is the next chunk's first. */
	for (i = 1; i < n && !err; i++) {
		at = c[i - 1].r.lineno - 1;
		c[i].r.line0 = at;
		c[i].r.lineno += at;
		kiln_text_skips_shift(&c[i].r.skips, at);
	}
	if (!err)
		err = finish(c, n, b, c[0].p);
	if (err) {
		chunks_free(c, n);
		return -EAGAIN;
	}
	/* What the end finds (mostly bad lines, no samples) is said here
	 * as the two passes would. */
	c[0].r.d = d;
	err = kiln_perfscript_end(&c[0].r);
	if (!err)
		kiln_prof_swap(p, c[0].p);
	chunks_free(c, n);
	return err;
}

/*
 * Both passes over the chunks (the first pass's events and first time
 * stamp merged, then every chunk read with them): for inputs the
 * single pass's guess does not cover.  0 or a negative errno (d filled).
 */
static int read_twice(struct kiln_prof *p, const char *data, size_t len,
		      const char **b, size_t n, struct kiln_diag *d)
{
	struct chunk *c;
	size_t i;
	int err;

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
	if (!err)
		err = finish(c, n, b, p);
	if (!err)
		err = kiln_perfscript_end(&c[0].r);
	chunks_free(c, n);
	return err;
}

int kiln_perfscript_read_par(struct kiln_prof *p, const char *data,
			     size_t len, struct kiln_diag *d)
{
	const char *b[CHUNKS_MAX + 1];
	size_t n = kiln_workers();
	int err;

	if (n > CHUNKS_MAX)
		n = CHUNKS_MAX;
	if (n > len / CHUNK_MIN)
		n = len / CHUNK_MIN;
	if (n < 2 || (n = cut(data, len, n, b)) < 2)
		return 1;
	err = read_once(p, data, len, b, n, d);
	if (err != -EAGAIN)
		return err;
	__atomic_fetch_add(&twice, 1, __ATOMIC_RELAXED);
	return read_twice(p, data, len, b, n, d);
}
