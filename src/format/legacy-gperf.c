/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parsers of the gperftools and Go legacy text profiles (format
 * stage, table in format/legacy.c): heap, growth and fragmentation
 * profiles, Go's count profiles, thread dumps and contention profiles, by
 * the rules of pprof's profile/legacy_profile.go.  Each collects its
 * samples with raw addresses and leaves the memory map for
 * format/legacy.c to place them in.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/legacy.h"
#include "profile/profile.h"
#include "util/diag.h"

/* ---- heap, growth and fragmentation profiles ---- */

/* "N: M [" ... : the two numbers of "COUNT: BYTES". */
static bool scan_pair(const char **s, const char *e, bool neg_ok, int64_t *a,
		      int64_t *b, const char **as, const char **ae)
{
	const char *q = skip_spaces(*s, e);

	if (as)
		*as = q;
	if (!scan_int(&q, e, neg_ok, a))
		return false;
	if (ae)
		*ae = q;
	if (q == e || *q != ':')
		return false;
	q = skip_spaces(q + 1, e);
	if (!scan_int(&q, e, neg_ok, b))
		return false;
	*s = q;
	return true;
}

/* "INUSE: BYTES [ALLOC: BYTES]" at *s; the texts of the header's four
 * numbers when t is given (pprof compares them as text). */
static bool scan_heap_counts(const char **s, const char *e, bool neg_ok,
			     int64_t v[4], const char *t[8])
{
	const char *q = *s;

	if (!scan_pair(&q, e, neg_ok, &v[0], &v[1], t ? &t[0] : NULL,
		       t ? &t[1] : NULL))
		return false;
	if (t) {
		/* The text of the second number: back from q over digits. */
		t[3] = q;
		for (t[2] = q; t[2] > *s && is_digit(t[2][-1]); t[2]--)
			;
	}
	q = skip_spaces(q, e);
	if (q == e || *q != '[')
		return false;
	q++;
	if (!scan_pair(&q, e, false, &v[2], &v[3], t ? &t[4] : NULL,
		       t ? &t[5] : NULL))
		return false;
	if (t) {
		t[7] = q;
		for (t[6] = q; t[6] > *s && is_digit(t[6][-1]); t[6]--)
			;
	}
	q = skip_spaces(q, e);
	if (q == e || *q != ']')
		return false;
	*s = q + 1;
	return true;
}

static bool same_text(const char *a, const char *ae, const char *b,
		      const char *be)
{
	return ae - a == be - b && !memcmp(a, b, (size_t)(ae - a));
}

static bool is_zero_text(const char *a, const char *ae)
{
	return ae - a == 1 && *a == '0';
}

enum heap_kind { HEAP_NONE, HEAP_SAMPLED, HEAP_EXACT, HEAP_GROWTH };

/*
 * The header "heap profile: N: M [ A: B] @ KIND[/RATE]".  KIND heap_v2 and
 * heapz_v2 are sampled at RATE, Go's "heap" at RATE/2, "heapprofile"
 * (gperftools' HEAPPROFILE) not at all; growthz and fragmentationz are
 * cumulative and unsampled.  The allocation columns are types of their own
 * when they differ from the in-use ones.
 */
