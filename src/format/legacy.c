/*
 * The legacy text profiles `go tool pprof` reads (format stage), read by
 * the rules of pprof's profile/legacy_profile.go and
 * legacy_java_profile.go, one parser per format in one table:
 *
 *   heap        gperftools/tcmalloc heap profiles ("heap profile: ... @
 *               heapprofile", "heap_v2/RATE", "heapz_v2/RATE"), growth
 *               ("@ growthz") and fragmentation profiles, Go's legacy text
 *               heap profile ("@ heap/2*RATE")
 *   count       Go's goroutine and threadcreate profiles ("threadcreate
 *               profile: total 7", then "COUNT @ ADDR...")
 *   thread      gperftools-style thread dumps ("--- threadz 1 ---",
 *               "--- Thread ID (name: N/TID) stack: ---")
 *   contention  C++ lock contention ("--- contentionz 1 ---") and Go's
 *               "--- mutex:" / "--- contention:" text
 *   java        Java heapz and contentionz text ("format = java"); the
 *               Java CPU profile is binary and read by format/gperf.c,
 *               which takes its names from kiln_legacy_java_names()
 *
 * Each parser collects its samples with raw addresses first, since the
 * memory map (the "MAPPED_LIBRARIES:" or "--- Memory map: ---" section)
 * follows the samples and pprof's rules for which mapping holds an
 * address may move a mapping's start; then the mappings, locations and
 * samples are added to the profile and the addresses symbolized from the
 * mapped files, as for gperftools CPU profiles.
 *
 * Values, sample types and units are pprof's: heap samples are unsampled
 * by 1/(1-exp(-avgsize/rate)) per sample and carry the numeric label
 * "bytes" (the block size); return addresses are stored minus 1 where
 * pprof stores them so.  Unlike pprof, leading blank and '#' lines and a
 * UTF-8 byte order mark are skipped before every header, CRLF line ends
 * are accepted, and a file may end without its memory map.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/legacy.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/maps.h"

/* The deepest stack taken, as the other readers (gperftools keeps 64). */
#define MAX_DEPTH 4096

/* ---- lines ---- */

struct cursor {
	const char *p, *end;
	size_t lineno;		/* of the line last returned */
};

/* The next line [*s, *e), without its '\n' and a '\r' before it. */
static bool next_line(struct cursor *c, const char **s, const char **e)
{
	const char *nl;

	if (c->p >= c->end)
		return false;
	nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	*s = c->p;
	*e = nl ? nl : c->end;
	c->p = nl ? nl + 1 : c->end;
	if (*e > *s && (*e)[-1] == '\r')
		(*e)--;
	c->lineno++;
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

static const char *skip_spaces(const char *s, const char *e)
{
	while (s < e && is_space(*s))
		s++;
	return s;
}

static bool blank_or_comment(const char *s, const char *e)
{
	trim(&s, &e);
	return s == e || *s == '#';
}

static bool has_prefix(const char *s, const char *e, const char *pre)
{
	size_t n = strlen(pre);

	return (size_t)(e - s) >= n && !memcmp(s, pre, n);
}

static bool contains(const char *s, const char *e, const char *what)
{
	size_t n = strlen(what);

	for (; (size_t)(e - s) >= n; s++)
		if (*s == *what && !memcmp(s, what, n))
			return true;
	return false;
}

/* pprof's memory map sentinels, anywhere in a line. */
static bool is_map_sentinel(const char *s, const char *e)
{
	return contains(s, e, "--- Memory map: ---") ||
	       contains(s, e, "MAPPED_LIBRARIES:");
}

/* Decimal digits at *s into *v (with an optional '-' if neg_ok); false
 * on none or on overflow of int64_t. */
static bool scan_int(const char **s, const char *e, bool neg_ok, int64_t *v)
{
	const char *q = *s;
	bool neg = false;
	uint64_t x = 0;

	if (neg_ok && q < e && *q == '-') {
		neg = true;
		q++;
	}
	if (q == e || !is_digit(*q))
		return false;
	for (; q < e && is_digit(*q); q++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*q - '0');
	}
	if (x > (uint64_t)INT64_MAX + neg)
		return false;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	*s = q;
	return true;
}

