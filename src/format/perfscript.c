/*
 * `perf script` text (format stage): the reader turns the text that
 * `perf script` prints into the profile model, the writer prints a profile
 * as such text (read by the Firefox Profiler, FlameGraph, inferno and
 * kiln itself).
 *
 * (The writer is in perfscript-write.c.)
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
 * sample), the second builds the profile.  Its hot path is a frame line:
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
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

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
static size_t hex_run(const char *s, const char *e)
{
	const char *q = s;

	while (q < e && hexval(*q) >= 0)
		q++;
	return (size_t)(q - s);
}

/* Parses n decimal digits; false on overflow of int64. */
static bool parse_dec(const char *s, size_t n, int64_t *out)
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

static bool all_digits(const char *s, size_t n)
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
static bool looks_frame(const char *s, const char *e)
{
	size_t n = hex_run(s, e);

	return n > 0 && (s + n == e || is_ws(s[n]));
}

/* ---- the sample header ---- */

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

/* perf's event modifier letters (cpu-clock:pppH, cycles:u). */
static bool is_modifiers(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 12)
		return false;
	for (i = 0; i < n; i++)
		if (!strchr("ukhHGIpPSDWeb", s[i]))
			return false;
	return true;
}

/* "123.456789:" */
static bool is_time(const char *s, size_t n, int64_t *ns)
{
	size_t i = 0, dot;
	int64_t sec = 0, frac = 0;
	int fd = 0;

	if (n < 4 || s[n - 1] != ':')
		return false;
	while (i < n - 1 && is_digit(s[i]))
		i++;
	if (i == 0 || i >= n - 1 || s[i] != '.')
		return false;
	dot = i++;
	if (i == n - 1)
		return false;
	for (; i < n - 1; i++) {
		if (!is_digit(s[i]))
			return false;
		if (fd < 9) {
			frac = frac * 10 + (s[i] - '0');
			fd++;
		}
	}
	if (!parse_dec(s, dot, &sec) || sec > INT64_MAX / 1000000000 - 1)
		sec = 0;
	while (fd++ < 9)
		frac *= 10;
	*ns = sec * 1000000000 + frac;
	return true;
}

/* "[003]" */
static bool is_cpu(const char *s, size_t n)
{
	return n >= 3 && s[0] == '[' && s[n - 1] == ']' &&
	       all_digits(s + 1, n - 2);
}

/* "2023-01-02" or "10:11:12.123456": perf script -F +tod, before the time. */
static bool is_tod(const char *s, size_t n)
{
	size_t i;

	if (n == 10 && s[4] == '-' && s[7] == '-')
		return all_digits(s, 4) && all_digits(s + 5, 2) &&
		       all_digits(s + 8, 2);
	if (n < 8 || s[2] != ':' || s[5] != ':')
		return false;
	for (i = 0; i < n; i++)
		if (!is_digit(s[i]) && i != 2 && i != 5 && !(i == 8 && s[i] == '.'))
			return false;
	return true;
}

/* "1234" or "1234/1235": what perf prints for -F pid, tid or both. */
static bool is_pidtid_tok(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);

	if (!slash)
		return all_digits(s, n);
	return all_digits(s, (size_t)(slash - s)) &&
	       all_digits(slash + 1, n - (size_t)(slash - s) - 1);
}

/* "1234" or "1234/1235" */
static bool is_pidtid(const char *s, size_t n, struct hdr *h)
{
	const char *slash = memchr(s, '/', n);

	if (!slash) {
		if (!parse_dec(s, n, &h->tid))
			return false;
		h->has_tid = true;
		return true;
	}
	if (!parse_dec(s, (size_t)(slash - s), &h->pid) ||
	    !parse_dec(slash + 1, n - (size_t)(slash - s) - 1, &h->tid))
		return false;
	h->has_pid = h->has_tid = true;
	return true;
}

/*
 * "cycles:", "cpu-clock:pppH:", "sched:sched_switch:",
 * "cpu/event=0x3c,umask=0x0/:": an event name, as the anchor of a header
 * without a time stamp.  Only the characters perf's event names have
 * (not "main():" of a line of source code); '=' only in a PMU's "/.../"
 * (not "prev_comm=x:" of a tracepoint's fields).
 */