static enum heap_kind heap_header(const char *s, const char *e,
				  int64_t *rate, bool *has_alloc)
{
	static const char tag[] = "heap profile:";
	const char *t[8], *q, *w;
	int64_t v[4], r = 0;

	for (q = s; q < e && !has_prefix(q, e, tag); q++)
		;
	if (q == e)
		return HEAP_NONE;
	q += sizeof(tag) - 1;
	if (!scan_heap_counts(&q, e, false, v, t))
		return HEAP_NONE;
	q = skip_spaces(q, e);
	if (q == e || *q != '@')
		return HEAP_NONE;
	q = skip_spaces(q + 1, e);
	*has_alloc = false;
	if (has_prefix(q, e, "growth") || has_prefix(q, e, "fragmentation"))
		return HEAP_GROWTH;
	if (!has_prefix(q, e, "heap"))
		return HEAP_NONE;
	for (w = q + 4; w < e && (*w == '_' || is_digit(*w) ||
				  (*w >= 'a' && *w <= 'z')); w++)
		;
	if (!same_text(t[4], t[5], t[0], t[1]) && !is_zero_text(t[4], t[5]))
		*has_alloc = true;
	if (!same_text(t[6], t[7], t[2], t[3]) && !is_zero_text(t[6], t[7]))
		*has_alloc = true;
	{
		const char *rs = w < e && *w == '/' ? w + 1 : w;

		if (rs < e && is_digit(*rs) && !scan_int(&rs, e, false, &r))
			return HEAP_NONE;
	}
	if ((w - q == 8 && !memcmp(q, "heapz_v2", 8)) ||
	    (w - q == 7 && !memcmp(q, "heap_v2", 7))) {
		*rate = r;
		return HEAP_SAMPLED;
	}
	if (w - q == 4) {
		*rate = r / 2;
		return HEAP_SAMPLED;
	}
	if (w - q == 11 && !memcmp(q, "heapprofile", 11)) {
		*rate = 1;
		return HEAP_EXACT;
	}
	return HEAP_NONE;
}

bool kiln_legacy_match_heap(const char *s, const char *e, const char *rest,
		       const char *end)
{
	int64_t rate;
	bool alloc;

	(void)rest;
	(void)end;
	return heap_header(s, e, &rate, &alloc) != HEAP_NONE;
}

/* pprof's addValues: the count and bytes of one column pair. */
static int heap_values(struct kiln_legacy_reader *r, int64_t count, int64_t size,
		       bool sampled, int64_t rate, const char *label,
		       int64_t *out, int64_t *blocksize)
{
	if (count == 0 && size != 0)
		return kiln_diag(r->d, "line %zu: %s: %s count was 0 but %s "
				 "bytes was %" PRId64, r->c.lineno, r->what,
				 label, label, size);
	if (count != 0) {
		*blocksize = size / count;
		if (count == -1 && size == INT64_MIN)
			*blocksize = 0;
		if (sampled && !kiln_legacy_scale_heap(&count, &size, rate))
			return kiln_diag(r->d, "line %zu: %s: %s values too "
					 "large once unsampled", r->c.lineno,
					 r->what, label);
	}
	out[0] = count;
	out[1] = size;
	return 0;
}

int kiln_legacy_parse_heap(struct kiln_legacy_reader *r, const char *hs, const char *he)
{
	static const char *const t4[] = { "alloc_objects/count",
		"alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes" };
	static const char *const t2[] = { "objects/count", "space/bytes" };
	const char *s, *e;
	int64_t rate = 1;
	bool has_alloc = false;
	enum heap_kind kind = heap_header(hs, he, &rate, &has_alloc);
	int err;

	if (kind == HEAP_GROWTH) {
		r->what = "growth profile";
		rate = 1;
	}
	err = kiln_legacy_set_types(r->p, has_alloc ? t4 : t2, has_alloc ? 4 : 2,
			"space", "bytes", rate);
	if (err)
		return err;
	r->adjust = KILN_LEGACY_ADJUST_ALL;
	while (next_line(&r->c, &s, &e)) {
		int64_t v[4], vals[4], bs = 0;
		const char *q;
		size_t a0 = r->naddrs;
		struct kiln_legacy_sample *sm;

		trim(&s, &e);
		if (s == e || *s == '#')
			continue;
		if (is_map_sentinel(s, e)) {
			kiln_legacy_find_map(r, s, e);
			break;
		}
		q = s;
		if (!scan_heap_counts(&q, e, true, v, NULL) || q == e ||
		    *q != ' ' || q + 1 == e || q[1] != '@')
			return kiln_diag(r->d, "line %zu: %s: expected 'COUNT: "
					 "BYTES [COUNT: BYTES] @ ADDRESS...'",
					 r->c.lineno, r->what);
		/* pprof reads the addresses up to the first character that
		 * cannot be part of one. */
		for (q += 2; q < e && (*q == ' ' || *q == 'x' || is_digit(*q) ||
				       (*q >= 'a' && *q <= 'f')); )
			q++;
		if (has_alloc) {
			err = heap_values(r, v[2], v[3], kind == HEAP_SAMPLED,
					  rate, "allocation", vals, &bs);
			if (err)
				return err;
		}
		err = heap_values(r, v[0], v[1], kind == HEAP_SAMPLED, rate,
				  "inuse", vals + (has_alloc ? 2 : 0), &bs);
		if (err)
			return err;
		err = kiln_legacy_scan_addrs(r, s, q);
		if (err)
			return err;
		err = kiln_legacy_new_sample(r, a0, &sm);
		if (err)
			return err;
		memcpy(sm->v, vals, sizeof(vals));
		sm->has_bytes = true;
		sm->bytes = bs;
	}
	return 0;
}


