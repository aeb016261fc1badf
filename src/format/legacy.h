/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The legacy text profiles of gperftools, Go and Java (format stage),
 * private to the format readers: the memory map of those files, the names
 * of Java profiles (also those of the binary Java CPU profile that
 * format/gperf.c reads), and the frames pprof hides in them.  The reader
 * itself is kiln_legacy_read() in format/format.h; docs/formats.md says
 * what each format becomes.  The second half is the reader's state and
 * text helpers, for the parsers in format/legacy*.c only.
 */
#ifndef KILN_FORMAT_LEGACY_H
#define KILN_FORMAT_LEGACY_H

#include <stddef.h>
#include <stdint.h>

struct kiln_prof;

/* One mapping of a legacy memory map; strings are ids of the profile's. */
struct kiln_legacy_map {
	uint64_t start, limit, offset;
	uint32_t file, build_id;
};

struct kiln_legacy_maps {
	struct kiln_legacy_map *v;
	size_t n, alloc;
};

/*
 * Parses the text after "MAPPED_LIBRARIES:" / "--- Memory map: ---" into
 * m (emptied first) by pprof's rules, file names interned in p: 0 or
 * -ENOMEM.  Lines that are not mappings are skipped, as pprof does.
 */
int kiln_legacy_maps_parse(struct kiln_prof *p, const char *text, size_t len,
			   struct kiln_legacy_maps *m);
/*
 * The index in m of the mapping holding addr, or -1 (also for address 0).
 * An address just below a mapping with an offset moves that mapping's
 * start down to it (pprof's remapMappingIDs): place every address before
 * the mappings are used.
 */
long kiln_legacy_maps_find(struct kiln_legacy_maps *m, uint64_t addr);
void kiln_legacy_maps_release(struct kiln_legacy_maps *m);

/* The Java names: id -> location, sorted by id. */
struct kiln_legacy_jname;
struct kiln_legacy_names {
	struct kiln_legacy_jname *v;
	size_t n;
};

/*
 * Reads the lines "0xID NAME [(FILE:LINE)]" that follow a Java profile's
 * samples, making one location (address 0, one line) per name in p.
 * Other lines are skipped.  0 or -ENOMEM; release names afterwards.
 */
int kiln_legacy_java_names(struct kiln_prof *p, const char *text, size_t len,
			   struct kiln_legacy_names *names);
/* The location of id: its name's, or one with id as address. 0 and p->err
 * set when out of memory. */
uint32_t kiln_legacy_names_loc(struct kiln_prof *p,
			       const struct kiln_legacy_names *names,
			       uint64_t id);
void kiln_legacy_names_release(struct kiln_legacy_names *names);

/*
 * Sets p's drop_frames and keep_frames as pprof does for legacy profiles
 * (addLegacyFrameInfo): allocator frames for heap sample types, lock
 * internals for contentions/delay, the CPU profiler's signal frames
 * otherwise.  Check kiln_prof_error() after.
 */
void kiln_legacy_frame_info(struct kiln_prof *p);

/* ---- for the parsers of format/legacy*.c ---- */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct kiln_diag;

/* The deepest stack taken, as the other readers (gperftools keeps 64). */
#define KILN_LEGACY_MAX_DEPTH 4096

struct kiln_legacy_cursor {
	const char *p, *end;
	size_t lineno;		/* of the line last returned */
};

/* The next line [*s, *e), without its '\n' and a '\r' before it. */
static inline bool next_line(struct kiln_legacy_cursor *c, const char **s, const char **e)
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

static inline bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

static inline const char *skip_spaces(const char *s, const char *e)
{
	while (s < e && is_space(*s))
		s++;
	return s;
}

static inline bool blank_or_comment(const char *s, const char *e)
{
	trim(&s, &e);
	return s == e || *s == '#';
}

static inline bool has_prefix(const char *s, const char *e, const char *pre)
{
	size_t n = strlen(pre);

	return (size_t)(e - s) >= n && !memcmp(s, pre, n);
}

static inline bool contains(const char *s, const char *e, const char *what)
{
	size_t n = strlen(what);

	for (; (size_t)(e - s) >= n; s++)
		if (*s == *what && !memcmp(s, what, n))
			return true;
	return false;
}

/* pprof's memory map sentinels, anywhere in a line. */
static inline bool is_map_sentinel(const char *s, const char *e)
{
	return contains(s, e, "--- Memory map: ---") ||
	       contains(s, e, "MAPPED_LIBRARIES:");
}

/* Decimal digits at *s into *v (with an optional '-' if neg_ok); false
 * on none or on overflow of int64_t. */