static bool is_event_tok(const char *s, size_t n)
{
	size_t i;

	/* "VM:" and "VCPU:" (perf -F +machine_pid,+vcpu) label a number. */
	if ((n == 3 && !memcmp(s, "VM:", 3)) || (n == 5 && !memcmp(s, "VCPU:", 5)))
		return false;
	if (n < 2 || s[n - 1] != ':' || !((s[0] >= 'a' && s[0] <= 'z') ||
					  (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return false;
	for (i = 0; i < n; i++)
		if (!s[i] || !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_-.:/,=", s[i]) ||
		    (s[i] == '=' && !memchr(s, '/', n)))
			return false;
	return true;
}

#define MAX_TOKS 64

/*
 * Fills h's comm, pid/tid and ident from the tokens [0, k) that stand
 * before the cpu, time or event: the last one may be PID[/TID], the command
 * name is all the rest (it may contain spaces).
 */
static void header_start(const char *s, const char **ts, const char **te,
			 size_t k, struct hdr *h)
{
	h->ident = s;
	h->ident_len = k > 0 ? (size_t)(te[k - 1] - s) : 0;
	if (k > 0 && is_pidtid(ts[k - 1], (size_t)(te[k - 1] - ts[k - 1]), h))
		k--;
	else
		h->has_pid = h->has_tid = false;
	if (k > 0) {
		const char *cs = s, *ce = te[k - 1];

		while (cs < ce && is_ws(*cs))
			cs++;
		h->comm = cs;
		h->comm_len = (size_t)(ce - cs);
	}
}

/* Sets h's event from the token [a, b) that ends with ':'. */
static void set_event(const char *a, const char *b, struct hdr *h)
{
	const char *colon;

	b--;
	/* cpu-clock:pppH -> cpu-clock; sched:sched_switch stays. */
	colon = memrchr(a, ':', (size_t)(b - a));
	if (colon && is_modifiers(colon + 1, (size_t)(b - colon - 1)))
		b = colon;
	h->event = a;
	h->event_len = (size_t)(b - a);
}

/*
 * Parses a header line [s, e).  perf prints the fields in one order
 * whatever the order of -F:
 *
 *     [COMM] [PID[/TID]] [[CPU]] [DATE CLOCK] [TIME:] [PERIOD] [EVENT:] REST
 *
 * The time stamp, "DIGITS.DIGITS:", is the anchor where there is one; the
 * command name is all that comes before the optional fields (it may
 * contain spaces).  Without a time (perf script -F without time, perf
 * before 3.x printed none by default) the event, the first token ending
 * with ':' after a number or a [CPU], is the anchor; a number just before
 * it is the period where another number or a [CPU] precedes it, else the
 * pid.  False if the line has neither.
 */
static bool parse_header(const char *s, const char *e, struct hdr *h)
{
	const char *ts[MAX_TOKS], *te[MAX_TOKS];
	const char *q = s;
	size_t nt = 0, i, t = 0, k;
	long ev = -1, first_ev = -1;
	bool found = false;

	memset(h, 0, sizeof(*h));
	/* Tokenize up to the time stamp or an event after a number. */
	while (q < e && nt < MAX_TOKS) {
		size_t n;

		while (q < e && is_ws(*q))
			q++;
		if (q == e)
			break;
		ts[nt] = q;
		while (q < e && !is_ws(*q))
			q++;
		te[nt] = q;
		n = (size_t)(te[nt] - ts[nt]);
		if (is_time(ts[nt], n, &h->time_ns)) {
			t = nt++;
			found = true;
			break;
		}
		if (ev < 0 && is_event_tok(ts[nt], n)) {
			if (nt > 0 && (is_pidtid_tok(ts[nt - 1], (size_t)(te[nt - 1] - ts[nt - 1])) ||
				       is_cpu(ts[nt - 1], (size_t)(te[nt - 1] - ts[nt - 1]))))
				ev = (long)nt;
			else if (first_ev < 0)
				first_ev = (long)nt;
		}
		nt++;
	}
	if (!found) {
		/* No time stamp: the event is the anchor. */
		if (ev < 0)
			ev = first_ev;
		if (ev < 0)
			return false;
		k = (size_t)ev;
		if (k >= 2 && all_digits(ts[k - 1], (size_t)(te[k - 1] - ts[k - 1])) &&
		    (is_cpu(ts[k - 2], (size_t)(te[k - 2] - ts[k - 2])) ||
		     is_pidtid_tok(ts[k - 2], (size_t)(te[k - 2] - ts[k - 2])))) {
			if (!parse_dec(ts[k - 1], (size_t)(te[k - 1] - ts[k - 1]),
				       &h->period))
				return false;
			h->has_period = true;
			k--;
		}
		if (k > 0 && is_cpu(ts[k - 1], (size_t)(te[k - 1] - ts[k - 1])))
			k--;
		header_start(s, ts, te, k, h);
		set_event(ts[ev], te[ev], h);
		q = te[ev];
		goto rest;
	}
	h->has_time = true;
	k = t;
	/* -F +tod: "2023-01-02 10:11:12.123456" before the time. */
	for (i = 0; i < 2 && k > 0 &&
	     is_tod(ts[k - 1], (size_t)(te[k - 1] - ts[k - 1])); i++)
		k--;
	if (k > 0 && is_cpu(ts[k - 1], (size_t)(te[k - 1] - ts[k - 1])))
		k--;
	header_start(s, ts, te, k, h);
	/* After the time: [PERIOD] [EVENT:] REST */
	q = te[t];
	for (i = 0; i < 2; i++) {
		const char *a, *b;

		while (q < e && is_ws(*q))
			q++;
		a = q;
		while (q < e && !is_ws(*q))
			q++;
		b = q;
		if (a == b)
			break;
		if (i == 0 && all_digits(a, (size_t)(b - a))) {
			if (!parse_dec(a, (size_t)(b - a), &h->period))
				return false;
			h->has_period = true;
			continue;
		}
		if (b[-1] == ':' && b - a > 1)
			set_event(a, b, h);
		else
			q = a;	/* not an event: the rest starts here */
		break;
	}
rest:
	while (q < e && is_ws(*q))
		q++;
	h->rest = q;
	h->rest_len = (size_t)(e - q);
	return true;
}

/* ---- events and sample types ---- */

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

static long event_find(struct events *ev, const char *name, size_t len)
{
	size_t i;

	/* len may be 0 with a NULL name: no memcmp then. */
	if (ev->n && ev->v[ev->last].len == len &&
	    (!len || !memcmp(ev->v[ev->last].name, name, len)))
		return (long)ev->last;
	for (i = 0; i < ev->n; i++) {
		if (ev->v[i].len == len &&
		    (!len || !memcmp(ev->v[i].name, name, len))) {
			ev->last = i;
			return (long)i;
		}
	}
	return -1;
}

static int event_add(struct events *ev, const struct hdr *h)
{
	long i = event_find(ev, h->event, h->event_len);

	if (i < 0) {
		if (KILN_GROW(ev->v, ev->alloc, ev->n + 1, 4))
			return -ENOMEM;
		i = (long)ev->n++;
		ev->v[i].name = h->event;
		ev->v[i].len = h->event_len;
		ev->v[i].has_period = false;
		ev->v[i].col = -1;
	}
	if (h->has_period)
		ev->v[i].has_period = true;
	return 0;
}

static bool ev_is(const struct event *e, const char *s)
{
	return e->len == strlen(s) && !memcmp(e->name, s, e->len);
}

static bool ev_is_clock(const struct event *e)
{
	return ev_is(e, "cpu-clock") || ev_is(e, "task-clock");
}

static const char *ev_unit(const struct event *e)
{
	if (ev_is_clock(e) && e->has_period)
		return "nanoseconds";
	if ((e->len > 6 && !memcmp(e->name + e->len - 6, "_space", 6)) ||
	    (e->len > 5 && !memcmp(e->name + e->len - 5, "bytes", 5)))
		return "bytes";
	return "count";
}

/*
 * Sets the sample types from the events found by the first pass and
 * gives each event its value column.
 */
static int set_types(struct kiln_prof *p, struct events *ev)
{
	struct kiln_value_type t[1 + 64], *tv = t;
	size_t n = 0, i;
	int err;

	if (ev->n + 1 > sizeof(t) / sizeof(t[0])) {
		tv = calloc(ev->n + 1, sizeof(*tv));
		if (!tv)
			return -ENOMEM;
	}
	tv[n].type = kiln_prof_interns(p, "samples");
	tv[n++].unit = kiln_prof_interns(p, "count");
	if (ev->n == 1) {
		struct event *e = &ev->v[0];

		if (ev_is(e, "samples") || (!e->len && e->has_period)) {
			/* kiln's own "samples:" output, or no event name: the
			 * period is the count. */
			e->col = 0;
		} else if (e->has_period) {
			e->col = (int)n;
			tv[n].type = ev_is_clock(e) ?
				kiln_prof_interns(p, "cpu") :
				kiln_prof_intern(p, e->name, e->len);
			tv[n++].unit = kiln_prof_interns(p, ev_unit(e));
		}
	} else {
		for (i = 0; i < ev->n; i++) {
			struct event *e = &ev->v[i];

			e->col = (int)n;
			tv[n].type = e->len ? kiln_prof_intern(p, e->name, e->len)
					    : kiln_prof_interns(p, "events");
			tv[n++].unit = kiln_prof_interns(p, ev_unit(e));
		}
		/* The first event is what a viewer shows first. */
		p->default_type = tv[1].type;
	}
	err = p->err ? p->err : kiln_prof_set_types(p, tv, n);
	if (!err) {
		size_t pt = n > 1 ? 1 : 0;

		p->period_type = tv[pt];
	}
	if (tv != t)
		free(tv);
	return err;
}

/* ---- the reader ---- */

struct reader {
	struct kiln_prof *p;
	struct kiln_diag *d;
	const char *data, *end;
	struct kiln_linecache frames;	/* frame text -> location id */
	struct kiln_linecache threads;	/* header ident -> label set id */
	struct kiln_linecache dsos;	/* dso text -> mapping id + 1 */
	struct events ev;
	uint32_t *stack;
	size_t depth, stack_alloc;
	int64_t *values;
	uint32_t k_pid, k_thread, k_thread_name, k_time, k_ns;
	int64_t t_min, t_max;
	bool have_period;
	/* The last thread label set with a time label added, and its bucket. */
	uint32_t last_lset, last_tlset;
	int64_t last_bucket;
	struct kiln_label *tl;
	size_t tl_alloc;
};

/* Returns a pointer to the line after [s, nl) or NULL at the end. */
static inline const char *next_line(const struct reader *r, const char *s,
				    const char **eol)
{
	const char *nl = memchr(s, '\n', (size_t)(r->end - s));
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

/*
 * The thread's label set lset with the label time: the header's time
 * since the first sample's, in buckets (docs/formats.md).
 */
static uint32_t time_labels(struct reader *r, uint32_t lset, int64_t time_ns)
{
	const struct kiln_labelset *ls = lset ? &r->p->labelsets[lset] : NULL;
	int64_t b = (time_ns - r->t_min) / KILN_PROF_TIME_BUCKET_NS *
		    KILN_PROF_TIME_BUCKET_NS;
	uint32_t n = ls ? ls->n : 0;

	if (r->last_tlset && lset == r->last_lset && b == r->last_bucket)
		return r->last_tlset;
	if (n + 1 > r->tl_alloc) {
		struct kiln_label *l = realloc(r->tl, (n + 1) * sizeof(*l));

		if (!l) {
			r->p->err = -ENOMEM;
			return 0;
		}
		r->tl = l;
		r->tl_alloc = n + 1;
	}
	if (n)
		memcpy(r->tl, &r->p->labels[ls->first], n * sizeof(*r->tl));
	r->tl[n] = (struct kiln_label){ r->k_time, 0, b, r->k_ns };
	r->last_lset = lset;
	r->last_bucket = b;
	r->last_tlset = kiln_prof_labelset(r->p, r->tl, n + 1);
	return r->last_tlset;
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

		if (!loc)
			return r->p->err ? r->p->err :
			       kiln_diag(r->d, "line %zu: cannot parse the sampled "
					 "address in the header", lineno);
		if (push(r, loc))
			return -ENOMEM;
	}
	ei = event_find(&r->ev, h->event, h->event_len);
	if (ei < 0)
		return kiln_diag(r->d, "line %zu: internal error: unknown event",
				 lineno);
	ev = &r->ev.v[ei];
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
		lset = time_labels(r, lset, h->time_ns);
	}
	kiln_prof_add_sample(r->p, r->stack, (uint32_t)r->depth, r->values,
			     lset);
	r->depth = 0;
	return r->p->err;
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

/* A header line with a time stamp: one that no frame line can be. */
static bool is_time_header(const char *s, const char *e)
{
	struct hdr h;

	return parse_header(s, e, &h) && h.has_time;
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
static int walk(struct reader *r, bool scan)
{
	const char *s = r->data, *e, *next, *hf = NULL, *hf_end = NULL;
	struct hdr h, nh;
	bool in_sample = false, after_frame = false, is_hdr;
	size_t lineno = 0, hline = 0, nsamples = 0;
	int err;

	memset(&h, 0, sizeof(h));
	for (; s; s = next) {
		const char *q;
		bool chain;

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
		is_hdr = parse_header(s, e, &nh);
		if (!is_hdr && in_sample) {
			if (q != s && looks_frame(q, e))
				goto frame;
			goto other;
		}
		/* A header line: the previous sample (without -g there are no
		 * blank lines between samples) ends here. */
		if (in_sample) {
			if (!scan) {
				err = flush(r, &h, hf, hf_end, hline);
				if (err)
					return err;
			}
			nsamples++;
		}
		if (!is_hdr) {
			if (scan)
				continue;
			if (*s == '\t' || (q != s && looks_frame(q, e)))
				return kiln_diag(r->d, "line %zu: a stack frame line "
						 "before any sample header", lineno);
			return kiln_diag(r->d, "line %zu: not a sample header "
					 "(expected 'COMM PID [TIME:] [PERIOD] "
					 "EVENT: ...')", lineno);
		}
		h = nh;
		in_sample = true;
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
			err = event_add(&r->ev, &h);
			if (err)
				return err;
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
				return kiln_diag(r->d, "line %zu: cannot parse the "
						 "stack frame (expected 'ADDRESS "
						 "SYMBOL (DSO)')", lineno);
			}
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
			return kiln_diag(r->d, "line %zu: not a stack frame "
					 "(expected 'ADDRESS SYMBOL (DSO)')", lineno);
		}
blank:
		if (in_sample) {
			if (!scan) {
				err = flush(r, &h, hf, hf_end, hline);
				if (err)
					return err;
			}
			nsamples++;
		}
		in_sample = false;
		after_frame = false;
	}
	if (in_sample) {
		if (!scan) {
			err = flush(r, &h, hf, hf_end, hline);
			if (err)
				return err;
		}
		nsamples++;
	}
	if (!nsamples && !scan)
		return kiln_diag(r->d, "line %zu: no samples (expected the output "
				 "of 'perf script')", lineno ? lineno : 1);
	return 0;
}

int kiln_perfscript_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d)
{
	struct reader r;
	int err;

	err = kiln_text_check(data, len, d);
	if (err)
		return err;
	memset(&r, 0, sizeof(r));
	r.p = p;
	r.d = d;
	r.data = data;
	r.end = data + len;
	r.t_min = INT64_MAX;
	r.t_max = INT64_MIN;
	if (!len)
		return kiln_diag(d, "line 1: no samples (the input is empty)");
	err = walk(&r, true);
	if (err)
		goto out;
	if (!r.ev.n) {
		/* No header at all: let the second pass say where. */
		struct hdr h = { 0 };

		err = event_add(&r.ev, &h);
		if (err)
			goto out;
	}
	err = set_types(p, &r.ev);
	if (err)
		goto out;
	r.values = calloc(p->ntypes, sizeof(*r.values));
	if (!r.values) {
		err = -ENOMEM;
		goto out;
	}
	r.k_pid = kiln_prof_interns(p, "pid");
	r.k_thread = kiln_prof_interns(p, "thread");
	r.k_thread_name = kiln_prof_interns(p, "thread_name");
	r.k_time = kiln_prof_interns(p, "time");
	r.k_ns = kiln_prof_interns(p, "nanoseconds");
	/* Time stamps since 1970 (kiln's own output of a recording) give
	 * the profile its date; perf's are since boot. */
	if (r.t_min != INT64_MAX && r.t_min >= 1000000000000000000ll)
		p->time_nanos = r.t_min;
	err = p->err;
	if (err)
		goto out;
	err = walk(&r, false);
	if (!err && r.t_max > r.t_min)
		p->duration_nanos = r.t_max - r.t_min;
	if (!err)
		err = p->err;
out:
	free(r.values);
	free(r.tl);
	free(r.stack);
	free(r.ev.v);
	kiln_linecache_release(&r.frames);
	kiln_linecache_release(&r.threads);
	kiln_linecache_release(&r.dsos);
	return err;
}