/* ---- Go's goroutine and threadcreate profiles ---- */

/* "NAME profile: total N": the name, or false. */
static bool count_header(const char *s, const char *e, const char **ns,
			 const char **ne)
{
	static const char tag[] = " profile: total ";
	const char *q = s;
	int64_t n;

	trim(&s, &e);
	for (q = s; q < e && !is_space(*q); q++)
		;
	if (q == s || !has_prefix(q, e, tag))
		return false;
	*ns = s;
	*ne = q;
	q += sizeof(tag) - 1;
	return scan_int(&q, e, false, &n) && q == e;
}

bool kiln_legacy_match_count(const char *s, const char *e, const char *rest,
			const char *end)
{
	const char *ns, *ne;

	(void)rest;
	(void)end;
	return count_header(s, e, &ns, &ne);
}

int kiln_legacy_parse_count(struct kiln_legacy_reader *r, const char *hs, const char *he)
{
	const char *s, *e, *ns, *ne;
	char name[128];
	const char *types[1];
	int err;

	count_header(hs, he, &ns, &ne);
	snprintf(name, sizeof(name), "%.*s/count",
		 (int)(ne - ns > 100 ? 100 : ne - ns), ns);
	types[0] = name;
	err = kiln_prof_set_types_str(r->p, types, 1);
	if (err)
		return err;
	r->p->period_type = r->p->types[0];
	r->p->period = 1;
	r->adjust = KILN_LEGACY_ADJUST_ALL;
	while (next_line(&r->c, &s, &e)) {
		const char *q;
		int64_t n;
		size_t a0 = r->naddrs;
		struct kiln_legacy_sample *sm;

		if (blank_or_comment(s, e))
			continue;
		if (has_prefix(s, e, "---")) {
			kiln_legacy_find_map(r, s, e);
			break;
		}
		trim(&s, &e);
		q = s;
		if (!scan_int(&q, e, false, &n) || !has_prefix(q, e, " @ 0x"))
			return kiln_diag(r->d, "line %zu: %s: expected 'COUNT @ "
					 "0xADDRESS...'", r->c.lineno, r->what);
		/* Only " 0x..." words after the '@', as pprof's countRE. */
		for (q += 2; q < e; ) {
			const char *w = q + 1;

			if (*q != ' ' || !has_prefix(w, e, "0x") || w + 2 == e)
				break;
			for (w += 2; w < e && (is_digit(*w) ||
					       (*w >= 'a' && *w <= 'f')); w++)
				;
			if (w < e && *w != ' ')
				break;
			q = w;
		}
		if (q != e)
			return kiln_diag(r->d, "line %zu: %s: expected 'COUNT @ "
					 "0xADDRESS...'", r->c.lineno, r->what);
		err = kiln_legacy_scan_addrs(r, s, e);
		if (err)
			return err;
		err = kiln_legacy_new_sample(r, a0, &sm);
		if (err)
			return err;
		sm->v[0] = n;
	}
	return 0;
}


