/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Java's legacy profiles (format stage, by pprof's
 * profile/legacy_java_profile.go): the heapz and contentionz text, whose
 * samples name ids ("1 1 @ 0x3 0x4") that lines after them name ("0x3
 * com.example.f (F.java:12)"), and those names for the binary Java CPU
 * profile that format/gperf.c reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/legacy.h"
#include "profile/profile.h"
#include "util/diag.h"
#include "util/maps.h"
#include "util/buf.h"

/* ---- Java heapz and contentionz ---- */

bool kiln_legacy_match_java(const char *s, const char *e, const char *rest,
		       const char *end)
{
	trim(&s, &e);
	if (e - s == 15 && !memcmp(s, "--- heapz 1 ---", 15))
		return true;
	return e - s == 21 && !memcmp(s, "--- contentionz 1 ---", 21) &&
	       kiln_legacy_says_java(rest, end);
}

/* pprof's attributeRx, "([\w ]+)=([\w ]+)": word characters and spaces. */
static bool is_word(char c)
{
	return c == '_' || is_digit(c) || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z');
}

int kiln_legacy_parse_java(struct kiln_legacy_reader *r, const char *hs, const char *he)
{
	const char *s = NULL, *e = NULL, *ks, *ke, *vs, *ve;
	char unit[64] = "";
	bool heap, more, have_res = false;
	int64_t period = 0, ms;
	int err;

	trim(&hs, &he);
	heap = he - hs == 15;
	r->what = heap ? "Java heap profile" : "Java contention profile";
	while ((more = next_line(&r->c, &s, &e))) {
		const char *q;

		trim(&s, &e);
		if (s == e)
			continue;
		if (!attribute(s, e, &ks, &ke, &vs, &ve))
			break;
		for (q = ks; q < ke && (is_word(*q) || *q == ' '); q++)
			;
		if (q != ke || ks == ke)
			break;
		/* The value: up to the first character \w and ' ' miss. */
		for (q = vs; q < ve && (is_word(*q) || *q == ' '); q++)
			;
		ve = q;
		trim(&vs, &ve);
		if (key_is(ks, ke, "format")) {
			if (!key_is(vs, ve, "java"))
				return kiln_diag(r->d, "line %zu: %s: format "
						 "'%.*s', not java", r->c.lineno,
						 r->what, (int)(ve - vs > 40 ? 40 :
								ve - vs), vs);
		} else if (key_is(ks, ke, "resolution")) {
			snprintf(unit, sizeof(unit), "%.*s",
				 (int)(ve - vs > 60 ? 60 : ve - vs), vs);
			have_res = true;
		} else if (!heap && key_is(ks, ke, "sampling period")) {
			if (!parse_int0(vs, ve, &period))
				return kiln_diag(r->d, "line %zu: %s: bad sampling "
						 "period", r->c.lineno, r->what);
		} else if (!heap && key_is(ks, ke, "ms since reset")) {
			if (!parse_int0(vs, ve, &ms))
				return kiln_diag(r->d, "line %zu: %s: bad 'ms "
						 "since reset'", r->c.lineno,
						 r->what);
			r->p->duration_nanos = (int64_t)((uint64_t)ms * 1000000u);
		} else {
			return kiln_diag(r->d, "line %zu: %s: unknown attribute "
					 "'%.*s'", r->c.lineno, r->what,
					 (int)(ke - ks > 40 ? 40 : ke - ks), ks);
		}
	}
	if (!have_res)
		return kiln_diag(r->d, "line %zu: %s: no 'resolution' attribute "
				 "(the unit of the values)", r->c.lineno, r->what);
	{
		char t0[96], t1[96];
		const char *types[2] = { t0, t1 };

		snprintf(t0, sizeof(t0), heap ? "inuse_objects/count" :
			 "contentions/count");
		snprintf(t1, sizeof(t1), "%s/%s", heap ? "inuse_space" : "delay",
			 unit);
		err = heap ? kiln_legacy_set_types(r->p, types, 2, NULL, NULL, 0) :
		      kiln_legacy_set_types(r->p, types, 2, period ? "contentions" : NULL,
				period ? "count" : NULL, period);
		if (err)
			return err;
	}
	r->adjust = KILN_LEGACY_ADJUST_NONE;
	r->java = true;
	/* Samples "VALUE COUNT @ ID...", up to the first other line. */
	for (; more; more = next_line(&r->c, &s, &e)) {
		int64_t a, b;
		const char *q;
		size_t a0 = r->naddrs;
		struct kiln_legacy_sample *sm;

		trim(&s, &e);
		if (s == e)
			continue;
		q = s;
		if (!scan_int(&q, e, false, &a) || q == e || !is_space(*q) ||
		    (q = skip_spaces(q, e), !scan_int(&q, e, false, &b)) ||
		    q == e || !is_space(*q) || (q = skip_spaces(q, e), q == e) ||
		    *q != '@' || q + 1 == e || !is_space(q[1]))
			break;
		for (q++; q < e && (*q == ' ' || *q == 'x' || is_digit(*q) ||
				    (*q >= 'a' && *q <= 'f')); )
			q++;
		err = kiln_legacy_scan_addrs(r, s, q);
		if (err)
			return err;
		err = kiln_legacy_new_sample(r, a0, &sm);
		if (err)
			return err;
		/* Java's columns are the other way round: value, then count. */
		sm->v[0] = b;
		sm->v[1] = a;
		if (heap) {
			if (b == 0)
				return kiln_diag(r->d, "line %zu: %s: the count "
						 "must not be 0", r->c.lineno,
						 r->what);
			sm->has_bytes = true;
			sm->bytes = a / b;
			/* Java's heapz samples every 512 KiB on average. */
			if (!kiln_legacy_scale_heap(&sm->v[0], &sm->v[1], 524288))
				return kiln_diag(r->d, "line %zu: %s: values too "
						 "large once unsampled",
						 r->c.lineno, r->what);
		} else if (period) {
			if (__builtin_mul_overflow(sm->v[0], period, &sm->v[0]) ||
			    __builtin_mul_overflow(sm->v[1], period, &sm->v[1]))
				return kiln_diag(r->d, "line %zu: %s: values too "
						 "large once unsampled",
						 r->c.lineno, r->what);
		}
	}
	/* The names of the ids follow, from this line on. */
	r->rest = s && more ? s : r->c.end;
	r->rest_line = r->c.lineno;
	return 0;
}


/* ---- Java names ---- */

struct kiln_legacy_jname {
	uint64_t id;
	uint32_t loc;
};

static int cmp_jname(const void *a, const void *b)
{
	const struct kiln_legacy_jname *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * One line "0xID NAME [(FILE:LINE)]" of the Java names into a location:
 * pprof's parseJavaLocations, which gives functions the name and file,
 * a shared library's base name as file when no line is given, and "STUB"
 * to JIT stubs.
 */
static uint32_t java_loc(struct kiln_prof *p, const char *s, const char *e)
{
	const char *fs = NULL, *fe = NULL, *ne = e, *q;
	int64_t line = 0;
	struct kiln_line ln;
	uint32_t name, file = 0;

	if (e > s && e[-1] == ')') {
		const char *open = NULL;

		/* The last " (" of the line opens the file part. */
		for (q = e - 1; q > s; q--)
			if (*q == '(' && is_space(q[-1])) {
				open = q;
				break;
			}
		if (open) {
			const char *colon = NULL, *x;

			fs = open + 1;
			fe = e - 1;
			for (x = fe; x > fs; x--)
				if (x[-1] == ':') {
					colon = x - 1;
					break;
				}
			if (colon && colon > fs) {
				const char *d = colon + 1;
				int64_t n;

				if (d < fe && *d == '-')
					d++;
				for (x = d; x < fe && is_digit(*x); x++)
					;
				if (x == fe && x > d) {
					const char *v = colon + 1;

					fe = colon;
					if (scan_int(&v, e - 1, true, &n) && n > 0)
						line = n;
				} else {
					colon = NULL;
				}
			}
			if (!colon) {
				/* A path: only its base name. */
				for (x = fe; x > fs && x[-1] != '/'; x--)
					;
				fs = x;
			}
			ne = open - 1;
			while (ne > s && is_space(ne[-1]))
				ne--;
		}
	}
	if (!fs && contains(s, e, "generated stub/JIT"))
		name = kiln_prof_interns(p, "STUB");
	else
		name = kiln_prof_intern(p, s, (size_t)(ne - s));
	if (fs)
		file = kiln_prof_intern(p, fs, (size_t)(fe - fs));
	ln.function = kiln_prof_function(p, name, name, file, 0);
	ln.line = line;
	return ln.function ? kiln_prof_location(p, 0, 0, &ln, 1) : 0;
}

int kiln_legacy_java_names(struct kiln_prof *p, const char *text, size_t len,
			   struct kiln_legacy_names *names)
{
	struct kiln_legacy_cursor c = { text, text + len, 0 };
	const char *s, *e;
	struct kiln_legacy_jname *v = NULL;
	size_t n = 0, alloc = 0;

	memset(names, 0, sizeof(*names));
	while (next_line(&c, &s, &e)) {
		const char *q;
		bool ok = true;
		uint64_t id;

		trim(&s, &e);
		if (!has_prefix(s, e, "0x"))
			continue;
		q = s + 2;
		id = kiln_scan_hex(&q, e, &ok);
		if (!ok || q == e || !is_space(*q))
			continue;
		q = skip_spaces(q, e);
		if (KILN_GROW(v, alloc, n + 1, 64)) {
			free(v);
			return -ENOMEM;
		}
		v[n].id = id;
		v[n].loc = java_loc(p, q, e);
		if (!v[n].loc) {
			free(v);
			return p->err ? p->err : -ENOMEM;
		}
		n++;
	}
	/* The first line of an id names it, as pprof's map keeps the last
	 * write... of the location it already has: keep the first. */
	if (n) {
		size_t i, j;

		qsort(v, n, sizeof(*v), cmp_jname);
		for (i = j = 1; i < n; i++)
			if (v[i].id != v[j - 1].id)
				v[j++] = v[i];
		n = j;
	}
	names->v = v;
	names->n = n;
	return 0;
}

uint32_t kiln_legacy_names_loc(struct kiln_prof *p,
			       const struct kiln_legacy_names *names,
			       uint64_t id)
{
	size_t lo = 0, hi = names->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (names->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < names->n && names->v[lo].id == id)
		return names->v[lo].loc;
	/* An id without a name keeps its number as address. */
	return kiln_prof_location(p, 0, id, NULL, 0);
}

void kiln_legacy_names_release(struct kiln_legacy_names *names)
{
	free(names->v);
	names->v = NULL;
	names->n = 0;
}

