/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf.data reader (format stage), the records: each record of the data
 * section (and of the compressed records, inflated) noted with its time
 * and event, a pipe's attributes, build IDs and features taken as they
 * come, and the records sorted into time order.  See perfdata.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "format/perfdata.h"
#include "util/sort.h"
#include "util/buf.h"

/* ---- records ---- */

static struct attr *attr_of_id(struct pd *pd, uint64_t id, uint32_t *idx)
{
	size_t i, j;

	for (i = 0; i < pd->nattrs; i++)
		for (j = 0; j < pd->attrs[i].nids; j++)
			if (pd->attrs[i].ids[j] == id) {
				*idx = (uint32_t)i;
				return &pd->attrs[i];
			}
	return NULL;
}

/* Where a sample's ID sits when there is no IDENTIFIER: u64 index. */
static int id_pos(uint64_t st)
{
	int n = 0;

	if (!(st & PERF_SAMPLE_ID))
		return -1;
	n += !!(st & PERF_SAMPLE_IP);
	n += !!(st & PERF_SAMPLE_TID);
	n += !!(st & PERF_SAMPLE_TIME);
	n += !!(st & PERF_SAMPLE_ADDR);
	return n;
}

/* The attr a record belongs to.  NULL: unknown id. */
static struct attr *rec_attr(struct pd *pd, const char *rec, uint16_t size,
			     uint32_t type, uint32_t *idx)
{
	const struct attr *a0 = &pd->attrs[0];
	uint64_t st = a0->sample_type;
	int pos;

	*idx = 0;
	if (pd->nattrs == 1)
		return &pd->attrs[0];
	if (st & PERF_SAMPLE_IDENTIFIER) {
		if (type == PERF_RECORD_SAMPLE)
			return size >= 16 ? attr_of_id(pd, u64(rec + 8), idx) : NULL;
		return a0->sample_id_all && size >= 16 ?
		       attr_of_id(pd, u64(rec + size - 8), idx) :
		       &pd->attrs[0];
	}
	if (type != PERF_RECORD_SAMPLE)
		return &pd->attrs[0];	/* only its trailer's time is used */
	pos = id_pos(st);
	if (pos < 0 || (size_t)size < 8 + 8 * (size_t)(pos + 1))
		return &pd->attrs[0];
	return attr_of_id(pd, u64(rec + 8 + 8 * pos), idx);
}

/* The sample_id trailer's time of a non-sample record, or *ok = false. */
static uint64_t trailer_time(const struct attr *a, const char *rec,
			     uint16_t size, bool *ok)
{
	uint64_t st = a->sample_type;
	size_t n = 0, t;

	*ok = false;
	if (!a->sample_id_all || !(st & PERF_SAMPLE_TIME))
		return 0;
	n += !!(st & PERF_SAMPLE_TID);
	n += !!(st & PERF_SAMPLE_TIME);
	n += !!(st & PERF_SAMPLE_ID);
	n += !!(st & PERF_SAMPLE_STREAM_ID);
	n += !!(st & PERF_SAMPLE_CPU);
	n += !!(st & PERF_SAMPLE_IDENTIFIER);
	if (8 * n + 8 > size)
		return 0;
	t = size - 8 * n + 8 * !!(st & PERF_SAMPLE_TID);
	*ok = true;
	return u64(rec + t);
}