/* ---- thread dumps ---- */

/* "--- Thread HEX (name: NAME/TID) stack: ---" */
static bool thread_start(const char *s, const char *e)
{
	static const char tag[] = "--- Thread ";
	static const char tail[] = ") stack: ---";
	const char *q;

	for (q = s; q < e && !has_prefix(q, e, tag); q++)
		;
	if (q == e)
		return false;
	q += sizeof(tag) - 1;
	if (q == e || !is_xdigit(*q))
		return false;
	while (q < e && is_xdigit(*q))
		q++;
	if (!has_prefix(q, e, " (name: "))
		return false;
	for (; q < e; q++) {
		const char *d;

		if (*q != '/')
			continue;
		for (d = q + 1; d < e && is_digit(*d); d++)
			;
		if (d > q + 1 && has_prefix(d, e, tail))
			return true;
	}
	return false;
}

static bool threadz_header(const char *s, const char *e)
{
	const char *q;
	int64_t n;

	for (; s < e; s++) {
		if (!has_prefix(s, e, "--- threadz "))
			continue;
		q = s + 12;
		if (scan_int(&q, e, false, &n) && has_prefix(q, e, " ---"))
			return true;
	}
	return false;
}

bool kiln_legacy_match_thread(const char *s, const char *e, const char *rest,
			 const char *end)
{
	(void)rest;
	(void)end;
	return threadz_header(s, e) || thread_start(s, e);
}

int kiln_legacy_parse_thread(struct kiln_legacy_reader *r, const char *hs, const char *he)
{
	static const char *const types[] = { "thread/count" };
	const char *s = hs, *e = he;
	bool more = true;
	int err;

	err = kiln_legacy_set_types(r->p, types, 1, "thread", "count", 1);
	if (err)
		return err;
	r->adjust = KILN_LEGACY_ADJUST_CALLERS;
	r->dedup_leaf = true;
	/* After "--- threadz N ---", comments until the first thread. */
	if (threadz_header(hs, he)) {
		while ((more = next_line(&r->c, &s, &e)) &&
		       !is_map_sentinel(s, e) && !has_prefix(s, e, "-"))
			;
	}
	while (more && !is_map_sentinel(s, e)) {
		size_t a0 = r->naddrs;
		bool same = false;
		struct kiln_legacy_sample *sm;

		if (has_prefix(s, e, "---- no stack trace for"))
			break;
		if (!thread_start(s, e))
			return kiln_diag(r->d, "line %zu: %s: expected '--- "
					 "Thread ID (name: NAME/TID) stack: ---'",
					 r->c.lineno, r->what);
		/* The stack: addresses in every line up to the next "---". */
		while ((more = next_line(&r->c, &s, &e))) {
			const char *ts = s, *te = e;

			trim(&ts, &te);
			if (ts == te)
				continue;
			if (has_prefix(ts, te, "---") || is_map_sentinel(ts, te))
				break;
			if (contains(ts, te, "same as previous thread")) {
				same = true;
				continue;
			}
			err = kiln_legacy_scan_addrs(r, ts, te);
			if (err)
				return err;
		}
		if (same || r->naddrs == a0) {
			/* Another thread of the previous stack. */
			r->naddrs = a0;
			if (r->ns)
				r->s[r->ns - 1].v[0]++;
			continue;
		}
		err = kiln_legacy_new_sample(r, a0, &sm);
		if (err)
			return err;
		sm->v[0] = 1;
	}
	if (more)
		kiln_legacy_find_map(r, s, e);
	return 0;
}


/* ---- contention profiles ---- */

static bool contention_header(const char *s, const char *e)
{
	trim(&s, &e);
	return has_prefix(s, e, "--- contentionz ") ||
	       has_prefix(s, e, "--- mutex:") ||
	       has_prefix(s, e, "--- contention:");
}

