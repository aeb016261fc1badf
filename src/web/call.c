/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request plumbing of kiln serve's API (web stage): arguments, the
 * selection, JSON output.  See call.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/top.h"
#include "util/buf.h"
#include "web/call.h"

void call_add(struct call *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (kiln_buf_vaddf(c->out, fmt, ap))
		c->err = -ENOMEM;
	va_end(ap);
}

void call_add_str(struct call *c, const char *s)
{
	if (kiln_buf_add_json(c->out, s, strlen(s)))
		c->err = -ENOMEM;
}

/* A JSON error answer: status and {"error": "..."}; returns status. */
int call_fail(struct call *c, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kiln_buf_reset(c->out);
	call_add(c, "{\"error\":");
	call_add_str(c, msg);
	call_add(c, "}\n");
	c->status = status;
	return status;
}

const char *call_arg(struct call *c, const char *key)
{
	return c->r->arg ? c->r->arg(c->r->ctx, key) : NULL;
}

/* A whole-number argument in [lo, hi]; def when absent.  -1 when bad
 * (the 400 answer is made). */
int call_num_arg(struct call *c, const char *key, long lo, long hi,
		   long def, long *out)
{
	const char *s = call_arg(c, key);
	char *end;
	long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < lo || v > hi) {
		call_fail(c, 400, "bad %s '%s': want a whole number from %ld to %ld",
		     key, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int call_bool_arg(struct call *c, const char *key, bool *out)
{
	long v;

	if (call_num_arg(c, key, 0, 1, 0, &v))
		return -1;
	*out = v;
	return 0;
}

/* A time argument: nanoseconds, a whole number >= 0; *set false when
 * absent.  -1 when bad (the 400 answer is made). */
static int call_time_arg(struct call *c, const char *key, int64_t *out, bool *set)
{
	const char *s = call_arg(c, key);
	char *end;
	long long v;

	*set = s && *s;
	if (!*set)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < 0) {
		call_fail(c, 400, "bad %s '%s': want nanoseconds since the start, "
		     "a whole number >= 0", key, s);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * The selection every view works on: p, type, focus, ignore and, with
 * ranged, the time range t0, t1.  -1 when the request is bad (answer
 * made).
 */
int call_selection_of(struct call *c, bool ranged, struct web_view **v)
{
	return call_selection_as(c, ranged, false, v);
}

int call_selection_as(struct call *c, bool ranged, bool weighed_ok,
		      struct web_view **v)
{
	struct web_sel s = { 0 };
	struct kiln_prof *prof;
	bool has0 = false, has1 = false;
	long p, seq;
	int err;

	if (call_num_arg(c, "p", 0, c->m->n ? (long)c->m->n - 1 : 0, 0, &p))
		return -1;
	if (!c->m->n) {
		call_fail(c, 404, "no profiles are loaded");
		return -1;
	}
	prof = c->m->in[p].prof;
	s.p = (unsigned)p;
	s.type = kiln_prof_type_index(prof, call_arg(c, "type"), &c->d);
	if (s.type < 0) {
		call_fail(c, 400, "bad type: %s", c->d.msg);
		return -1;
	}
	s.focus = call_arg(c, "focus");
	s.ignore = call_arg(c, "ignore");
	s.hide = call_arg(c, "hide");
	s.labels = call_arg(c, "labels");
	s.group = call_arg(c, "group");
	s.tf = call_arg(c, "tf");
	if (ranged && (call_time_arg(c, "t0", &s.t0, &has0) ||
		       call_time_arg(c, "t1", &s.t1, &has1)))
		return -1;
	if (has0 || has1) {
		if (!has0 || !has1 || s.t0 >= s.t1) {
			call_fail(c, 400, "a time range needs t0 < t1 (nanoseconds)");
			return -1;
		}
		if (!prof->nevents && !kiln_prof_find_str(prof, "time", 4) &&
		    !c->m->in[p].trace) {
			call_fail(c, 400, "'%s' has no sample times: no time range",
			     c->m->in[p].name);
			return -1;
		}
		s.ranged = true;
	}
	s.weighed_ok = weighed_ok;
	s.page = call_arg(c, "page");
	if (call_num_arg(c, "seq", 0, LONG_MAX, 0, &seq))
		return -1;
	s.seq = (uint64_t)seq;
	if (c->nheld == sizeof(c->held) / sizeof(c->held[0])) {
		c->err = -ENOMEM;	/* a bug: one selection a call */
		return -1;
	}
	c->d.msg[0] = '\0';
	err = kiln_web_view(c->m, &s, v, &c->d);
	if (!err)
		c->held[c->nheld++] = *v;
	if (err == -EINVAL) {
		call_fail(c, 400, "%s", c->d.msg);
		return -1;
	}
	if (err == -ECANCELED) {
		/* 409: the page has moved on; it drops this answer. */
		if (c->d.msg[0])
			call_fail(c, 409, "cancelled: %s", c->d.msg);
		else
			call_fail(c, 409, "cancelled: another time range of '%s' "
				  "was asked for meanwhile", c->m->in[p].name);
		return -1;
	}
	if (err) {
		c->err = err;
		return -1;
	}
	return 0;
}

void call_release(struct call *c)
{
	while (c->nheld)
		kiln_web_view_done(c->m, c->held[--c->nheld]);
}

int call_selection(struct call *c, struct web_view **v)
{
	return call_selection_of(c, true, v);
}

int call_selection_weighed(struct call *c, struct web_view **v)
{
	return call_selection_as(c, true, true, v);
}

const char *call_type_name(const struct kiln_prof *p, int type)
{
	return kiln_prof_str(p, p->types[type].type);
}

const char *call_unit_name(const struct kiln_prof *p, int type)
{
	return kiln_prof_str(p, p->types[type].unit);
}

void call_add_value_str(struct call *c, int64_t v, const char *unit)
{
	char s[32];

	kiln_value_str(v, unit, s, sizeof(s));
	call_add_str(c, s);
}

int call_frac_arg(struct call *c, const char *key, double def, double *out)
{
	const char *s = call_arg(c, key);
	char *end;
	double v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !(v >= 0 && v <= 1)) {
		call_fail(c, 400, "bad %s '%s': want a fraction from 0 to 1", key, s);
		return -1;
	}
	*out = v;
	return 0;
}


bool call_memo_get(struct call *c, struct web_view *v, int which, long arg)
{
	if (!v->memo_ok[which] || v->memo_arg[which] != arg)
		return false;
	if (kiln_buf_add(c->out, v->memo[which].data, v->memo[which].len))
		c->err = -ENOMEM;
	return true;
}

void call_memo_put(struct call *c, struct web_view *v, int which, long arg,
		   size_t from)
{
	v->memo_ok[which] = false;
	if (c->err)
		return;
	kiln_buf_reset(&v->memo[which]);
	/* Not kept when out of memory: made again next time. */
	if (!kiln_buf_add(&v->memo[which], c->out->data + from, c->out->len - from)) {
		v->memo_arg[which] = arg;
		v->memo_ok[which] = true;
	}
}
