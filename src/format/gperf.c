/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gperftools legacy CPU profile reader (format stage): the binary file that
 * libprofiler writes for CPUPROFILE=... (see gperftools' profiledata.h and
 * docs/cpuprofile-fileformat.html).
 *
 * The file is a sequence of machine words (32- or 64-bit, either byte
 * order, as written by the profiled machine):
 *
 *   header   0, 3, 0, sampling period in microseconds, 0
 *   records  count, depth, pc[0] .. pc[depth-1]    (pc[0] is the leaf)
 *   trailer  0, 1, 0
 *
 * followed by the text of /proc/self/maps of the profiled process.
 *
 * The profile gets sample types samples/count and cpu/nanoseconds (count
 * times the period), period type cpu/nanoseconds and the period the header
 * states.  The header is kept as it is even where the kernel delivered
 * fewer signals than asked (CONFIG_HZ=250 gives at most 250 per second, so
 * 1000 Hz profiles claim 1 ms per sample for 4 ms of CPU time): the file
 * cannot tell.  Caller addresses (return addresses) are stored minus 1, as
 * pprof's own reader of this format does, so that they point into the call
 * instruction.  The executable mappings of the maps text become the
 * profile's mappings, and the profile is symbolized from the files they
 * name when those are on this machine (they are right after profiling).
 *
 * pprof also removes the leaf's caller when (nearly) every record has the
 * same one, taking it for a frame the signal handler pushed (old
 * gperftools did; cppbench.cpu of pprof's test data has __restore_rt
 * there).  kiln does not: today's libprofiler skips that frame itself, and
 * on a profile of one hot loop the rule removes its real caller (main in
 * t402's).  A leaf repeated as its own caller is dropped, as pprof does.
 *
 * Version 1 of the header is a Java CPU profile (pprof's
 * legacy_java_profile.go): the words are the same, but the "addresses"
 * are ids, named by the text after the trailer ("0x0000003 GC", "0x06
 * com.example.f (source.java:6)", format/legacy.h), none adjusted, and a
 * record with a count of 0 is a sample unless it is the trailer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/legacy.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/diag.h"
#include "util/maps.h"
#include "util/buf.h"

/* gperftools keeps 64 frames (kMaxStackDepth); a bound well above it. */
#define MAX_DEPTH 4096

struct reader {
	const unsigned char *data;
	size_t len, pos;
	unsigned wsize;		/* 4 or 8 */
	bool swap;		/* big-endian file */
};

static uint64_t word_at(const struct reader *r, size_t pos)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < r->wsize; i++) {
		unsigned b = r->swap ? i : r->wsize - 1 - i;

		v = v << 8 | r->data[pos + b];
	}
	return v;
}

/* Little- and big-endian, 64- and 32-bit: which header it starts with. */
static bool detect(struct reader *r)
{
	static const struct { unsigned wsize; bool swap; } kinds[] = {
		{ 8, false }, { 4, false }, { 8, true }, { 4, true },
	};
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		r->wsize = kinds[i].wsize;
		r->swap = kinds[i].swap;
		if (r->len >= 2u * r->wsize && word_at(r, 0) == 0 &&
		    word_at(r, r->wsize) == 3)
			return true;
	}
	return false;
}

struct gmap {
	uint64_t start, end;
	uint32_t id;
};

struct maps_ctx {
	struct kiln_prof *p;
	struct gmap *maps;
	size_t n, alloc;
};

static int add_gmap(const struct kiln_maps_entry *e, void *arg)
{
	struct maps_ctx *c = arg;
	struct kiln_mapping m = { 0 };

	if (e->perms[2] != 'x')
		return 0;
	if (KILN_GROW(c->maps, c->alloc, c->n + 1, 32))
		return -ENOMEM;
	m.start = e->start;
	m.limit = e->end;
	m.offset = e->offset;
	m.file = kiln_prof_intern(c->p, e->path, e->pathlen);
	c->maps[c->n].start = e->start;
	c->maps[c->n].end = e->end;
	c->maps[c->n].id = kiln_prof_mapping(c->p, &m);
	if (c->p->err)
		return c->p->err;
	c->n++;
	return 0;
}

static int cmp_gmap(const void *a, const void *b)
{
	const struct gmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The addresses of the record at pos into pcs, as pprof takes them:
 * callers' return addresses minus 1 (not Java's ids), and a leaf repeated
 * as its own caller (the signal context's PC, then the same frame
 * unwound) dropped.  Returns the depth.
 */
static uint32_t record_pcs(const struct reader *r, size_t pos, bool java,
			   uint64_t *pcs)
{
	uint32_t depth = (uint32_t)word_at(r, pos + r->wsize), i, n = depth;

	for (i = 0; i < depth; i++) {
		uint64_t pc = word_at(r, pos + (2 + i) * r->wsize);

		if (i && pc && !java)
			pc--;
		pcs[i] = pc;
	}
	if (!java && n > 1 && pcs[0] == pcs[1] + 1) {
		memmove(pcs + 1, pcs + 2, (n - 2) * sizeof(*pcs));
		n--;
	}
	return n;
}

static uint32_t map_of(const struct maps_ctx *c, uint64_t addr)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < c->maps[lo - 1].end ? c->maps[lo - 1].id : 0;
}