bool kiln_legacy_match_contention(const char *s, const char *e, const char *rest,
			     const char *end)
{
	return contention_header(s, e) && !kiln_legacy_says_java(rest, end);
}

int kiln_legacy_parse_contention(struct kiln_legacy_reader *r, const char *hs, const char *he)
{
	static const char *const types[] = { "contentions/count",
					     "delay/nanoseconds" };
	const char *s = NULL, *e = NULL, *ks, *ke, *vs, *ve;
	int64_t cpu_hz = 0, period = 1, ms;
	bool more;
	int err;

	(void)hs;
	(void)he;
	/* "key = value" attributes before the samples. */
	while ((more = next_line(&r->c, &s, &e))) {
		trim(&s, &e);
		if (s == e || *s == '#')
			continue;
		if (has_prefix(s, e, "---") || !attribute(s, e, &ks, &ke, &vs, &ve))
			break;
		if (key_is(ks, ke, "cycles/second")) {
			if (!parse_int0(vs, ve, &cpu_hz))
				goto bad_value;
		} else if (key_is(ks, ke, "sampling period")) {
			if (!parse_int0(vs, ve, &period))
				goto bad_value;
		} else if (key_is(ks, ke, "ms since reset")) {
			if (!parse_int0(vs, ve, &ms))
				goto bad_value;
			r->p->duration_nanos = (int64_t)((uint64_t)ms * 1000000u);
		} else if (!key_is(ks, ke, "discarded samples")) {
			return kiln_diag(r->d, "line %zu: %s: unknown attribute "
					 "'%.*s'", r->c.lineno, r->what,
					 (int)(ke - ks > 40 ? 40 : ke - ks), ks);
		}
	}
	err = kiln_legacy_set_types(r->p, types, 2, "contentions", "count", period);
	if (err)
		return err;
	r->adjust = KILN_LEGACY_ADJUST_ALL;
	for (; more; more = next_line(&r->c, &s, &e)) {
		int64_t delay, count, v0, v1;
		const char *q;
		size_t a0 = r->naddrs;
		struct kiln_legacy_sample *sm;

		trim(&s, &e);
		if (has_prefix(s, e, "---") || is_map_sentinel(s, e))
			break;
		if (s == e || *s == '#')
			continue;
		q = s;
		if (!scan_int(&q, e, false, &delay) || (q = skip_spaces(q, e),
		    !scan_int(&q, e, false, &count)) ||
		    !has_prefix(q, e, " @"))
			return kiln_diag(r->d, "line %zu: %s: expected 'DELAY "
					 "COUNT @ ADDRESS...'", r->c.lineno,
					 r->what);
		for (q += 2; q < e && (*q == ' ' || *q == 'x' || is_digit(*q) ||
				       (*q >= 'a' && *q <= 'f')); )
			q++;
		/* Unsampled as pprof does: delays from cycles to nanoseconds
		 * at cycles/second, both counts times the period. */
		v0 = count;
		v1 = delay;
		if (period > 0) {
			if (cpu_hz > 0 &&
			    !to_int64((double)delay * (double)period /
				      ((double)cpu_hz / 1e9), &v1))
				goto too_large;
			if (__builtin_mul_overflow(count, period, &v0))
				goto too_large;
		}
		err = kiln_legacy_scan_addrs(r, s, q);
		if (err)
			return err;
		err = kiln_legacy_new_sample(r, a0, &sm);
		if (err)
			return err;
		sm->v[0] = v0;
		sm->v[1] = v1;
	}
	if (more)
		kiln_legacy_find_map(r, s, e);
	return 0;
too_large:
	return kiln_diag(r->d, "line %zu: %s: values too large once unsampled",
			 r->c.lineno, r->what);
bad_value:
	return kiln_diag(r->d, "line %zu: %s: '%.*s' is not a number",
			 r->c.lineno, r->what, (int)(ve - vs > 40 ? 40 : ve - vs),
			 vs);
}

