/*
 * perf.data reader (format stage): perf's own file format, as written by
 * `perf record` to a file or (pipe mode, `perf record -o -`) to a stream,
 * turned into a profile by the same code that turns kiln record's live
 * perf records into one (session/record.c): per-process mappings from
 * MMAP/MMAP2, thread names from COMM, FORK/EXIT, samples with their call
 * chains, and `--call-graph dwarf` register and stack copies unwound with
 * kiln's DWARF unwinder.
 *
 * This file reads the file (header, event attributes, feature sections,
 * the records and their times); perfdata-decode.c finds the binaries and
 * kernel symbols and decodes the records; session/replay.c drives the
 * whole and replays them in time order.  The file is hostile input: every length, offset and count is
 * checked against the bytes there are before it is used, nothing is read
 * through a pointer that may be misaligned, and the paths it names are
 * opened only when they are regular files.
 *
 * Layout facts from linux tools/perf/Documentation/perf.data-file-format.txt
 * and include/uapi/linux/perf_event.h.  See docs/formats.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "capture/perf.h"
#include "format/format.h"
#include "format/perfdata.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/sort.h"
#include "util/diag.h"

#define MAGIC 0x32454c4946524550ull	/* "PERFILE2" little-endian */
#define MAGIC_SWAPPED 0x50455246494c4532ull

/* perf's own record types (tools/perf/util/event.h), after the kernel's. */
enum {
	REC_HEADER_ATTR = 64,
	REC_HEADER_EVENT_TYPE = 65,
	REC_HEADER_TRACING_DATA = 66,
	REC_HEADER_BUILD_ID = 67,
	REC_FINISHED_ROUND = 68,
	REC_AUXTRACE = 71,
	REC_HEADER_FEATURE = 80,
	REC_COMPRESSED = 81,
	REC_COMPRESSED2 = 83,	/* perf 6.15: with the payload's length */
};

/* Feature bits (tools/perf/util/header.h). */
enum {
	FEAT_BUILD_ID = 2,
	FEAT_HOSTNAME = 3,
	FEAT_OSRELEASE = 4,
	FEAT_CMDLINE = 11,
	FEAT_EVENT_DESC = 12,
	FEAT_MAX = 256,
};

#define MISC_BUILD_ID_SIZE (1 << 15)	/* build_id_event: size byte valid */
/* [off, off + size) lies inside the file. */
static bool inside(const struct pd *pd, uint64_t off, uint64_t size)
{
	return off <= pd->len && size <= pd->len - off;
}

/* ---- attributes ---- */

/*
 * a->regpos: the layout kiln's unwinder reads, the registers of kiln's
 * mask in order, as places in the file's sample (a register's place: the
 * file's registers below it).
 */
static void reg_layout(struct attr *a)
{
	uint64_t want, below;
	int bit;

	a->nwant = 0;
	a->regs_as_is = true;
	a->nregs_user = (uint8_t)__builtin_popcountll(a->regs_user);
	for (want = kiln_perf_regs_mask(); want; want &= want - 1) {
		bit = __builtin_ctzll(want);
		below = a->regs_user & ((1ull << bit) - 1);
		a->regpos[a->nwant++] = (a->regs_user >> bit) & 1 ?
			(int8_t)__builtin_popcountll(below) : -1;
		a->regs_as_is &= a->regpos[a->nwant - 1] == a->nwant - 1;
	}
}

/*
 * Reads a perf_event_attr of size bytes at off (the attr's own size field
 * may say less: older perf).  Fields past the given size are zero.
 */
static int read_attr(struct pd *pd, size_t off, size_t size, struct attr *a)
{
	char buf[256];
	uint64_t bits;
	uint32_t asize;

	if (size < PERF_ATTR_SIZE_VER0)
		return bad(pd, off, "an event attribute of %zu bytes (at least "
			   "%d expected)", size, PERF_ATTR_SIZE_VER0);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, pd->data + off, size < sizeof(buf) ? size : sizeof(buf));
	asize = u32(buf + 4);
	if (asize && asize < size && asize >= PERF_ATTR_SIZE_VER0)
		memset(buf + asize, 0, sizeof(buf) - (asize < sizeof(buf) ?
						      asize : sizeof(buf)));
	memset(a, 0, sizeof(*a));
	a->type = u32(buf);
	a->config = u64(buf + 8);
	a->period = u64(buf + 16);
	a->sample_type = u64(buf + 24);
	a->read_format = u64(buf + 32);
	bits = u64(buf + 40);
	a->freq = (bits >> 10) & 1;
	a->sample_id_all = (bits >> 18) & 1;
	a->branch_sample_type = u64(buf + 72);
	a->regs_user = u64(buf + 80);
	a->regs_intr = u64(buf + 104);
	reg_layout(a);
	return 0;
}

