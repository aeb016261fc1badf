/* SPDX-License-Identifier: Apache-2.0 */
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
 * This file holds the table, detection and the building of the profile;
 * the parsers are in legacy-gperf.c and legacy-java.c, the memory map's
 * rules in legacy-maps.c, what they share in legacy.h.
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
#include "util/diag.h"
#include "util/htab.h"
#include "util/buf.h"

/* ---- what the parsers share ---- */

static int push_addr(struct kiln_legacy_reader *r, uint64_t a)
{
	if (KILN_GROW(r->addrs, r->addrs_alloc, r->naddrs + 1, 256))
		return -ENOMEM;
	r->addrs[r->naddrs++] = a;
	return 0;
}

/*
 * Starts a sample whose addresses are those pushed from addr0 on: 0 with
 * *out set, -ENOMEM, or -EINVAL for a stack deeper than KILN_LEGACY_MAX_DEPTH.
 */
int kiln_legacy_new_sample(struct kiln_legacy_reader *r, size_t addr0, struct kiln_legacy_sample **out)
{
	struct kiln_legacy_sample *s;

	if (r->naddrs - addr0 > KILN_LEGACY_MAX_DEPTH)
		return kiln_diag(r->d, "line %zu: %s: a stack of %zu addresses "
				 "(at most %d)", r->c.lineno, r->what,
				 r->naddrs - addr0, KILN_LEGACY_MAX_DEPTH);
	if (KILN_GROW(r->s, r->s_alloc, r->ns + 1, 64))
		return -ENOMEM;
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
int kiln_legacy_scan_addrs(struct kiln_legacy_reader *r, const char *s, const char *e)
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
			if (v >> 60) {
				while (q < e && (is_digit(*q) ||
						 (*q >= 'a' && *q <= 'f')))
					q++;
				return kiln_diag(r->d, "line %zu: %s: the address "
						 "'%.*s' does not fit 64 bits",
						 r->c.lineno, r->what,
						 (int)(q - s > 40 ? 40 : q - s), s);
			}
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
void kiln_legacy_find_map(struct kiln_legacy_reader *r, const char *s, const char *e)
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

int kiln_legacy_set_types(struct kiln_prof *p, const char *const *types, size_t n,
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


/* pprof's scaleHeapSample: a sample of count blocks of size bytes in all,
 * taken with probability 1-exp(-avgsize/rate) (a Poisson process of mean
 * rate bytes), stands for count and size divided by that probability. */
bool kiln_legacy_scale_heap(int64_t *count, int64_t *size, int64_t rate)
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

/* Whether the attributes after a "--- contentionz" header say "format =
 * java": then it is the Java text, as pprof finds by failing the C++
 * parser on that key. */
bool kiln_legacy_says_java(const char *rest, const char *end)
{
	struct kiln_legacy_cursor c = { rest, end, 0 };
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

/* ---- the table ---- */

static const struct legacy_kind {
	enum kiln_fmt fmt;
	const char *what;
	/* Whether the first line s..e (of data up to end, rest being the
	 * text after that line) is this format's header. */
	bool (*match)(const char *s, const char *e, const char *rest,
		      const char *end);
	int (*parse)(struct kiln_legacy_reader *r, const char *s, const char *e);
} kinds[] = {
	{ KILN_FMT_LEGACY_HEAP, "heap profile", kiln_legacy_match_heap, kiln_legacy_parse_heap },
	{ KILN_FMT_LEGACY_COUNT, "count profile", kiln_legacy_match_count, kiln_legacy_parse_count },
	{ KILN_FMT_LEGACY_THREAD, "thread profile", kiln_legacy_match_thread, kiln_legacy_parse_thread },
	{ KILN_FMT_LEGACY_CONTENTION, "contention profile", kiln_legacy_match_contention,
	  kiln_legacy_parse_contention },
	{ KILN_FMT_LEGACY_JAVA, "Java profile", kiln_legacy_match_java, kiln_legacy_parse_java },
};

/* The first line that is not blank or a '#' comment, after a UTF-8 byte
 * order mark; false if none. */
static bool header_line(struct kiln_legacy_cursor *c, const char **s, const char **e)
{
	if (c->end - c->p >= 3 && !memcmp(c->p, "\xef\xbb\xbf", 3))
		c->p += 3;
	while (next_line(c, s, e))
		if (!blank_or_comment(*s, *e))
			return true;
	return false;
}

static const struct legacy_kind *find_kind(struct kiln_legacy_cursor *c, const char **s,
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
	struct kiln_legacy_cursor c = { data, data + len, 0 };
	const struct legacy_kind *k;
	const char *s, *e;

	/* Headers are short and come first: look at the first 64 KiB. */
	if (len > 65536)
		c.end = data + 65536;
	k = find_kind(&c, &s, &e);
	return k ? k->fmt : KILN_FMT_UNKNOWN;
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
static void adjust_addrs(struct kiln_legacy_reader *r)
{
	size_t i, j;

	for (i = 0; i < r->ns; i++) {
		struct kiln_legacy_sample *sm = &r->s[i];
		uint64_t *a;

		/* A sample without frames: r->addrs may still be NULL. */
		if (!sm->n)
			continue;
		a = r->addrs + sm->addr;
		for (j = 0; j < sm->n; j++)
			if (r->adjust == KILN_LEGACY_ADJUST_ALL ||
			    (r->adjust == KILN_LEGACY_ADJUST_CALLERS && j))
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

struct distinct_ctx {
	const struct amap *v;
	uint64_t addr;
};

static bool same_addr(const void *ctx, uint32_t id)
{
	const struct distinct_ctx *c = ctx;

	return c->v[id - 1].addr == c->addr;
}

static uint32_t addr_hash(uint64_t addr)
{
	return (uint32_t)kiln_hash(&addr, sizeof(addr));
}

/* The distinct addresses of a[0..n) into v[0..*nv), in first-seen order,
 * indexed by h (ids: 1 + their place in v). */
static int distinct(const uint64_t *a, size_t n, struct amap *v, size_t *nv,
		    struct kiln_htab *h)
{
	struct distinct_ctx c = { v, 0 };
	size_t i, k = 0;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		uint32_t hash = addr_hash(a[i]);

		c.addr = a[i];
		if (kiln_htab_find(h, hash, same_addr, &c))
			continue;
		v[k].addr = a[i];
		v[k].mapping = 0;
		err = kiln_htab_insert(h, hash, (uint32_t)++k);
	}
	*nv = k;
	return err;
}

/* The profile mapping of addr, one of v[0..n) that h indexes. */
static uint32_t amap_find(const struct amap *v, const struct kiln_htab *h,
			  uint64_t addr)
{
	struct distinct_ctx c = { v, addr };
	uint32_t id = kiln_htab_find(h, addr_hash(addr), same_addr, &c);

	return id ? v[id - 1].mapping : 0;
}

/*
 * The mapping of every address: the distinct addresses sorted, each given
 * its mapping (which may move a mapping's start, so all are placed before
 * any mapping goes into the profile), then the mappings added.
 */
static int place(struct kiln_legacy_reader *r, struct amap **out, size_t *nout,
		 struct kiln_htab *h)
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
		/* Distinct addresses first (a profile repeats a few
		 * thousand of them millions of times), then sorted. */
		err = distinct(r->addrs, r->naddrs, v, &n, h);
		if (err)
			goto out;
		/* Sorted, as pprof places them (a mapping's start may move
		 * down to the lowest address below it), and indexed anew. */
		qsort(v, n, sizeof(*v), cmp_amap);
		kiln_htab_release(h);
		for (i = 0; i < n && !err; i++)
			err = kiln_htab_insert(h, addr_hash(v[i].addr),
					       (uint32_t)i + 1);
		if (err)
			goto out;
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
static int build(struct kiln_legacy_reader *r)
{
	struct kiln_prof *p = r->p;
	struct kiln_legacy_names names = { NULL, 0 };
	struct amap *am = NULL;
	struct kiln_htab ah = KILN_HTAB_INIT;
	uint32_t *locs = NULL, bytes_key;
	size_t i, j, nam = 0;
	int err;

	adjust_addrs(r);
	if (r->java)
		err = kiln_legacy_java_names(p, r->rest ? r->rest : "",
					     r->rest ? (size_t)(r->c.end - r->rest) : 0,
					     &names);
	else
		err = place(r, &am, &nam, &ah);
	if (err)
		goto out;
	locs = malloc((KILN_LEGACY_MAX_DEPTH + 1) * sizeof(*locs));
	if (!locs) {
		err = -ENOMEM;
		goto out;
	}
	bytes_key = kiln_prof_interns(p, "bytes");
	for (i = 0; i < r->ns; i++) {
		const struct kiln_legacy_sample *sm = &r->s[i];
		/* (r->addrs is NULL while no sample has a frame.) */
		const uint64_t *a = sm->n ? r->addrs + sm->addr : NULL;
		struct kiln_label l = { bytes_key, 0, sm->bytes, 0 };
		uint32_t lset = 0;

		for (j = 0; j < sm->n; j++)
			locs[j] = r->java ? kiln_legacy_names_loc(p, &names, a[j]) :
				  kiln_prof_location(p, amap_find(am, &ah, a[j]),
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
	kiln_htab_release(&ah);
	kiln_legacy_names_release(&names);
	return err;
}

int kiln_legacy_read(struct kiln_prof *p, const char *data, size_t len,
		     struct kiln_diag *d)
{
	struct kiln_legacy_reader r;
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

