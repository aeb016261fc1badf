/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` reader's internals (format stage), shared by
 * perfscript.c (the reader: lines walked, frames turned into locations,
 * samples added) and perfscript-header.c (the sample header line parsed,
 * the events it names turned into sample types).
 */
#ifndef KILN_FORMAT_PERFSCRIPTINT_H
#define KILN_FORMAT_PERFSCRIPTINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"
#include "format/linecache.h"
#include "profile/profile.h"

/* ---- small text helpers ---- */

static inline bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Length of the run of hex digits at s (at most to e). */
static inline size_t hex_run(const char *s, const char *e)
{
	const char *q = s;

	while (q < e && hexval(*q) >= 0)
		q++;
	return (size_t)(q - s);
}

/* Parses n decimal digits; false on overflow of int64. */
static inline bool parse_dec(const char *s, size_t n, int64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]) || v > (uint64_t)(INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = (int64_t)v;
	return true;
}

static inline bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

/* "ADDR " or "ADDR" alone: the start of a frame line (after its indent). */
static inline bool looks_frame(const char *s, const char *e)
{
	size_t n = hex_run(s, e);

	return n > 0 && (s + n == e || is_ws(s[n]));
}

/* ---- perfscript-header.c: the sample header ---- */

struct hdr {
	const char *comm;	/* may be empty (no comm field) */
	size_t comm_len;
	const char *ident;	/* line start .. end of the pid/tid token */
	size_t ident_len;
	int64_t pid, tid;
	bool has_pid, has_tid;
	bool has_time;		/* perf script -F without time: none */
	int64_t time_ns;
	int64_t period;
	bool has_period;
	const char *event;	/* without modifiers; may be empty */
	size_t event_len;
	const char *rest;	/* after the event: "IP SYM (DSO)" or trace fields */
	size_t rest_len;
};

/*
 * Parses a header line [s, e) into h (pointers into the line).  False if
 * the line is no sample header.
 */
bool kiln_perfscript_parse_header(const char *s, const char *e,
				  struct hdr *h);

/* ---- perfscript-header.c: events and sample types ---- */

struct event {
	const char *name;	/* into the input */
	size_t len;
	bool has_period;
	int col;		/* value column, -1 for none (samples only) */
};

struct events {
	struct event *v;
	size_t n, alloc;
	size_t last;		/* cache of the last one found */
};

/* The index of the event named [name, name + len) in ev, or -1. */
long kiln_perfscript_event_find(struct events *ev, const char *name,
				size_t len);

/* Adds h's event to ev, or notes its period: 0 or -ENOMEM. */
int kiln_perfscript_event_add(struct events *ev, const struct hdr *h);

/*
 * Sets p's sample types from the events found by the first pass and
 * gives each event its value column: 0 or a negative errno.
 */
int kiln_perfscript_set_types(struct kiln_prof *p, struct events *ev);

/* ---- perfscript.c: the reader of one range of lines ---- */

struct reader {
	struct kiln_prof *p;
	struct kiln_diag *d;
	const char *data, *end;
	struct kiln_linecache frames;	/* frame text -> location id */
	struct kiln_linecache threads;	/* header ident -> label set id */
	struct kiln_linecache dsos;	/* dso text -> mapping id + 1 */
	/* A sample's run of frame lines (its text, in the input) -> its
	 * stack, for runs whose lines all were frames: index + 1 in runs,
	 * the location ids in run_locs. */
	struct kiln_linecache runs;
	struct run {
		size_t first;
		uint32_t depth;
	} *run;
	size_t nrun, run_alloc;
	uint32_t *run_locs;
	size_t nrun_locs, run_locs_alloc;
	struct events ev;
	uint32_t *stack;
	size_t depth, stack_alloc;
	int64_t *values;
	uint32_t k_pid, k_thread, k_thread_name;
	int64_t t_min, t_max;
	bool have_period;
	/* Malformed lines skipped (second pass) and the lines taken. */
	struct kiln_text_skips skips;
	size_t good;
	/* The number of the line before data (0, or a chunk's place in the
	 * whole input), and what kiln_perfscript_walk() leaves: the last
	 * line's number (an empty one after a final newline counts), the
	 * samples ended. */
	size_t line0, lineno, nsamples;
	/* A frame took its file and line from a srcline after it: its
	 * location depends on the line after the frame text's first
	 * occurrence (perfscript-par.c then reads serially). */
	bool srclines;
	/* The first pass: stop after the first header with a time stamp. */
	bool first_time;
	/* The second pass without a first (perfscript-par.c's single
	 * pass): r->ev and r->t_min are guessed from the input's first
	 * samples; a sample they do not cover (another event, a period
	 * where the guess had none, a time before t_min) makes the walk
	 * return -EAGAIN. */
	bool guess;
};

/*
 * Walks the lines [r->data, r->end): with scan set, the first pass (the
 * headers' events and the first time stamp only), else the second (the
 * samples added to r->p).  0 or a negative errno (r->d filled; -EAGAIN:
 * the guess failed, see r->guess).
 */
int kiln_perfscript_walk(struct reader *r, bool scan);

/* A reader of the lines [data, end) into p, errors into d. */
void kiln_perfscript_reader_init(struct reader *r, struct kiln_prof *p,
				 const char *data, const char *end,
				 struct kiln_diag *d);

/*
 * After the first pass: r->p's sample types set from r->ev (the event
 * columns given), the second pass's keys interned.  0 or -ENOMEM.
 */
int kiln_perfscript_begin(struct reader *r);

/*
 * After the second pass: the skipped lines' warning (or the refusal of
 * an input mostly bad), "no samples", the duration, the time column
 * tidied.  0 or a negative errno (r->d filled).
 */
int kiln_perfscript_end(struct reader *r);

/* Frees what a reader holds (not r->p). */
void kiln_perfscript_reader_release(struct reader *r);

/* ---- perfscript-runs.c: a sample's run of frame lines at once ---- */

/*
 * From s, the start of a line inside a sample that begins with a tab,
 * the start of the first line that does not both begin with a tab and
 * end, before its newline, with something other than white space; *n:
 * the lines passed.  s[-1] must be in the data.
 */
const char *kiln_perfscript_skip_frames(const char *s, const char *end,
				       size_t *n);

/* A run not in the second pass's cache, being read line by line. */
struct run_try {
	const char *start, *end;	/* a run not in the cache, being read */
	size_t n;			/* its lines */
	uint64_t hash;
};

/*
 * At s, the first line after a header (inside a sample, starting with a
 * tab): where the run of frame lines at s ends, its stack pushed, if the
 * cache has it (*n: its lines, r->good counted); else NULL, with rt set
 * to note the run when its lines have been read.
 */
const char *kiln_perfscript_run_find(struct reader *r, const char *s,
				     size_t *n, struct run_try *rt);

/* The lines of run rt read: kept if each one was a frame.  0 or -ENOMEM. */
int kiln_perfscript_run_end(struct reader *r, struct run_try *rt);

/*
 * What kiln_perfscript_walk() does before it reads line s: ends run rt
 * where s is its end; after a header (fresh, the second pass) gives the
 * run of frame lines at s its stack at once where it was read before;
 * inside a sample in the first pass (scan) passes the run over.  Returns
 * the line to read next, s or the line after the run (*n: the lines
 * passed); *err: 0 or -ENOMEM.
 */
const char *kiln_perfscript_runs(struct reader *r, const char *s, bool scan,
				 bool in_sample, bool fresh,
				 struct run_try *rt, size_t *n, int *err);

/* ---- perfscript-par.c: both passes over chunks, in parallel ---- */

/*
 * Reads data [0, len) (more than one chunk's worth: see
 * kiln_perfscript_chunks()) into p with both passes spread over
 * threads, as kiln_perfscript_read() does serially, the model
 * identical.  1: the input is not worth splitting (the caller reads it
 * serially), 0, or a negative errno (d filled).
 */
int kiln_perfscript_read_par(struct kiln_prof *p, const char *data,
			     size_t len, struct kiln_diag *d);
/* How many inputs kiln_perfscript_read_par() read in two passes, the
 * single pass's guess wrong (for tests). */
unsigned long kiln_perfscript_par_twice(void);

#endif