static int add_attr(struct pd *pd, const struct attr *a)
{
	struct attr *n;

	if (pd->nattrs >= MAX_ATTRS)
		return bad(pd, 0, "more than %d event attributes", MAX_ATTRS);
	n = realloc(pd->attrs, (pd->nattrs + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	pd->attrs = n;
	pd->attrs[pd->nattrs++] = *a;
	return 0;
}

static int set_ids(struct pd *pd, struct attr *a, const char *p, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	a->ids = malloc(n * sizeof(*a->ids));
	if (!a->ids)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		a->ids[i] = u64(p + 8 * i);
	a->nids = n;
	return 0;
}

/* The file header's attrs section: perf_file_attr { attr; section ids },
 * file_attr_size bytes each. */
static int read_attrs(struct pd *pd, uint64_t file_attr_size, uint64_t off,
		      uint64_t size)
{
	uint64_t ent = file_attr_size, attr_size = ent - 16, i;
	int err;

	if (ent < PERF_ATTR_SIZE_VER0 + 16 || ent > 4096)
		return bad(pd, 16, "attribute size %" PRIu64 " is not plausible",
			   ent);
	if (!inside(pd, off, size))
		return bad(pd, 24, "the attribute section (offset %" PRIu64
			   ", %" PRIu64 " bytes) lies past the end of the file "
			   "(%zu bytes: cut short?)", off, size, pd->len);
	if (!size || size % ent)
		return bad(pd, 32, "the attribute section's size %" PRIu64
			   " is not a multiple of %" PRIu64, size, ent);
	for (i = 0; i < size / ent; i++) {
		size_t at = (size_t)(off + i * ent);
		struct attr a;
		uint64_t ioff = u64(pd->data + at + attr_size);
		uint64_t isz = u64(pd->data + at + attr_size + 8);

		err = read_attr(pd, at, (size_t)attr_size, &a);
		if (err)
			return err;
		if (!inside(pd, ioff, isz) || isz % 8) {
			return bad(pd, at + (size_t)attr_size, "event %" PRIu64
				   "'s id list (offset %" PRIu64 ", %" PRIu64
				   " bytes) lies outside the file", i, ioff, isz);
		}
		err = add_attr(pd, &a);
		if (!err)
			err = set_ids(pd, &pd->attrs[pd->nattrs - 1],
				      pd->data + ioff, (size_t)(isz / 8));
		if (err)
			return err;
	}
	return 0;
}

/* ---- feature sections ---- */

/* A perf_header_string: u32 len, then len bytes (NUL-padded). */
static int get_string(struct pd *pd, const char **p, const char *end,
		      char **out)
{
	uint32_t n;

	if (end - *p < 4)
		return bad(pd, (size_t)(*p - pd->data), "a string is cut short");
	n = u32(*p);
	*p += 4;
	if (n > (size_t)(end - *p))
		return bad(pd, (size_t)(*p - pd->data - 4), "a string of %" PRIu32
			   " bytes runs past its section", n);
	*out = strndup(*p, n);
	if (!*out)
		return -ENOMEM;
	*p += n;
	return 0;
}

static int feat_event_desc(struct pd *pd, const char *p, const char *end)
{
	uint32_t nr, asize, i, nids, k;
	int err;

	if (end - p < 8)
		return bad(pd, (size_t)(p - pd->data), "event descriptions cut short");
	nr = u32(p);
	asize = u32(p + 4);
	p += 8;
	if (asize < PERF_ATTR_SIZE_VER0 || asize > 4096)
		return bad(pd, (size_t)(p - pd->data - 4), "event description "
			   "with an attribute of %" PRIu32 " bytes", asize);
	for (i = 0; i < nr; i++) {
		struct attr a;
		char *name = NULL;

		if ((size_t)(end - p) < asize + 4)
			return bad(pd, (size_t)(p - pd->data), "event description "
				   "%" PRIu32 " cut short", i);
		err = read_attr(pd, (size_t)(p - pd->data), asize, &a);
		if (err)
			return err;
		p += asize;
		nids = u32(p);
		p += 4;
		err = get_string(pd, &p, end, &name);
		if (err)
			return err;
		if (nids > (size_t)(end - p) / 8) {
			free(name);
			return bad(pd, (size_t)(p - pd->data), "event description "
				   "%" PRIu32 " lists %" PRIu32 " ids past its "
				   "section", i, nids);
		}
		/* Name the attr that holds its ids (or the i-th). */
		for (k = 0; k < pd->nattrs; k++) {
			struct attr *t = &pd->attrs[k];
			bool match = k == i && (!nids || !t->nids);
			size_t j;

			for (j = 0; nids && j < t->nids; j++)
				if (t->ids[j] == u64(p))
					match = true;
			if (match && !t->name) {
				t->name = name;
				name = NULL;
				break;
			}
		}
		free(name);
		p += 8 * (size_t)nids;
	}
	return 0;
}

static int add_bid(struct pd *pd, const char *p, size_t size, size_t off)
{
	/* build_id_event: header, pid, build_id[24], filename[] */
	struct bid b, *n;
	uint16_t misc;
	size_t flen;

	if (size < 8 + 4 + 24 + 1)
		return bad(pd, off, "a build ID record of %zu bytes", size);
	misc = u16(p + 4);
	memset(&b, 0, sizeof(b));
	b.pid = u32(p + 8);
	memcpy(b.id, p + 12, 20);
	b.size = misc & MISC_BUILD_ID_SIZE ? (uint8_t)p[32] : 20;
	if (b.size > 20 || !b.size)
		return bad(pd, off, "a build ID of %u bytes", b.size);
	b.kernel = (misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		   PERF_RECORD_MISC_KERNEL;
	flen = strnlen(p + 36, size - 36);
	b.path = strndup(p + 36, flen);
	if (!b.path)
		return -ENOMEM;
	n = realloc(pd->bids, (pd->nbids + 1) * sizeof(*n));
	if (!n) {
		free(b.path);
		return -ENOMEM;
	}
	pd->bids = n;
	pd->bids[pd->nbids++] = b;
	return 0;
}

static int feat_build_id(struct pd *pd, const char *p, const char *end)
{
	while (p < end) {
		uint16_t size;
		int err;

		if (end - p < 8)
			return bad(pd, (size_t)(p - pd->data), "build ID list cut "
				   "short");
		size = u16(p + 6);
		if (size < 8 || size > (size_t)(end - p))
			return bad(pd, (size_t)(p - pd->data), "a build ID record "
				   "of %u bytes runs past its section", size);
		err = add_bid(pd, p, size, (size_t)(p - pd->data));
		if (err)
			return err;
		p += size;
	}
	return 0;
}

static int feature(struct pd *pd, int bit, const char *p, const char *end)
{
	char *s = NULL, *line;
	uint32_t nr, i;
	int err = 0;

	switch (bit) {
	case FEAT_BUILD_ID:
		return feat_build_id(pd, p, end);
	case FEAT_EVENT_DESC:
		return feat_event_desc(pd, p, end);
	case FEAT_HOSTNAME:
		if (!pd->hostname)
			return get_string(pd, &p, end, &pd->hostname);
		return 0;
	case FEAT_OSRELEASE:
		if (!pd->osrelease)
			return get_string(pd, &p, end, &pd->osrelease);
		return 0;
	case FEAT_CMDLINE:
		if (pd->cmdline)
			return 0;
		if (end - p < 4)
			return bad(pd, (size_t)(p - pd->data), "command line cut "
				   "short");
		nr = u32(p);
		p += 4;
		line = strdup("");
		if (!line)
			return -ENOMEM;
		for (i = 0; i < nr && !err; i++) {
			char *t;

			err = get_string(pd, &p, end, &s);
			if (err)
				break;
			if (asprintf(&t, "%s%s%s", line, i ? " " : "", s) < 0)
				err = -ENOMEM;
			else {
				free(line);
				line = t;
			}
			free(s);
		}
		if (err)
			free(line);
		else
			pd->cmdline = line;
		return err;
	}
	return 0;
}

/* The feature sections after the data: one perf_file_section per bit. */
static int read_features(struct pd *pd, const char *bits, uint64_t at)
{
	int bit, k = 0, err;

	for (bit = 0; bit < FEAT_MAX; bit++) {
		uint64_t off, size;
		size_t sec;

		if (!((unsigned char)bits[bit / 8] & (1u << (bit % 8))))
			continue;
		sec = (size_t)(at + 16 * (uint64_t)k++);
		if (!inside(pd, sec, 16))
			return bad(pd, sec < pd->len ? sec : pd->len, "the feature "
				   "table is cut short (feature %d; file of %zu "
				   "bytes: cut short?)", bit, pd->len);
		off = u64(pd->data + sec);
		size = u64(pd->data + sec + 8);
		if (!inside(pd, off, size))
			return bad(pd, sec, "feature %d's section (offset %" PRIu64
				   ", %" PRIu64 " bytes) lies past the end of "
				   "the file", bit, off, size);
		err = feature(pd, bit, pd->data + off, pd->data + off + size);
		if (err)
			return err;
	}
	return 0;
}

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
	if (pd->nrecs == pd->recs_alloc) {
		size_t n = pd->recs_alloc ? pd->recs_alloc * 2 : 1024;
		struct rref *q = realloc(pd->recs, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		pd->recs = q;
		pd->recs_alloc = n;
	}
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
		err = read_attr(pd, off + 8, asize, &a);
		if (!err)
			err = add_attr(pd, &a);
		if (!err)
			err = set_ids(pd, &pd->attrs[pd->nattrs - 1],
				      rec + 8 + asize, (size - 8 - asize) / 8);
		return err;
	case REC_HEADER_BUILD_ID:
		return add_bid(pd, rec, size, off);
	case REC_HEADER_FEATURE:
		if (size < 16)
			return bad(pd, off, "a feature record of %u bytes", size);
		if (u64(rec + 8) >= FEAT_MAX)
			return 0;
		return feature(pd, (int)u64(rec + 8), rec + 16, rec + size);
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

/* ---- the whole file ---- */

int kiln_perfdata_read_header(struct pd *pd, size_t *data_off,
			      size_t *data_end)
{
	uint64_t size, attr_size, aoff, asize, doff, dsize;
	int err;

	if (pd->len < 16)
		return bad(pd, 0, "%zu bytes: a perf.data header is 16 bytes or "
			   "more (file cut short?)", pd->len);
	if (u64(pd->data) == MAGIC_SWAPPED)
		return bad(pd, 0, "a big-endian perf.data (recorded on another "
			   "architecture) is not supported");
	if (u64(pd->data) != MAGIC)
		return bad(pd, 0, "not a perf.data file (no \"PERFILE2\" magic; "
			   "the older \"PERFFILE\" format is not supported)");
	size = u64(pd->data + 8);
	if (size == 16) {
		/* Pipe mode: records from here on, attrs among them. */
		pd->pipe = true;
		*data_off = 16;
		*data_end = pd->len;
		return 0;
	}
	if (size != 104 || pd->len < 104)
		return bad(pd, 8, "header size %" PRIu64 " (104 for a file, 16 "
			   "for a pipe%s)", size, pd->len < 104 ?
			   "; file cut short?" : "");
	attr_size = u64(pd->data + 16);
	aoff = u64(pd->data + 24);
	asize = u64(pd->data + 32);
	doff = u64(pd->data + 40);
	dsize = u64(pd->data + 48);
	err = read_attrs(pd, attr_size, aoff, asize);
	if (err)
		return err;
	if (!inside(pd, doff, dsize))
		return bad(pd, 40, "the data section (offset %" PRIu64 ", %"
			   PRIu64 " bytes) lies past the end of the file (%zu "
			   "bytes: cut short, or perf record still running?)",
			   doff, dsize, pd->len);
	*data_off = (size_t)doff;
	*data_end = (size_t)(doff + dsize);
	return read_features(pd, pd->data + 72, doff + dsize);
}

void kiln_perfdata_release(struct pd *pd)
{
	size_t i;

	for (i = 0; i < pd->nattrs; i++) {
		free(pd->attrs[i].ids);
		free(pd->attrs[i].last);
		free(pd->attrs[i].name);
	}
	free(pd->attrs);
	for (i = 0; i < pd->nbids; i++)
		free(pd->bids[i].path);
	free(pd->bids);
	free(pd->hostname);
	free(pd->osrelease);
	free(pd->cmdline);
	free(pd->recs);
	free(pd->bid_dir);
	kiln_perfdata_inflate_release(pd);
	kiln_buf_release(&pd->scratch);
	kiln_buf_release(&pd->path);
	if (pd->ksyms.data)
		kiln_map_release(&pd->ksyms);
}

static char *buildid_dir(void)
{
	const char *e = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char *s;

	if (e && e[0])
		return strdup(e);
	if (!home || !home[0])
		return NULL;
	return asprintf(&s, "%s/.debug", home) < 0 ? NULL : s;
}

bool kiln_perfdata_detect(const char *data, size_t len)
{
	return len >= 8 && (u64(data) == MAGIC || u64(data) == MAGIC_SWAPPED);
}

static const char *want_event;	/* kiln_perfdata_set_event() */

void kiln_perfdata_set_event(const char *name)
{
	want_event = name && *name ? name : NULL;
}

bool kiln_perfdata_clock_event(const struct attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE &&
	       (a->config == PERF_COUNT_SW_CPU_CLOCK ||
		a->config == PERF_COUNT_SW_TASK_CLOCK);
}

int kiln_perfdata_pick_events(struct pd *pd, struct kiln_pd_cols *c)
{
	char name[128], known[512];
	size_t i, kl = 0;
	uint32_t k, want = UINT32_MAX;

	c->n = 0;
	for (i = 0; i < pd->nattrs; i++) {
		struct attr *a = &pd->attrs[i];
		const char *nm;

		a->col = -1;
		if (is_dummy(a))
			continue;
		nm = kiln_perfdata_event_name(a, name, sizeof(name));
		for (k = 0; k < c->n; k++)
			if (!strncmp(c->type[k], nm, strlen(nm)) &&
			    c->type[k][strlen(nm)] == '/')
				break;
		if (k == c->n) {
			if (c->n == KILN_PD_MAX_COLUMNS)
				return bad(pd, 0, "more than %d events sampled: "
					   "pick one with --event",
					   KILN_PD_MAX_COLUMNS);
			snprintf(c->type[k], sizeof(c->type[k]), "%s/%s", nm,
				 kiln_perfdata_clock_event(a) ? "nanoseconds" : "count");
			c->first[k] = a;
			c->ptr[k] = c->type[k];
			c->n++;
		}
		a->col = (int)k;
		/* --event NAME: the name kiln gives it or the file's own
		 * ("cycles:u"). */
		if (want_event && want == UINT32_MAX &&
		    (!strcmp(nm, want_event) ||
		     (a->name && !strcmp(a->name, want_event))))
			want = k;
	}
	if (!c->n && pd->nattrs) {
		/* Only dummies: a profile of none of their samples. */
		snprintf(c->type[0], sizeof(c->type[0]), "%s/count",
			 kiln_perfdata_event_name(&pd->attrs[0], name,
						  sizeof(name)));
		c->first[0] = &pd->attrs[0];
		c->ptr[0] = c->type[0];
		c->n = 1;
	}
	if (!want_event)
		return 0;
	if (want == UINT32_MAX) {
		known[0] = '\0';
		for (k = 0; k < c->n && kl < sizeof(known) - 1; k++) {
			int w = snprintf(known + kl, sizeof(known) - kl, "%s%.*s",
					 k ? ", " : "",
					 (int)strcspn(c->type[k], "/"), c->type[k]);

			if (w < 0)
				break;
			kl += (size_t)w;
		}
		return kiln_diag(pd->d, "no event '%s' in the file (it samples %s)",
				 want_event, c->n ? known : "none");
	}
	for (i = 0; i < pd->nattrs; i++)
		pd->attrs[i].col = pd->attrs[i].col == (int)want ? 0 : -1;
	c->first[0] = c->first[want];
	memmove(c->type[0], c->type[want], sizeof(c->type[0]));
	c->n = 1;
	return 0;
}

void kiln_perfdata_find_symbols(struct pd *pd)
{
	pd->bid_dir = buildid_dir();
	if (!kiln_sym_no_local())
		kiln_perfdata_load_kallsyms(pd);
}
