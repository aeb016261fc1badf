/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` sample headers (format stage): the header line
 *
 *     COMM  [PID/]TID [CPU] TIME: [PERIOD] EVENT[:MODS]: [IP SYM+OFF (DSO)]
 *
 * parsed into its fields, whatever perf's -F left out, and the events the
 * headers name turned into the profile's sample types (docs/formats.md).
 * The reader that walks the lines is perfscript.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/perfscriptint.h"
#include "profile/profile.h"
#include "util/buf.h"

/* ---- the sample header ---- */

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
bool kiln_perfscript_parse_header(const char *s, const char *e,
				  struct hdr *h)
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

long kiln_perfscript_event_find(struct events *ev, const char *name,
				size_t len)
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

int kiln_perfscript_event_add(struct events *ev, const struct hdr *h)
{
	long i = kiln_perfscript_event_find(ev, h->event, h->event_len);

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
int kiln_perfscript_set_types(struct kiln_prof *p, struct events *ev)
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
