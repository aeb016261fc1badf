/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` text (format stage): the reader turns the text that
 * `perf script` prints into the profile model, the writer prints a profile
 * as such text (read by the Firefox Profiler, FlameGraph, inferno and
 * kiln itself).
 *
 * (The writer is in perfscript-write.c; the header line's parser and
 * the sample types are in perfscript-header.c.)
 *
 * The text is a series of samples: a header line
 *
 *     COMM  [PID/]TID [CPU] TIME: [PERIOD] EVENT[:MODS]: [IP SYM+OFF (DSO)]
 *
 * followed (with -g) by one tab-indented line per frame, leaf first,
 *
 *     \t    ADDR SYM+OFF (DSO)
 *
 * and a blank line.  Without -g there are no frame lines and no blank
 * lines: the header carries the sampled ip, symbol and dso itself.
 *
 * Sample types (see docs/formats.md): one event gives `samples/count` and
 * the event's value: `cpu/nanoseconds` for cpu-clock and task-clock, else
 * `EVENT/count` (or `/bytes` for *_space and *bytes events).  Several
 * events give `samples/count` and one `EVENT/UNIT` type per event, named
 * after the event.  An event printed without a period counts 1 a sample.
 *
 * The reader makes two passes: the first only reads the header lines to
 * learn the events (the sample types must be known before the first
 * sample), the second builds the profile.  (Read in parallel, a large
 * input is read once where a guess of its events holds: perfscript-par.c.)  Its hot path is a frame line:
 * one hash of the line's text finds the location it was turned into the
 * first time, so a frame line costs a memchr, a hash and a memcmp.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/linecache.h"
#include "format/perfscriptint.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

/* ---- the reader (struct reader: perfscriptint.h) ---- */

/* Counts a malformed line, skipped: "line N: why". */
static void skip_line(struct reader *r, size_t lineno, const char *why)
{
	struct kiln_diag d;

	kiln_diag(&d, "line %zu: %s", lineno, why);
	kiln_text_skip(&r->skips, lineno, &d);
}

/* Returns a pointer to the line after [s, nl) or NULL at the end. */
static inline const char *next_line(const struct reader *r, const char *s,
				    const char **eol)
{
	/* (s < end tested: gcc cannot tell that s never passes the end.) */
	const char *nl = s < r->end ? memchr(s, '\n', (size_t)(r->end - s)) : NULL;
	const char *e = nl ? nl : r->end;

	if (e > s && e[-1] == '\r')
		e--;
	*eol = e;
	return nl ? nl + 1 : NULL;
}

/*
 * "file.c:123", "??:0" or "[kernel.kallsyms][ffffffff81000c82]": the line
 * perf -F +srcline prints after a frame.
 */
static bool parse_srcline(const char *s, const char *e, const char **file,
			  size_t *flen, int64_t *line)
{
	const char *colon;

	/* "[kernel.kallsyms][ffffffff81000c82]", "libc.so.6[27b25]": perf
	 * found no line, only the module and offset. */
	if (s < e && e[-1] == ']' && memchr(s, '[', (size_t)(e - s))) {
		*flen = 0;
		*line = 0;
		return true;
	}
	colon = memrchr(s, ':', (size_t)(e - s));
	if (!colon || colon == s || !all_digits(colon + 1, (size_t)(e - colon - 1)))
		return false;
	if (colon - s == 2 && s[0] == '?' && s[1] == '?') {
		*flen = 0;	/* "??:0": no line found */
		*line = 0;
		return true;
	}
	*file = s;
	*flen = (size_t)(colon - s);
	if (!parse_dec(colon + 1, (size_t)(e - colon - 1), line))
		*line = 0;
	return true;
}

static uint32_t dso_mapping(struct reader *r, const char *s, size_t n)
{
	uint64_t h;
	uint32_t id;
	struct kiln_mapping m;

	/* "/usr/bin/prog (deleted)": the binary was replaced or removed. */
	if (n > 10 && !memcmp(s + n - 10, " (deleted)", 10))
		n -= 10;
	/* "[unknown]" stays a mapping: the frame is then named
	 * "[unknown]+0xADDR", never a bare address. */
	if (!n)
		return 0;
	h = kiln_linecache_hash(s, n);
	id = kiln_linecache_find(&r->dsos, s, n, h);
	if (id)
		return id;
	memset(&m, 0, sizeof(m));
	m.file = kiln_prof_intern(r->p, s, n);
	m.has_functions = true;
	id = kiln_prof_mapping(r->p, &m);
	if (!id)
		return 0;
	/* A cache entry refused is memory refused: the sample cannot be
	 * read, it must not be read without its mapping. */
	if (kiln_linecache_add(&r->dsos, s, n, h, id)) {
		r->p->err = -ENOMEM;
		return 0;
	}
	return id;
}

/*
 * Turns the text of a frame, "ADDR [SYM[+0xOFF]] [(DSO)]", into a
 * location.  srcline, when not NULL, is the "file:line" line perf printed
 * after it.  Returns the location id, or 0 with p->err or d set.
 */
static uint32_t make_location(struct reader *r, const char *s, const char *e,
			      const char *src, const char *src_end)
{
	struct kiln_prof *p = r->p;
	uint64_t addr = 0;
	const char *sym, *sym_end, *dso = NULL, *dso_end = NULL, *q;
	const char *file = NULL;
	size_t n = hex_run(s, e), flen = 0, i;
	int64_t lineno = 0;
	uint32_t mapping = 0, fn, loc;
	struct kiln_line ln;

	if (n > 16)
		return 0;
	/* "IP SYM (DSO) => TARGET SYM (DSO)" (branch samples): the sample
	 * is the branch's source. */
	q = memmem(s, (size_t)(e - s), " => ", 4);
	if (q)
		for (e = q; e > s && is_ws(e[-1]); e--)
			;
	for (i = 0; i < n; i++)
		addr = addr << 4 | (uint64_t)hexval(s[i]);
	sym = s + n;
	while (sym < e && is_ws(*sym))
		sym++;
	sym_end = e;
	/* The dso is the last balanced "(...)" at the end of the line; the
	 * symbol itself may hold parentheses (operator(), (anonymous
	 * namespace)) and the dso may end in " (deleted)". */
	if (sym_end > sym && sym_end[-1] == ')') {
		int depth = 0;

		for (q = sym_end - 1; q >= sym; q--) {
			if (*q == ')')
				depth++;
			else if (*q == '(' && --depth == 0)
				break;
		}
		if (q >= sym && (q == sym || is_ws(q[-1]))) {
			dso = q + 1;
			dso_end = sym_end - 1;
			sym_end = q;
			while (sym_end > sym && is_ws(sym_end[-1]))
				sym_end--;
		}
	}
	/* sym+0x1a -> sym */
	for (q = sym_end; q > sym && hexval(q[-1]) >= 0; q--)
		;
	if (q - sym >= 3 && q < sym_end && q[-1] == 'x' && q[-2] == '0' &&
	    q[-3] == '+')
		sym_end = q - 3;
	if (dso)
		mapping = dso_mapping(r, dso, (size_t)(dso_end - dso));
	if (p->err)
		return 0;
	if (src && !parse_srcline(src, src_end, &file, &flen, &lineno))
		file = NULL;
	if (file)
		r->srclines = true;
	if (sym_end == sym ||
	    (sym_end - sym == 9 && !memcmp(sym, "[unknown]", 9))) {
		/* No symbol: the model names it "dso+0xaddr". */
		return kiln_prof_location(p, mapping, addr, NULL, 0);
	}
	{
		uint32_t name = kiln_prof_intern(p, sym, (size_t)(sym_end - sym));

		fn = kiln_prof_function(p, name, name,
					file ? kiln_prof_intern(p, file, flen) : 0,
					0);
	}
	if (!fn)
		return 0;
	ln.function = fn;
	ln.line = file ? lineno : 0;
	if (mapping) {
		p->mappings[mapping].has_filenames |= file != NULL;
		p->mappings[mapping].has_line_numbers |= file != NULL;
	}
	loc = kiln_prof_location(p, mapping, addr, &ln, 1);
	return loc;
}

/* Appends a location to the current stack. */
static int push(struct reader *r, uint32_t loc)
{
	if (KILN_GROW(r->stack, r->stack_alloc, r->depth + 1, 128))
		return -ENOMEM;
	r->stack[r->depth++] = loc;
	return 0;
}

/*
 * The location for the frame text [s, e) (indent already skipped);
 * next is the line after it (for a srcline), or NULL.
 */
static uint32_t frame_location(struct reader *r, const char *s, const char *e,
			       const char *next)
{
	uint64_t h;
	uint32_t loc;
	const char *src = NULL, *src_end = NULL;

	while (e > s && is_ws(e[-1]))
		e--;
	h = kiln_linecache_hash(s, (size_t)(e - s));
	loc = kiln_linecache_find(&r->frames, s, (size_t)(e - s), h);
	if (loc)
		return loc;
	if (next && next < r->end && is_ws(*next)) {
		const char *ne;

		next_line(r, next, &ne);
		while (next < ne && is_ws(*next))
			next++;
		if (next < ne && !looks_frame(next, ne)) {
			src = next;
			src_end = ne;
			while (src_end > src && is_ws(src_end[-1]))
				src_end--;
		}
	}
	loc = make_location(r, s, e, src, src_end);
	if (loc && kiln_linecache_add(&r->frames, s, (size_t)(e - s), h, loc))
		r->p->err = -ENOMEM;
	return loc;
}

static uint32_t thread_labels(struct reader *r, const struct hdr *h)
{
	struct kiln_label l[3];
	uint32_t n = 0, id;
	uint64_t hash;

	if (!h->ident_len)
		return 0;
	hash = kiln_linecache_hash(h->ident, h->ident_len);
	id = kiln_linecache_find(&r->threads, h->ident, h->ident_len, hash);
	if (id)
		return id;
	memset(l, 0, sizeof(l));
	if (h->comm_len) {
		l[n].key = r->k_thread_name;
		l[n++].str = kiln_prof_intern(r->p, h->comm, h->comm_len);
	}
	if (h->has_pid) {
		l[n].key = r->k_pid;
		l[n++].num = h->pid;
	}
	if (h->has_tid) {
		l[n].key = r->k_thread;
		l[n++].num = h->tid;
	}
	id = kiln_prof_labelset(r->p, l, n);
	if (id && kiln_linecache_add(&r->threads, h->ident, h->ident_len, hash,
				     id))
		r->p->err = -ENOMEM;
	return id;
}

/* Adds the sample gathered so far; hf is the header's own frame text. */
static int flush(struct reader *r, const struct hdr *h, const char *hf,
		 const char *hf_end, size_t lineno)
{
	long ei;
	const struct event *ev;
	size_t i;
	uint32_t lset;

	if (!r->depth && hf) {
		uint32_t loc = frame_location(r, hf, hf_end, NULL);

		if (!loc) {
			if (r->p->err)
				return r->p->err;
			/* A sample with no frame at all: skipped whole. */
			skip_line(r, lineno, "cannot parse the sampled address "
				  "in the header");
			return 0;
		}
		if (push(r, loc))
			return -ENOMEM;
	}
	ei = kiln_perfscript_event_find(&r->ev, h->event, h->event_len);
	if (ei < 0 && r->guess)
		return -EAGAIN;
	if (ei < 0)
		return kiln_diag(r->d, "line %zu: internal error: unknown event",
				 lineno);
	ev = &r->ev.v[ei];
	/* The guess: a period decides the columns where the guessed event
	 * had none; a time before the first one, every time before it. */
	if (r->guess && ((h->has_period && !ev->has_period) ||
			 (h->has_time && h->time_ns < r->t_min)))
		return -EAGAIN;
	for (i = 0; i < r->p->ntypes; i++)
		r->values[i] = 0;
	if (ev->col != 0)
		r->values[0] = 1;
	if (ev->col >= 0)
		r->values[ev->col] = h->has_period ? h->period : 1;
	if (!r->have_period && h->has_period && h->period > 0) {
		r->p->period = h->period;
		r->have_period = true;
	}
	lset = thread_labels(r, h);
	if (h->has_time) {
		if (h->time_ns < r->t_min)
			r->t_min = h->time_ns;
		if (h->time_ns > r->t_max)
			r->t_max = h->time_ns;
		/* The time column: since the first sample (profile.h). */
		kiln_prof_add_timed(r->p, r->stack, (uint32_t)r->depth,
				    r->values, lset, h->time_ns - r->t_min);
	} else {
		kiln_prof_add_sample(r->p, r->stack, (uint32_t)r->depth,
				     r->values, lset);
	}
	r->depth = 0;
	if (r->p->err == -EOVERFLOW)
		return kiln_diag(r->d, "line %zu: the period %lld makes a total "
				 "overflow 64 bits", lineno,
				 (long long)(h->has_period ? h->period : 1));
	return r->p->err;
}

/* A sample ends: added in the second pass, counted in both. */
static int end_sample(struct reader *r, bool scan, const struct hdr *h,
		      const char *hf, const char *hf_end, size_t hline,
		      size_t *nsamples)
{
	++*nsamples;
	return scan ? 0 : flush(r, h, hf, hf_end, hline);
}

/*
 * Lines perf prints inside a sample that are no frame: a branch stack
 * (-F +brstack: "0x4005b1/0x400577/P/-/-/0 ...", +brstacksym:
 * "main+0x1a/f+0x0/P/-/-/0 ..."), a branch's target ("=> ...").
 */
static bool is_branch_line(const char *q, const char *e)
{
	const char *te = q;

	if (e - q >= 2 && q[0] == '=' && q[1] == '>')
		return true;
	while (te < e && !is_ws(*te))
		te++;
	return (te - q > 2 && q[0] == '0' && q[1] == 'x' &&
		memchr(q, '/', (size_t)(te - q))) ||
	       memmem(q, (size_t)(te - q), "/P/", 3) ||
	       memmem(q, (size_t)(te - q), "/M/", 3) ||
	       memmem(q, (size_t)(te - q), "/-/-/", 5);
}

/* Skips a line [s, e) outside any sample that is no header (q: its
 * first non-blank). */
static void skip_stray(struct reader *r, const char *s, const char *q,
		       const char *e, size_t lineno)
{
	if (*s == '\t' || (q != s && looks_frame(q, e)))
		skip_line(r, lineno, "a stack frame line before any sample "
			  "header");
	else
		skip_line(r, lineno, "not a sample header (expected 'COMM PID "
			  "[TIME:] [PERIOD] EVENT: ...')");
}

/* A header line with a time stamp: one that no frame line can be. */
static bool is_time_header(const char *s, const char *e)
{
	struct hdr h;

	return kiln_perfscript_parse_header(s, e, &h) && h.has_time;
}

/*
 * Reads the samples.  With scan set, the first pass: only the headers'
 * events and times are gathered (the sample types must be known before
 * the first sample is added); errors are left for the second pass, which
 * walks the same lines the same way.
 *
 * Which line is what: a tab-indented line inside a sample is a frame (the
 * hot path: perf never indents a header with a tab).  Inside a sample
 * whose header printed no sampled address (a -g callchain follows), a
 * space-indented line that looks like "ADDR ..." is a frame too, and so
 * is a line that is not indented at all but looks like "ADDR SYM (DSO)"
 * (old perf printed frames so), unless it is a header with a time stamp.
 * Other lines are headers, srcline lines after a frame, branch stacks
 * (skipped) or errors.
 */
int kiln_perfscript_walk(struct reader *r, bool scan)
{
	const char *s = r->data, *e, *next, *hf = NULL, *hf_end = NULL;
	struct hdr h, nh;
	bool in_sample = false, after_frame = false, is_hdr, fresh = false;
	size_t lineno = r->line0, hline = 0, nsamples = 0;
	struct run_try rt = { NULL, NULL, 0, 0 };
	int err;

	memset(&h, 0, sizeof(h));
	for (; s; s = next) {
		const char *q;
		bool chain;
		size_t n;

		/* A sample's run of frame lines at once, where it can be (no
		 * call for the other lines). */
		if (rt.end == s || ((fresh || (scan && in_sample)) &&
				    s < r->end && *s == '\t')) {
			s = kiln_perfscript_runs(r, s, scan, in_sample, fresh,
						 &rt, &n, &err);
			if (err)
				return err;
			lineno += n;
			after_frame |= n > 0;
		}
		fresh = false;
		lineno++;
		next = next_line(r, s, &e);
		/* (s == e: an empty last line, at the end of the data.) */
		if (scan && in_sample && s < e && *s == '\t' && !is_ws(e[-1])) {
			/* The first pass only needs headers: a frame line (or
			 * a srcline, no matter which) is passed over unread. */
			after_frame = true;
			continue;
		}
		q = s;
		while (q < e && is_ws(*q))
			q++;
		if (q == e)
			goto blank;
		if (*s == '\t' && in_sample) {
			/* The hot path: a frame line of a -g callchain. */
			if (looks_frame(q, e))
				goto frame;
			goto other;
		}
		if (*s == '#')
			continue;
		chain = in_sample && !hf;
		if (chain && looks_frame(q, e) &&
		    (q != s || e[-1] == ')') && !is_time_header(s, e))
			goto frame;
		is_hdr = kiln_perfscript_parse_header(s, e, &nh);
		if (!is_hdr && in_sample) {
			if (q != s && looks_frame(q, e))
				goto frame;
			goto other;
		}
		/* A header line: the previous sample (without -g there are no
		 * blank lines between samples) ends here. */
		if (in_sample && (err = end_sample(r, scan, &h, hf, hf_end, hline,
							   &nsamples)))
			return err;
		if (!is_hdr) {
			if (scan)
				continue;
			skip_stray(r, s, q, e, lineno);
			continue;
		}
		if (!scan)
			r->good++;
		h = nh;
		in_sample = true;
		fresh = !scan;
		after_frame = false;
		hline = lineno;
		hf = NULL;
		if (h.rest_len && looks_frame(h.rest, h.rest + h.rest_len)) {
			hf = h.rest;
			hf_end = h.rest + h.rest_len;
		}
		if (scan) {
			if (h.has_time && h.time_ns < r->t_min)
				r->t_min = h.time_ns;
			err = kiln_perfscript_event_add(&r->ev, &h);
			if (err)
				return err;
			if (r->first_time && h.has_time)
				break;
		}
		continue;
frame:
		after_frame = true;
		if (scan)
			continue;
		{
			uint32_t loc = frame_location(r, q, e, next);

			if (!loc) {
				if (r->p->err)
					return r->p->err;
				skip_line(r, lineno, "cannot parse the stack frame "
					  "(expected 'ADDRESS SYMBOL (DSO)')");
				continue;
			}
			r->good++;
			if (push(r, loc))
				return -ENOMEM;
		}
		continue;
other:
		{
			const char *f, *qe = e;
			size_t fl;
			int64_t ln;

			while (qe > q && is_ws(qe[-1]))
				qe--;
			if (after_frame && parse_srcline(q, qe, &f, &fl, &ln)) {
				after_frame = false;
				continue;
			}
			if (is_branch_line(q, qe))
				continue;
			if (scan)
				continue;
			skip_line(r, lineno, "not a stack frame (expected "
				  "'ADDRESS SYMBOL (DSO)')");
			continue;
		}
blank:
		if (in_sample && (err = end_sample(r, scan, &h, hf, hf_end, hline,
							   &nsamples)))
			return err;
		in_sample = false;
		after_frame = false;
	}
	if (in_sample && (err = end_sample(r, scan, &h, hf, hf_end, hline,
						   &nsamples)))
		return err;
	r->lineno = lineno;
	if (!scan)
		r->nsamples += nsamples;
	return 0;
}

int kiln_perfscript_begin(struct reader *r)
{
	struct kiln_prof *p = r->p;
	int err;

	if (!r->ev.n) {
		/* No header at all: let the second pass say where. */
		struct hdr h = { 0 };

		err = kiln_perfscript_event_add(&r->ev, &h);
		if (err)
			return err;
	}
	err = kiln_perfscript_set_types(p, &r->ev);
	if (err)
		return err;
	r->values = calloc(p->ntypes, sizeof(*r->values));
	if (!r->values)
		return -ENOMEM;
	r->k_pid = kiln_prof_interns(p, "pid");
	r->k_thread = kiln_prof_interns(p, "thread");
	r->k_thread_name = kiln_prof_interns(p, "thread_name");
	/* The time label's key and unit, as where times were labels, for
	 * the pprof writer's time labels (docs/formats.md). */
	kiln_prof_interns(p, "time");
	kiln_prof_interns(p, "nanoseconds");
	/* Time stamps since 1970 (kiln's own output of a recording) give
	 * the profile its date; perf's are since boot. */
	if (r->t_min != INT64_MAX && r->t_min >= 1000000000000000000ll)
		p->time_nanos = r->t_min;
	return p->err;
}

int kiln_perfscript_end(struct reader *r)
{
	int err;

	/* Mostly bad lines: not perf script at all, refused with what the
	 * first bad line showed; else one warning for them all. */
	err = kiln_text_skips_end(&r->skips, r->good, r->d);
	if (err)
		return err;
	if (!r->nsamples)
		return kiln_diag(r->d, "line %zu: no samples (expected the output "
				 "of 'perf script')", r->lineno ? r->lineno : 1);
	if (r->t_max > r->t_min)
		r->p->duration_nanos = r->t_max - r->t_min;
	return r->p->err ? r->p->err : kiln_prof_events_tidy(r->p);
}

void kiln_perfscript_reader_init(struct reader *r, struct kiln_prof *p,
				 const char *data, const char *end,
				 struct kiln_diag *d)
{
	memset(r, 0, sizeof(*r));
	r->p = p;
	r->d = d;
	r->data = data;
	r->end = end;
	r->t_min = INT64_MAX;
	r->t_max = INT64_MIN;
}

void kiln_perfscript_reader_release(struct reader *r)
{
	free(r->values);
	free(r->stack);
	free(r->run);
	free(r->run_locs);
	kiln_linecache_release(&r->runs);
	free(r->ev.v);
	kiln_linecache_release(&r->frames);
	kiln_linecache_release(&r->threads);
	kiln_linecache_release(&r->dsos);
}

int kiln_perfscript_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d)
{
	struct reader r;
	int err;

	if (!len)
		return kiln_diag(d, "line 1: no samples (the input is empty)");
	/* A large input is read by several threads (perfscript-par.c),
	 * which check for NUL bytes themselves. */
	err = kiln_perfscript_read_par(p, data, len, d);
	if (err <= 0)
		return err;
	err = kiln_text_check(data, len, d);
	if (err)
		return err;
	kiln_perfscript_reader_init(&r, p, data, data + len, d);
	err = kiln_perfscript_walk(&r, true);
	if (!err)
		err = kiln_perfscript_begin(&r);
	if (!err)
		err = kiln_perfscript_walk(&r, false);
	if (!err)
		err = kiln_perfscript_end(&r);
	kiln_perfscript_reader_release(&r);
	return err;
}