static int note_record(struct pd *pd, size_t off, uint32_t type,
		       uint16_t size, uint64_t *last_time)
{
	const char *rec = at(pd, off);
	struct attr *a;
	uint32_t idx;
	uint64_t t = *last_time;
	bool ok;

	switch (type) {
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		break;
	case PERF_RECORD_LOST:
		if (size >= 24)
			pd->lost += u64(rec + 16);
		return 0;
	default:
		return 0;
	}
	if (!pd->nattrs)
		return bad(pd, off, "a record of type %" PRIu32 " before any "
			   "event attribute", type);
	a = rec_attr(pd, rec, size, type, &idx);
	if (!a) {
		if (type == PERF_RECORD_SAMPLE)
			return bad(pd, off, "a sample of an event id the file does "
				   "not describe");
		a = &pd->attrs[0];
	}
	if (type == PERF_RECORD_SAMPLE) {
		uint64_t st = a->sample_type;

		if (st & PERF_SAMPLE_TIME) {
			size_t at = 8 + 8 * (size_t)(!!(st & PERF_SAMPLE_IDENTIFIER) +
						     !!(st & PERF_SAMPLE_IP) +
						     !!(st & PERF_SAMPLE_TID));

			if (at + 8 > size)
				return bad(pd, off, "a sample of %u bytes is too "
					   "short for its fields", size);
			t = u64(rec + at);
		}
	} else {
		uint64_t tt = trailer_time(a, rec, size, &ok);

		if (ok)
			t = tt;
	}
	*last_time = t;
	if (KILN_GROW(pd->recs, pd->recs_alloc, pd->nrecs + 1, 1024))
		return -ENOMEM;
	if (pd->nrecs >= UINT32_MAX)
		return bad(pd, off, "more than 2^32 records");
	if (off >> 48)
		return bad(pd, off, "a record past 2^48 bytes");
	pd->recs[pd->nrecs] = (struct rref){ t, off, idx };
	pd->nrecs++;
	return 0;
}

/* A pipe-mode record of perf's own (attrs, features, build IDs). */
static int pipe_record(struct pd *pd, size_t off, uint32_t type,
		       uint16_t size, size_t *skip)
{
	const char *rec = pd->data + off;
	struct attr a;
	size_t asize;
	int err;

	*skip = 0;
	switch (type) {
	case REC_HEADER_ATTR:
		if (size < 8 + PERF_ATTR_SIZE_VER0)
			return bad(pd, off, "an attribute record of %u bytes", size);
		asize = u32(rec + 8 + 4);
		if (asize < PERF_ATTR_SIZE_VER0 || asize > (size_t)size - 8)
			return bad(pd, off, "an attribute of %zu bytes in a record "
				   "of %u", asize, size);
		err = kiln_perfdata_read_attr(pd, off + 8, asize, &a);
		if (!err)
			err = kiln_perfdata_add_attr(pd, &a);
		if (!err)
			err = kiln_perfdata_set_ids(pd, &pd->attrs[pd->nattrs - 1],
				      rec + 8 + asize, (size - 8 - asize) / 8);
		return err;
	case REC_HEADER_BUILD_ID:
		return kiln_perfdata_add_bid(pd, rec, size, off);
	case REC_HEADER_FEATURE:
		if (size < 16)
			return bad(pd, off, "a feature record of %u bytes", size);
		if (u64(rec + 8) >= FEAT_MAX)
			return 0;
		return kiln_perfdata_feature(pd, (int)u64(rec + 8), rec + 16,
					     rec + size);
	case REC_HEADER_TRACING_DATA:
		/* u32 size of the tracing data that follows the record. */
		if (size < 12)
			return bad(pd, off, "a tracing data record of %u bytes", size);
		*skip = ((size_t)u32(rec + 8) + 7) & ~(size_t)7;
		return 0;
	case REC_AUXTRACE:
		/* u64 size of the trace data that follows the record. */
		if (size < 16)
			return bad(pd, off, "an aux trace record of %u bytes", size);
		if (u64(rec + 8) > pd->len)
			return bad(pd, off, "aux trace data of %" PRIu64 " bytes "
				   "runs past the end", u64(rec + 8));
		*skip = (size_t)u64(rec + 8);
		return 0;
	}
	return 0;
}

static int walk(struct pd *pd, size_t off, size_t end, bool inflated,
		struct kiln_pd_stream *st, uint64_t *last_time, size_t *stop);

/*
 * The compressed record at file offset off: inflated onto pd->unz, and
 * the records it completes walked (a record cut at the end of its bytes
 * waits for the next compressed record).
 */