static inline bool scan_int(const char **s, const char *e, bool neg_ok, int64_t *v)
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
static inline bool parse_int0(const char *s, const char *e, int64_t *v)
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
static inline bool to_int64(double f, int64_t *v)
{
	if (!(f > -9223372036854775808.0 && f < 9223372036854775808.0))
		return false;
	*v = (int64_t)f;
	return true;
}


/* Splits "KEY = VALUE" (trimmed); false without '='. */
static inline bool attribute(const char *s, const char *e, const char **ks,
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

static inline bool key_is(const char *ks, const char *ke, const char *key)
{
	return (size_t)(ke - ks) == strlen(key) && !memcmp(ks, key, strlen(key));
}

/* A sample as parsed, before locations exist. */
struct kiln_legacy_sample {
	size_t addr;		/* first of n in r->addrs, leaf first */
	uint32_t n;
	bool has_bytes;
	int64_t bytes;		/* the "bytes" label: block size */
	int64_t v[4];
};

enum kiln_legacy_adjust {
	KILN_LEGACY_ADJUST_ALL,		/* every address is a return address */
	KILN_LEGACY_ADJUST_CALLERS,		/* all but the leaf */
	KILN_LEGACY_ADJUST_NONE,		/* ids, not addresses (Java) */
};

struct kiln_legacy_reader {
	struct kiln_prof *p;
	struct kiln_diag *d;
	struct kiln_legacy_cursor c;
	const char *what;	/* "heap profile", for messages */
	uint64_t *addrs;
	size_t naddrs, addrs_alloc;
	struct kiln_legacy_sample *s;
	size_t ns, s_alloc;
	enum kiln_legacy_adjust adjust;
	bool dedup_leaf;	/* pprof's cleanupDuplicateLocations */
	bool java;		/* locations named by the text after the samples */
	const char *rest;	/* the memory map or Java names: after the samples */
	size_t rest_line;	/* line number of rest's first line */
};


/* Gives the addresses pushed from addr0 on a sample: 0 with *out set,
 * -ENOMEM, or -EINVAL (r->d filled) for a stack deeper than the bound. */
int kiln_legacy_new_sample(struct kiln_legacy_reader *r, size_t addr0,
			   struct kiln_legacy_sample **out);
/* Pushes every "0x[0-9a-f]+" of [s, e) (pprof's parseHexAddresses, which
 * finds them anywhere in a line): 0, -ENOMEM or -EINVAL (r->d filled). */
int kiln_legacy_scan_addrs(struct kiln_legacy_reader *r, const char *s,
			   const char *e);
/* From line [s, e) (NULL: the next) on, skips to the memory map sentinel
 * and keeps what follows it as r->rest (parseAdditionalSections). */
void kiln_legacy_find_map(struct kiln_legacy_reader *r, const char *s,
			  const char *e);
/* Sample types "type/unit", period type (NULLs: none) and period. */
int kiln_legacy_set_types(struct kiln_prof *p, const char *const *types,
			  size_t n, const char *ptype, const char *punit,
			  int64_t period);
/* pprof's scaleHeapSample (see legacy.c); false where the result does
 * not fit 64 bits. */
bool kiln_legacy_scale_heap(int64_t *count, int64_t *size, int64_t rate);
/* Whether the attributes after a "--- contentionz" header (rest..end)
 * say "format = java". */
bool kiln_legacy_says_java(const char *rest, const char *end);

/* The parsers: match tells a header line [s, e) (rest..end following it),
 * parse reads from the line after it. */
bool kiln_legacy_match_heap(const char *s, const char *e, const char *rest,
			    const char *end);
int kiln_legacy_parse_heap(struct kiln_legacy_reader *r, const char *s,
			   const char *e);
bool kiln_legacy_match_count(const char *s, const char *e, const char *rest,
			     const char *end);
int kiln_legacy_parse_count(struct kiln_legacy_reader *r, const char *s,
			    const char *e);
bool kiln_legacy_match_thread(const char *s, const char *e, const char *rest,
			      const char *end);
int kiln_legacy_parse_thread(struct kiln_legacy_reader *r, const char *s,
			     const char *e);
bool kiln_legacy_match_contention(const char *s, const char *e,
				  const char *rest, const char *end);
int kiln_legacy_parse_contention(struct kiln_legacy_reader *r, const char *s,
				 const char *e);
bool kiln_legacy_match_java(const char *s, const char *e, const char *rest,
			    const char *end);
int kiln_legacy_parse_java(struct kiln_legacy_reader *r, const char *s,
			   const char *e);

#endif