int kiln_gperf_read(struct kiln_prof *p, const char *data, size_t len,
		    struct kiln_diag *d)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct reader r = { (const unsigned char *)data, len, 0, 0, false };
	struct maps_ctx mc = { p, NULL, 0, 0 };
	struct kiln_legacy_names names = { NULL, 0 };
	uint32_t *locs = NULL;
	uint64_t hdr_words, period_us, *pcs = NULL, total = 0;
	size_t w, recs;
	struct kiln_sym *sym;
	bool java;
	int err;

	if (!detect(&r))
		return kiln_diag(d, "byte 0: no gperftools CPU profile header "
				 "(words 0, 3)");
	w = r.wsize;
	/* Word 1 counts the header words after the first two: 3 means
	 * version, period and padding. */
	hdr_words = 2 + word_at(&r, w);
	if (len < hdr_words * w)
		return kiln_diag(d, "byte %zu: header truncated: %zu bytes of "
				 "%" PRIu64, len, len, hdr_words * w);
	if (word_at(&r, 2 * w) > 1)
		return kiln_diag(d, "byte %zu: unknown format version %" PRIu64
				 " (0 for C/C++, 1 for Java)", 2 * w,
				 word_at(&r, 2 * w));
	java = word_at(&r, 2 * w) == 1;
	period_us = word_at(&r, 3 * w);
	if (!period_us || period_us > 60ull * 1000 * 1000)
		return kiln_diag(d, "byte %zu: bad sampling period %" PRIu64
				 " microseconds", 3 * w, period_us);
	err = kiln_prof_set_types_str(p, types, 2);
	if (err)
		return err;
	p->period_type = p->types[1];
	p->period = (int64_t)period_us * 1000;

	/* First pass: find the trailer, so that the maps text (and thus the
	 * mappings) are known before the samples are added. */
	r.pos = hdr_words * w;
	for (recs = 0;; recs++) {
		uint64_t count, depth, cpu;

		if (r.len - r.pos < 2 * w)
			return kiln_diag(d, "byte %zu: record truncated (the "
					 "file ends without the end-of-data "
					 "trailer)", r.pos);
		count = word_at(&r, r.pos);
		depth = word_at(&r, r.pos + w);
		if (depth > MAX_DEPTH)
			return kiln_diag(d, "byte %zu: stack depth %" PRIu64
					 " is too large (at most %d)",
					 r.pos + w, depth, MAX_DEPTH);
		if ((r.len - r.pos) / w - 2 < depth)
			return kiln_diag(d, "byte %zu: record truncated: %"
					 PRIu64 " addresses announced, %zu "
					 "bytes left", r.pos, depth,
					 r.len - r.pos - 2 * w);
		if (count == 0 && java &&
		    (depth != 1 || word_at(&r, r.pos + 2 * w) != 0)) {
			r.pos += (2 + depth) * w;
			continue;
		}
		if (count == 0) {
			if (depth != 1 || word_at(&r, r.pos + 2 * w) != 0)
				return kiln_diag(d, "byte %zu: bad end-of-data "
						 "trailer (expected 0, 1, 0)",
						 r.pos);
			break;
		}
		if (count > INT64_MAX / 1000 / (int64_t)period_us)
			return kiln_diag(d, "byte %zu: sample count %" PRIu64
					 " is too large", r.pos, count);
		/* The model adds the samples up in int64_t (merged stacks,
		 * totals; the pprof reader refuses the same): no sum may
		 * overflow, or kiln could not read its own pprof of it. */
		cpu = count * period_us * 1000;
		if (__builtin_add_overflow(total, cpu, &total) || total > INT64_MAX)
			return kiln_diag(d, "byte %zu: sample count %" PRIu64
					 " makes the total of 'cpu' overflow 64 "
					 "bits", r.pos, count);
		r.pos += (2 + depth) * w;
	}
	{
		size_t maps_at = r.pos + 3 * w;

		if (java)
			err = kiln_legacy_java_names(p, data + maps_at,
						     len - maps_at, &names);
		else
			err = kiln_maps_parse(data + maps_at, len - maps_at,
					      add_gmap, &mc);
		if (err)
			goto out;
		if (mc.n)
			qsort(mc.maps, mc.n, sizeof(*mc.maps), cmp_gmap);
	}

	/* Second pass: the samples. */
	locs = malloc(MAX_DEPTH * sizeof(*locs));
	pcs = malloc(MAX_DEPTH * sizeof(*pcs));
	if (!locs || !pcs) {
		err = -ENOMEM;
		goto out;
	}
	r.pos = hdr_words * w;
	for (; recs; recs--) {
		uint64_t count = word_at(&r, r.pos);
		uint32_t depth = (uint32_t)word_at(&r, r.pos + w), i, n;
		int64_t v[2];

		n = record_pcs(&r, r.pos, java, pcs);
		for (i = 0; i < n; i++)
			locs[i] = java ? kiln_legacy_names_loc(p, &names, pcs[i]) :
				  kiln_prof_location(p, map_of(&mc, pcs[i]),
						     pcs[i], NULL, 0);
		v[0] = (int64_t)count;
		v[1] = (int64_t)count * (int64_t)period_us * 1000;
		if (kiln_prof_add_sample(p, locs, n, v, 0) < 0)
			break;
		r.pos += (2 + (size_t)depth) * w;
	}
	err = kiln_prof_error(p);
	if (err || java) {
		if (java) {
			kiln_legacy_frame_info(p);
			err = kiln_prof_error(p);
		}
		goto out;
	}

	/* Names, files, lines and inline frames from the mapped files. */
	sym = kiln_sym_new(NULL);
	if (!sym) {
		err = -ENOMEM;
		goto out;
	}
	err = kiln_sym_prof(sym, p, 0);
	kiln_sym_free(sym);
out:
	kiln_legacy_names_release(&names);
	free(pcs);
	free(locs);
	free(mc.maps);
	return err;
}