static int compressed(struct pd *pd, size_t off, uint32_t type, uint16_t size,
		      struct kiln_pd_stream *st, uint64_t *last_time)
{
	size_t stop;
	int err;

	err = kiln_perfdata_inflate(pd, off, type, size);
	if (err)
		return err;
	err = walk(pd, pd->len + pd->unz_walked, pd->len + pd->unz.len, true, st,
		   last_time, &stop);
	if (!err)
		pd->unz_walked = stop - pd->len;
	return err;
}

/*
 * Walks the records of [off, end) (record offsets, at()); with st on,
 * replays them too.  In the inflated records (inflated), a record cut
 * short at the end is left for later: *stop says where it starts.
 */
static int walk(struct pd *pd, size_t off, size_t end, bool inflated,
		struct kiln_pd_stream *st, uint64_t *last_time, size_t *stop)
{
	int err;

	while (off < end) {
		const char *rec = at(pd, off);
		uint32_t type;
		uint16_t size;
		size_t skip = 0;

		if (end - off < 8) {
			if (inflated)
				break;
			return bad(pd, off, "a record header is cut short (%zu of "
				   "8 bytes: file cut short?)", end - off);
		}
		type = u32(rec);
		size = u16(rec + 6);
		/* Records of one kind tend to have one size (a stack copy
		 * each: kilobytes): where the one four ahead would start. */
		if (4 * (size_t)size < end - off)
			__builtin_prefetch(rec + 4 * (size_t)size);
		if (size < 8)
			return bad(pd, off, "a record of %u bytes (type %" PRIu32
				   ")", size, type);
		if (size > end - off) {
			if (inflated)
				break;
			return bad(pd, off, "a record of %u bytes (type %" PRIu32
				   ") runs past the end of the data (%zu bytes "
				   "left: file cut short?)", size, type, end - off);
		}
		if (type == REC_COMPRESSED || type == REC_COMPRESSED2) {
			if (inflated)
				return bad(pd, off, "a compressed record inside "
					   "compressed records");
			err = compressed(pd, off, type, size, st, last_time);
			if (err)
				return err;
		} else if (type >= REC_HEADER_ATTR) {
			/* perf compresses what the kernel wrote, never its own
			 * records: inside, they are passed over. */
			if (pd->pipe && !inflated) {
				err = pipe_record(pd, off, type, size, &skip);
				if (err)
					return err;
				if (skip > end - off - size)
					return bad(pd, off, "record type %" PRIu32
						   "'s payload of %zu bytes runs "
						   "past the end", type, skip);
			}
		} else {
			size_t n = pd->nrecs;

			err = note_record(pd, off, type, size, last_time);
			if (err)
				return err;
			if (st && st->on && pd->nrecs > n) {
				/* The next record, if of this size, while this
				 * one is replayed, and its end (a stack copy's
				 * size; further ahead was slower: 3 records
				 * 108 ms, 6 records 117 ms, the next 103 ms on a
				 * 1 GB dwarf file). */
				if ((size_t)size < end - off)
					prefetch_head(rec + size,
						      size < end - off - size ?
						      size : end - off - size);
				if (2 * (size_t)size < end - off)
					__builtin_prefetch(rec + 2 * (size_t)size - 8);
				st->record(pd, st, n);
			}
		}
		off += size + skip;
	}
	*stop = off;
	return 0;
}

/* Walks the data section [off, end) of the file. */
int kiln_perfdata_read_records(struct pd *pd, size_t off, size_t end,
			       struct kiln_pd_stream *st)
{
	uint64_t last_time = 0;
	size_t stop;
	int err;