/* An attribute value as Go's strconv.ParseInt(s, 0, 64) takes it:
 * decimal, 0x hex or 0 octal, the whole text. */
static bool parse_int0(const char *s, const char *e, int64_t *v)
{
	char buf[32], *end;
	long long x;

	if (s == e || (size_t)(e - s) >= sizeof(buf))
		return false;
	memcpy(buf, s, (size_t)(e - s));
	buf[e - s] = '\0';
	if (buf[0] == ' ' || buf[0] == '+')
		return false;
	errno = 0;
	x = strtoll(buf, &end, 0);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

/* A double as int64_t, as Go's int64(f) gives it for values in range;
 * false where C's conversion would be undefined. */
static bool to_int64(double f, int64_t *v)
{
	if (!(f > -9223372036854775808.0 && f < 9223372036854775808.0))
		return false;
	*v = (int64_t)f;
	return true;
}

/* ---- the reader's state ---- */

/* A sample as parsed, before locations exist. */
struct lsample {
	size_t addr;		/* first of n in r->addrs, leaf first */
	uint32_t n;
	bool has_bytes;
	int64_t bytes;		/* the "bytes" label: block size */
	int64_t v[4];
};

enum adjust {
	ADJUST_ALL,		/* every address is a return address */
	ADJUST_CALLERS,		/* all but the leaf */
	ADJUST_NONE,		/* ids, not addresses (Java) */
};

struct lreader {
	struct kiln_prof *p;
	struct kiln_diag *d;
	struct cursor c;
	const char *what;	/* "heap profile", for messages */
	uint64_t *addrs;
	size_t naddrs, addrs_alloc;
	struct lsample *s;
	size_t ns, s_alloc;
	enum adjust adjust;
	bool dedup_leaf;	/* pprof's cleanupDuplicateLocations */
	bool java;		/* locations named by the text after the samples */
	const char *rest;	/* the memory map or Java names: after the samples */
	size_t rest_line;	/* line number of rest's first line */
};

static int push_addr(struct lreader *r, uint64_t a)
{
	if (r->naddrs == r->addrs_alloc) {
		size_t n = r->addrs_alloc ? r->addrs_alloc * 2 : 256;
		uint64_t *q = realloc(r->addrs, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		r->addrs = q;
		r->addrs_alloc = n;
	}
	r->addrs[r->naddrs++] = a;
	return 0;
}

/*
 * Starts a sample whose addresses are those pushed from addr0 on: 0 with
 * *out set, -ENOMEM, or -EINVAL for a stack deeper than MAX_DEPTH.
 */
static int new_sample(struct lreader *r, size_t addr0, struct lsample **out)
{
	struct lsample *s;

	if (r->naddrs - addr0 > MAX_DEPTH)
		return kiln_diag(r->d, "line %zu: %s: a stack of %zu addresses "
				 "(at most %d)", r->c.lineno, r->what,
				 r->naddrs - addr0, MAX_DEPTH);
	if (r->ns == r->s_alloc) {
		size_t n = r->s_alloc ? r->s_alloc * 2 : 64;
		struct lsample *q = realloc(r->s, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		r->s = q;
		r->s_alloc = n;
	}
	s = &r->s[r->ns++];
	memset(s, 0, sizeof(*s));
	s->addr = addr0;
	s->n = (uint32_t)(r->naddrs - addr0);
	*out = s;
	return 0;
}

/*
 * Every "0x[0-9a-f]+" in [s, e), appended to r->addrs: pprof's
 * parseHexAddresses, which finds addresses anywhere in a line ("PC:
 * 0x00bc8f1c: helper(arg *)").
 */
static int scan_addrs(struct lreader *r, const char *s, const char *e)
{
	int err;

	while (s + 2 < e) {
		const char *q;
		uint64_t v = 0;

		if (s[0] != '0' || s[1] != 'x' ||
		    !(is_digit(s[2]) || (s[2] >= 'a' && s[2] <= 'f'))) {
			s++;
			continue;
		}
		for (q = s + 2; q < e && (is_digit(*q) || (*q >= 'a' && *q <= 'f'));
		     q++) {
			if (v >> 60)
				return kiln_diag(r->d, "line %zu: %s: the address "
						 "'%.*s' does not fit 64 bits",
						 r->c.lineno, r->what,
						 (int)(q - s > 40 ? 40 : e - s), s);
			v = v << 4 | (uint64_t)(is_digit(*q) ? *q - '0' :
						*q - 'a' + 10);
		}
		err = push_addr(r, v);
		if (err)
			return err;
		s = q;
	}
	return 0;
}

/* From the current line on, skips to the memory map (pprof's
 * parseAdditionalSections), which is kept for later. */
static void find_map(struct lreader *r, const char *s, const char *e)
{
	for (;;) {
		if (s && is_map_sentinel(s, e)) {
			r->rest = r->c.p;
			r->rest_line = r->c.lineno + 1;
			return;
		}
		if (!next_line(&r->c, &s, &e))
			return;
	}
}

static int set_types(struct kiln_prof *p, const char *const *types, size_t n,
		     const char *ptype, const char *punit, int64_t period)
{
	int err = kiln_prof_set_types_str(p, types, n);

	if (err)
		return err;
	p->period_type.type = ptype ? kiln_prof_interns(p, ptype) : 0;
	p->period_type.unit = punit ? kiln_prof_interns(p, punit) : 0;
	p->period = period;
	return kiln_prof_error(p);
}

/* ---- heap, growth and fragmentation profiles ---- */

/* pprof's scaleHeapSample: a sample of count blocks of size bytes in all,
 * taken with probability 1-exp(-avgsize/rate) (a Poisson process of mean
 * rate bytes), stands for count and size divided by that probability. */
static bool scale_heap(int64_t *count, int64_t *size, int64_t rate)
{
	double avg, scale;

	if (*count == 0 || *size == 0) {
		*count = 0;
		*size = 0;
		return true;
	}
	if (rate <= 1)
		return true;
	avg = (double)*size / (double)*count;
	scale = 1 / (1 - exp(-avg / (double)rate));
	return to_int64((double)*count * scale, count) &&
	       to_int64((double)*size * scale, size);
}

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

static bool match_heap(const char *s, const char *e, const char *rest,
		       const char *end)
{
	int64_t rate;
	bool alloc;

	(void)rest;
	(void)end;
	return heap_header(s, e, &rate, &alloc) != HEAP_NONE;
}

/* pprof's addValues: the count and bytes of one column pair. */
static int heap_values(struct lreader *r, int64_t count, int64_t size,
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
		if (sampled && !scale_heap(&count, &size, rate))
			return kiln_diag(r->d, "line %zu: %s: %s values too "
					 "large once unsampled", r->c.lineno,
					 r->what, label);
	}
	out[0] = count;
	out[1] = size;
	return 0;
}

static int parse_heap(struct lreader *r, const char *hs, const char *he)
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
	err = set_types(r->p, has_alloc ? t4 : t2, has_alloc ? 4 : 2,
			"space", "bytes", rate);
	if (err)
		return err;
	r->adjust = ADJUST_ALL;
	while (next_line(&r->c, &s, &e)) {
		int64_t v[4], vals[4], bs = 0;
		const char *q;
		size_t a0 = r->naddrs;
		struct lsample *sm;

		trim(&s, &e);
		if (s == e || *s == '#')
			continue;
		if (is_map_sentinel(s, e)) {
			find_map(r, s, e);
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
		err = scan_addrs(r, s, q);
		if (err)
			return err;
		err = new_sample(r, a0, &sm);
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

static bool match_count(const char *s, const char *e, const char *rest,
			const char *end)
{
	const char *ns, *ne;

	(void)rest;
	(void)end;
	return count_header(s, e, &ns, &ne);
}

static int parse_count(struct lreader *r, const char *hs, const char *he)
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
	r->adjust = ADJUST_ALL;
	while (next_line(&r->c, &s, &e)) {
		const char *q;
		int64_t n;
		size_t a0 = r->naddrs;
		struct lsample *sm;

		if (blank_or_comment(s, e))
			continue;
		if (has_prefix(s, e, "---")) {
			find_map(r, s, e);
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
		err = scan_addrs(r, s, e);
		if (err)
			return err;
		err = new_sample(r, a0, &sm);
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

static bool match_thread(const char *s, const char *e, const char *rest,
			 const char *end)
{
	(void)rest;
	(void)end;
	return threadz_header(s, e) || thread_start(s, e);
}

static int parse_thread(struct lreader *r, const char *hs, const char *he)
{
	static const char *const types[] = { "thread/count" };
	const char *s = hs, *e = he;
	bool more = true;
	int err;

	err = set_types(r->p, types, 1, "thread", "count", 1);
	if (err)
		return err;
	r->adjust = ADJUST_CALLERS;
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
		struct lsample *sm;

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
			err = scan_addrs(r, ts, te);
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
		err = new_sample(r, a0, &sm);
		if (err)
			return err;
		sm->v[0] = 1;
	}
	if (more)
		find_map(r, s, e);
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

/* Splits "KEY = VALUE" (trimmed); false without '='. */
static bool attribute(const char *s, const char *e, const char **ks,
		      const char **ke, const char **vs, const char **ve)
{
	const char *eq = memchr(s, '=', (size_t)(e - s));

	if (!eq)
		return false;
	*ks = s;
	*ke = eq;
	*vs = eq + 1;
	*ve = e;
	trim(ks, ke);
	trim(vs, ve);
	return true;
}

/* Whether the attributes after a "--- contentionz" header say "format =
 * java": then it is the Java text, as pprof finds by failing the C++
 * parser on that key. */
static bool says_java(const char *rest, const char *end)
{
	struct cursor c = { rest, end, 0 };
	const char *s, *e, *ks, *ke, *vs, *ve;

	while (next_line(&c, &s, &e)) {
		if (blank_or_comment(s, e))
			continue;
		if (!attribute(s, e, &ks, &ke, &vs, &ve) || has_prefix(s, e, "---"))
			return false;
		if (ke - ks == 6 && !memcmp(ks, "format", 6))
			return true;
	}
	return false;
}

static bool match_contention(const char *s, const char *e, const char *rest,
			     const char *end)
{
	return contention_header(s, e) && !says_java(rest, end);
}

static bool key_is(const char *ks, const char *ke, const char *key)
{
	return (size_t)(ke - ks) == strlen(key) && !memcmp(ks, key, strlen(key));
}

static int parse_contention(struct lreader *r, const char *hs, const char *he)
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
	err = set_types(r->p, types, 2, "contentions", "count", period);
	if (err)
		return err;
	r->adjust = ADJUST_ALL;
	for (; more; more = next_line(&r->c, &s, &e)) {
		int64_t delay, count, v0, v1;
		const char *q;
		size_t a0 = r->naddrs;
		struct lsample *sm;

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
		err = scan_addrs(r, s, q);
		if (err)
			return err;
		err = new_sample(r, a0, &sm);
		if (err)
			return err;
		sm->v[0] = v0;
		sm->v[1] = v1;
	}
	if (more)
		find_map(r, s, e);
	return 0;
too_large:
	return kiln_diag(r->d, "line %zu: %s: values too large once unsampled",
			 r->c.lineno, r->what);
bad_value:
	return kiln_diag(r->d, "line %zu: %s: '%.*s' is not a number",
			 r->c.lineno, r->what, (int)(ve - vs > 40 ? 40 : ve - vs),
			 vs);
}

/* ---- Java heapz and contentionz ---- */

static bool match_java(const char *s, const char *e, const char *rest,
		       const char *end)
{
	trim(&s, &e);
	if (e - s == 15 && !memcmp(s, "--- heapz 1 ---", 15))
		return true;
	return e - s == 21 && !memcmp(s, "--- contentionz 1 ---", 21) &&
	       says_java(rest, end);
}

/* pprof's attributeRx, "([\w ]+)=([\w ]+)": word characters and spaces. */
static bool is_word(char c)
{
	return c == '_' || is_digit(c) || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z');
}

static int parse_java(struct lreader *r, const char *hs, const char *he)
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
		err = heap ? set_types(r->p, types, 2, NULL, NULL, 0) :
		      set_types(r->p, types, 2, period ? "contentions" : NULL,
				period ? "count" : NULL, period);
		if (err)
			return err;
	}
	r->adjust = ADJUST_NONE;
	r->java = true;
	/* Samples "VALUE COUNT @ ID...", up to the first other line. */
	for (; more; more = next_line(&r->c, &s, &e)) {
		int64_t a, b;
		const char *q;
		size_t a0 = r->naddrs;
		struct lsample *sm;

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
		err = scan_addrs(r, s, q);
		if (err)
			return err;
		err = new_sample(r, a0, &sm);
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
			if (!scale_heap(&sm->v[0], &sm->v[1], 524288))
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

/* ---- the table ---- */

static const struct legacy_kind {
	enum kiln_fmt fmt;
	const char *what;
	/* Whether the first line s..e (of data up to end, rest being the
	 * text after that line) is this format's header. */
	bool (*match)(const char *s, const char *e, const char *rest,
		      const char *end);
	int (*parse)(struct lreader *r, const char *s, const char *e);
} kinds[] = {
	{ KILN_FMT_LEGACY_HEAP, "heap profile", match_heap, parse_heap },
	{ KILN_FMT_LEGACY_COUNT, "count profile", match_count, parse_count },
	{ KILN_FMT_LEGACY_THREAD, "thread profile", match_thread, parse_thread },
	{ KILN_FMT_LEGACY_CONTENTION, "contention profile", match_contention,
	  parse_contention },
	{ KILN_FMT_LEGACY_JAVA, "Java profile", match_java, parse_java },
};

/* The first line that is not blank or a '#' comment, after a UTF-8 byte
 * order mark; false if none. */
static bool header_line(struct cursor *c, const char **s, const char **e)
{
	if (c->end - c->p >= 3 && !memcmp(c->p, "\xef\xbb\xbf", 3))
		c->p += 3;
	while (next_line(c, s, e))
		if (!blank_or_comment(*s, *e))
			return true;
	return false;
}

static const struct legacy_kind *find_kind(struct cursor *c, const char **s,
					   const char **e)
{
	size_t i;

	if (!header_line(c, s, e))
		return NULL;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].match(*s, *e, c->p, c->end))
			return &kinds[i];
	return NULL;
}

enum kiln_fmt kiln_legacy_detect(const char *data, size_t len)
{
	struct cursor c = { data, data + len, 0 };
	const struct legacy_kind *k;
	const char *s, *e;

	/* Headers are short and come first: look at the first 64 KiB. */
	if (len > 65536)
		c.end = data + 65536;
	k = find_kind(&c, &s, &e);
	return k ? k->fmt : KILN_FMT_UNKNOWN;
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
	struct cursor c = { text, text + len, 0 };
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
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 64;
			struct kiln_legacy_jname *x = realloc(v, na * sizeof(*x));

			if (!x) {
				free(v);
				return -ENOMEM;
			}
			v = x;
			alloc = na;
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

/* ---- building the profile ---- */

/* pprof's addLegacyFrameInfo: the frames `go tool pprof` hides. */
static const char alloc_rx[] =
	"calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|"
	"pvalloc|valloc|realloc|tcmalloc::.*|tc_calloc|tc_cfree|tc_malloc|"
	"tc_free|tc_memalign|tc_posix_memalign|tc_pvalloc|tc_valloc|"
	"tc_realloc|tc_new|tc_delete|tc_newarray|tc_deletearray|"
	"tc_new_nothrow|tc_newarray_nothrow|malloc_zone_malloc|"
	"malloc_zone_calloc|malloc_zone_valloc|malloc_zone_realloc|"
	"malloc_zone_memalign|malloc_zone_free|runtime\\..*|BaseArena::.*|"
	"(::)?do_malloc_no_errno|(::)?do_malloc_pages|(::)?do_malloc|"
	"DoSampledAllocation|MallocedMemBlock::MallocedMemBlock|_M_allocate|"
	"__builtin_(vec_)?delete|__builtin_(vec_)?new|"
	"__gnu_cxx::new_allocator::allocate|__libc_malloc|"
	"__malloc_alloc_template::allocate|allocate|cpp_alloc|"
	"operator new(\\[\\])?|simple_alloc::allocate";
static const char alloc_skip_rx[] =
	"runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*";
static const char cpu_rx[] =
	"ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|"
	"__pthread_sighandler|__restore";
static const char lock_rx[] =
	"RecordLockProfileData|(base::)?RecordLockProfileData.*|"
	"(base::)?SubmitMutexProfileData.*|(base::)?SubmitSpinLockProfileData.*|"
	"(base::Mutex::)?AwaitCommon.*|(base::Mutex::)?Unlock.*|"
	"(base::Mutex::)?UnlockSlow.*|(base::Mutex::)?ReaderUnlock.*|"
	"(base::MutexLock::)?~MutexLock.*|(Mutex::)?AwaitCommon.*|"
	"(Mutex::)?Unlock.*|(Mutex::)?UnlockSlow.*|(Mutex::)?ReaderUnlock.*|"
	"(MutexLock::)?~MutexLock.*|(SpinLock::)?Unlock.*|"
	"(SpinLock::)?SlowUnlock.*|(SpinLockHolder::)?~SpinLockHolder.*";

static bool type_is(const struct kiln_prof *p, size_t i, const char *name)
{
	return !strcmp(kiln_prof_str(p, p->types[i].type), name);
}

void kiln_legacy_frame_info(struct kiln_prof *p)
{
	const char *drop = cpu_rx, *keep = NULL;

	if (p->ntypes == 2 && ((type_is(p, 0, "objects") && type_is(p, 1, "space")) ||
			       (type_is(p, 0, "inuse_objects") &&
				type_is(p, 1, "inuse_space")) ||
			       (type_is(p, 0, "alloc_objects") &&
				type_is(p, 1, "alloc_space")) ||
			       (type_is(p, 0, "allocations") &&
				type_is(p, 1, "size")))) {
		drop = alloc_rx;
		keep = alloc_skip_rx;
	} else if (p->ntypes == 4 && type_is(p, 0, "alloc_objects") &&
		   type_is(p, 3, "inuse_space")) {
		drop = alloc_rx;
		keep = alloc_skip_rx;
	} else if (p->ntypes == 2 && type_is(p, 0, "contentions") &&
		   type_is(p, 1, "delay")) {
		drop = lock_rx;
	}
	p->drop_frames = kiln_prof_interns(p, drop);
	p->keep_frames = keep ? kiln_prof_interns(p, keep) : 0;
}

/* pprof's address rules: return addresses minus 1 (a wrap at 0 as in Go),
 * and a leaf repeated as its own caller dropped. */
static void adjust_addrs(struct lreader *r)
{
	size_t i, j;

	for (i = 0; i < r->ns; i++) {
		struct lsample *sm = &r->s[i];
		uint64_t *a = r->addrs + sm->addr;

		for (j = 0; j < sm->n; j++)
			if (r->adjust == ADJUST_ALL ||
			    (r->adjust == ADJUST_CALLERS && j))
				a[j]--;
		if (r->dedup_leaf && sm->n > 1 && a[0] == a[1] + 1) {
			memmove(a + 1, a + 2, (sm->n - 2) * sizeof(*a));
			sm->n--;
		}
	}
}

struct amap {
	uint64_t addr;
	uint32_t mapping;	/* profile mapping id, 0 for none */
};

static int cmp_amap(const void *a, const void *b)
{
	const struct amap *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static uint32_t amap_find(const struct amap *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].addr == addr ? v[lo].mapping : 0;
}

/*
 * The mapping of every address: the distinct addresses sorted, each given
 * its mapping (which may move a mapping's start, so all are placed before
 * any mapping goes into the profile), then the mappings added.
 */
static int place(struct lreader *r, struct amap **out, size_t *nout)
{
	struct kiln_legacy_maps m;
	struct amap *v = NULL;
	uint32_t *ids = NULL;
	long *idx = NULL;
	size_t i, n = 0;
	int err;

	err = kiln_legacy_maps_parse(r->p, r->rest ? r->rest : "",
				     r->rest ? (size_t)(r->c.end - r->rest) : 0,
				     &m);
	if (err)
		return err;
	if (r->naddrs) {
		v = malloc(r->naddrs * sizeof(*v));
		idx = malloc(r->naddrs * sizeof(*idx));
		if (!v || !idx) {
			err = -ENOMEM;
			goto out;
		}
		for (i = 0; i < r->naddrs; i++)
			v[i].addr = r->addrs[i];
		qsort(v, r->naddrs, sizeof(*v), cmp_amap);
		for (i = 0; i < r->naddrs; i++)
			if (!n || v[i].addr != v[n - 1].addr)
				v[n++] = v[i];
		for (i = 0; i < n; i++)
			idx[i] = kiln_legacy_maps_find(&m, v[i].addr);
	}
	if (m.n) {
		ids = calloc(m.n, sizeof(*ids));
		if (!ids) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < m.n; i++) {
		struct kiln_mapping km;

		memset(&km, 0, sizeof(km));
		km.start = m.v[i].start;
		km.limit = m.v[i].limit;
		km.offset = m.v[i].offset;
		km.file = m.v[i].file;
		km.build_id = m.v[i].build_id;
		ids[i] = kiln_prof_mapping(r->p, &km);
	}
	for (i = 0; i < n; i++)
		v[i].mapping = idx[i] >= 0 ? ids[idx[i]] : 0;
	err = kiln_prof_error(r->p);
out:
	free(ids);
	free(idx);
	kiln_legacy_maps_release(&m);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* The locations and samples, then names from the mapped files. */
static int build(struct lreader *r)
{
	struct kiln_prof *p = r->p;
	struct kiln_legacy_names names = { NULL, 0 };
	struct amap *am = NULL;
	uint32_t *locs = NULL, bytes_key;
	size_t i, j, nam = 0;
	int err;

	adjust_addrs(r);
	if (r->java)
		err = kiln_legacy_java_names(p, r->rest ? r->rest : "",
					     r->rest ? (size_t)(r->c.end - r->rest) : 0,
					     &names);
	else
		err = place(r, &am, &nam);
	if (err)
		return err;
	locs = malloc((MAX_DEPTH + 1) * sizeof(*locs));
	if (!locs) {
		err = -ENOMEM;
		goto out;
	}
	bytes_key = kiln_prof_interns(p, "bytes");
	for (i = 0; i < r->ns; i++) {
		const struct lsample *sm = &r->s[i];
		const uint64_t *a = r->addrs + sm->addr;
		struct kiln_label l = { bytes_key, 0, sm->bytes, 0 };
		uint32_t lset = 0;

		for (j = 0; j < sm->n; j++)
			locs[j] = r->java ? kiln_legacy_names_loc(p, &names, a[j]) :
				  kiln_prof_location(p, amap_find(am, nam, a[j]),
						     a[j], NULL, 0);
		if (sm->has_bytes)
			lset = kiln_prof_labelset(p, &l, 1);
		if (kiln_prof_add_sample(p, locs, sm->n, sm->v, lset) < 0)
			break;
	}
	err = kiln_prof_error(p);
	if (err)
		goto out;
	if (p->nmappings) {
		struct kiln_sym *sym = kiln_sym_new(NULL);

		if (!sym) {
			err = -ENOMEM;
			goto out;
		}
		err = kiln_sym_prof(sym, p, 0);
		kiln_sym_free(sym);
		if (err)
			goto out;
	}
	kiln_legacy_frame_info(p);
	err = kiln_prof_error(p);
out:
	free(locs);
	free(am);
	kiln_legacy_names_release(&names);
	return err;
}

int kiln_legacy_read(struct kiln_prof *p, const char *data, size_t len,
		     struct kiln_diag *d)
{
	struct lreader r;
	const struct legacy_kind *k;
	const char *s, *e;
	int err;

	err = kiln_text_check(data, len, d);
	if (err)
		return err;
	memset(&r, 0, sizeof(r));
	r.p = p;
	r.d = d;
	r.c.p = data;
	r.c.end = data + len;
	k = find_kind(&r.c, &s, &e);
	if (!k)
		return kiln_diag(d, "line %zu: no legacy profile header ('heap "
				 "profile: ...', '--- contentionz 1 ---', '--- "
				 "threadz 1 ---', 'NAME profile: total N', ...)",
				 r.c.lineno ? r.c.lineno : 1);
	r.what = k->what;
	err = k->parse(&r, s, e);
	if (!err)
		err = build(&r);
	free(r.addrs);
	free(r.s);
	return err;
}