	err = walk(pd, off, end, false, st, &last_time, &stop);
	if (err)
		return err;
	if (pd->unz_walked < pd->unz.len)
		return bad(pd, pd->len + pd->unz_walked, "the compressed records "
			   "end inside a record (%zu bytes of it: file cut "
			   "short?)", pd->unz.len - pd->unz_walked);
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The first of r[lo, hi) whose time is above t (or, with eq, not below). */
static size_t bound(const struct rref *r, size_t lo, size_t hi, uint64_t t,
		    bool eq)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (eq ? r[mid].time < t : r[mid].time <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Merges the sorted runs r[a, b) and r[b, c) in place, stably (ties: the
 * left run's first).  Only the records that move are touched: the left
 * run's head that is not above the right run's first time and the right
 * run's tail that is not below the left run's last time stay where they
 * are; the rest of the left run goes through *tmp.  False when out of
 * memory.
 */
static bool merge_runs(struct rref *r, size_t a, size_t b, size_t c,
		       struct rref **tmp, size_t *tmp_alloc)
{
	size_t lo = bound(r, a, b, r[b].time, false);
	size_t hi = bound(r, b, c, r[b - 1].time, true);
	size_t nl = b - lo, i = 0, j = b, k = lo;

	if (lo == b)
		return true;	/* already in order */
	if (nl > *tmp_alloc) {
		struct rref *t = realloc(*tmp, nl * sizeof(*t));

		if (!t)
			return false;
		*tmp = t;
		*tmp_alloc = nl;
	}
	memcpy(*tmp, r + lo, nl * sizeof(*r));
	while (i < nl && j < hi)
		r[k++] = r[j].time < (*tmp)[i].time ? r[j++] : (*tmp)[i++];
	/* What is left of the right part is in place already. */
	memcpy(r + k, *tmp + i, (nl - i) * sizeof(*r));
	return true;
}

#define MERGE_RUNS 1024	/* more runs than that: the radix sort */

/*
 * Puts the records in time order, file order among equal times (what
 * cmp_rec() says).  perf writes each CPU's records in order and the
 * buffers of a round one after another, so the data is nearly sorted
 * already: a file that is sorted is left as it is; one made of a few
 * sorted runs (a frame-pointer file of one program on two CPUs: two) has
 * its runs merged, pairwise, moving only the records that overlap;
 * anything else gets a stable LSD radix sort on the time (util/sort.h;
 * qsort's merge sort through a comparison function was a fifth of the
 * instructions of reading a frame-pointer file; the radix sort's copies
 * of the whole array, a tenth).  The records are in file order on entry,
 * so stability gives the file order among ties.
 */
void kiln_perfdata_sort(struct pd *pd)
{
	struct rref *r = pd->recs, *tmp = NULL;
	size_t n = pd->nrecs, i, nruns = 1, tmp_alloc = 0, w;
	size_t *runs;

	for (i = 1; i < n; i++)
		nruns += r[i].time < r[i - 1].time;
	if (nruns == 1)
		return;
	runs = nruns <= MERGE_RUNS ? malloc((nruns + 1) * sizeof(*runs)) : NULL;
	if (!runs)
		goto radix;
	/* runs[k]: where run k starts; runs[nruns] = n. */
	runs[0] = 0;
	for (i = 1, w = 1; i < n; i++)
		if (r[i].time < r[i - 1].time)
			runs[w++] = i;
	runs[nruns] = n;
	/* Bottom-up: merge run pairs until one run is left. */
	while (nruns > 1) {
		for (i = 0, w = 0; i < nruns; i += 2) {
			if (i + 1 < nruns &&
			    !merge_runs(r, runs[i], runs[i + 1], runs[i + 2],
					&tmp, &tmp_alloc)) {
				/* Out of memory half way: every run is still
				 * sorted and every record there; start over. */
				free(runs);
				free(tmp);
				goto radix;
			}
			runs[w++] = runs[i];
		}
		runs[w] = n;
		nruns = w;
	}
	free(runs);
	free(tmp);
	return;
radix:
	if (kiln_sort_by_u64(pd->recs, n, sizeof(*pd->recs),
			     offsetof(struct rref, time)))
		qsort(pd->recs, n, sizeof(*pd->recs), cmp_rec);
}
