/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf.data reader (format stage), the part its files share: perfdata.c
 * reads the file (header, event attributes, feature sections);
 * perfdata-records.c notes the records and sorts them into time order;
 * perfdata-zstd.c inflates the records `perf record -z`
 * compressed; perfdata-decode.c finds the binaries and kernel symbols the
 * file names and decodes each record into the kiln_perf_event a live
 * recording would have read.  session/replay.c, which replays those
 * events into a profile, drives the whole through these calls.  Private
 * to those files.
 */
#ifndef KILN_FORMAT_PERFDATA_H
#define KILN_FORMAT_PERFDATA_H

#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/perfevent.h"

/* What kiln needs of a perf_event_attr. */
struct attr {
	uint32_t type;
	uint64_t config;
	uint64_t period;	/* sample_period or sample_freq */
	bool freq, sample_id_all;
	uint64_t sample_type, read_format;
	uint64_t branch_sample_type;
	uint64_t regs_user, regs_intr;
	/* Where each register of kiln's mask (KILN_PERF_REGS_MASK, in
	 * order) sits among the file's regs_user: an index, or -1 where the
	 * file has none; nregs_user: how many the file records.  Computed
	 * once per attr, not per sample. */
	int8_t regpos[64];
	uint8_t nwant, nregs_user;
	bool regs_as_is;	/* regpos[j] == j: the file's layout is kiln's */
	uint64_t *ids;
	size_t nids;
	uint64_t *last;		/* PERF_SAMPLE_READ: each id's last count
				 * (NULL: none yet) */
	char *name;		/* from EVENT_DESC, may be NULL */
	/* Which value column of the profile its samples add to (each
	 * event sampled has one, see kiln_perfdata_read()); -1: its
	 * samples are left out (a dummy, or not the --event asked for). */
	int col;
};

struct bid {
	uint32_t pid;
	bool kernel;
	uint8_t id[20];
	uint8_t size;
	char *path;
};

/* A record of the data, to be replayed in time order. */
struct rref {
	uint64_t time;
	uint64_t off : 48;	/* of its header in the file (and its file
				 * order, for a stable sort) */
	uint64_t attr : 16;	/* index of its attr (MAX_ATTRS) */
};

#define MAX_ATTRS 65535	/* event attributes a file may have */
/* The largest period a sample may weigh: 2^48 nanoseconds are 78 hours,
 * 2^48 cycles as long at 1 GHz.  Above it a profile's totals could pass
 * 2^63 in a few thousand samples, which no pprof reader takes. */
#define MAX_PERIOD (1ull << 48)

/* Where the inflated bytes of a compressed record begin (for messages). */
struct zseg {
	size_t unz;		/* offset in pd->unz */
	size_t file;		/* the compressed record's offset in the file */
};

struct pd {
	const char *data;
	size_t len;
	struct kiln_diag *d;
	bool pipe;
	struct attr *attrs;
	size_t nattrs;
	struct bid *bids;
	size_t nbids;
	char *hostname, *osrelease, *cmdline;
	struct rref *recs;
	size_t nrecs, recs_alloc;
	uint64_t lost, unsupported;
	struct kiln_buf scratch;	/* aligned copies of sample arrays */
	const char *read_at;		/* the last sample's PERF_SAMPLE_READ
					 * values, NULL: none */
	struct kiln_buf path;		/* resolved file names */
	struct kiln_map ksyms;		/* kallsyms text (data NULL: none) */
	char *bid_dir;			/* perf's build-id cache */
	/*
	 * PERF_RECORD_COMPRESSED (perf record -z): what the compressed
	 * records inflate to, one after another (perf compresses the ring
	 * buffers as one zstd stream, and a record may be cut between two
	 * compressed records).  A record offset at or past len is one in
	 * here, at off - len (see at()).
	 */
	struct kiln_buf unz;
	size_t unz_walked;		/* records before it have been noted */
	void *zctx;			/* the ZSTD_DCtx of that stream */
	struct zseg *zsegs;
	size_t nzsegs, zsegs_alloc;
};

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

/* [off, off + size) lies inside the file. */
static inline bool inside(const struct pd *pd, uint64_t off, uint64_t size)
{
	return off <= pd->len && size <= pd->len - off;
}

/* perfdata.c: a pipe's header records, read as a file's header is. */
int kiln_perfdata_read_attr(struct pd *pd, size_t off, size_t size,
			    struct attr *a);
int kiln_perfdata_add_attr(struct pd *pd, const struct attr *a);
int kiln_perfdata_set_ids(struct pd *pd, struct attr *a, const char *p,
			  size_t n);
int kiln_perfdata_add_bid(struct pd *pd, const char *p, size_t size,
			  size_t off);
int kiln_perfdata_feature(struct pd *pd, int bit, const char *p,
			  const char *end);

/* The bytes at record offset off: the file's or the inflated records'. */
static inline const char *at(const struct pd *pd, uint64_t off)
{
	return off < pd->len ? pd->data + off : pd->unz.data + (off - pd->len);
}

/*
 * "byte N" for record offset off, for messages; for a byte of the
 * inflated records, N is the compressed record's that holds its start.
 * Returns buf.
 */
const char *kiln_perfdata_where(const struct pd *pd, size_t off, char *buf,
				size_t n);

static inline int bad(struct pd *pd, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int bad(struct pd *pd, size_t off, const char *fmt, ...)
{
	char why[512], where[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return kiln_diag(pd->d, "%s: %s",
			 kiln_perfdata_where(pd, off, where, sizeof(where)), why);
}

static inline uint64_t u64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t u32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t u16(const char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* Bytes of the trailer (to find where a record's own fields end). */
static inline size_t trailer_size(const struct attr *a)
{
	uint64_t st = a->sample_type;

	if (!a->sample_id_all)
		return 0;
	return 8 * (size_t)(!!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) +
			    !!(st & PERF_SAMPLE_ID) + !!(st & PERF_SAMPLE_STREAM_ID) +
			    !!(st & PERF_SAMPLE_CPU) +
			    !!(st & PERF_SAMPLE_IDENTIFIER));
}

/* Asks for the first bytes of a record that may start at p (see the
 * replay loop in kiln_perfdata_read()). */
static inline void prefetch_head(const char *p, size_t size)
{
	size_t k, head = size < 768 ? size : 768;

	for (k = 0; k < head; k += 64)
		__builtin_prefetch(p + k);
}

static inline bool is_dummy(const struct attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_DUMMY;
}

/*
 * Inflates the compressed record (PERF_RECORD_COMPRESSED or COMPRESSED2)
 * of size bytes at file offset off onto pd->unz, in one stream with the
 * ones before it.  0, -ENOMEM, or -EINVAL (pd->d says why: it does not
 * inflate, or past kiln_input_limit() bytes in all).
 */
int kiln_perfdata_inflate(struct pd *pd, size_t off, uint32_t type,
			  uint16_t size);
/* Forgets the counts of PERF_SAMPLE_READ samples replayed so far (for
 * a replay that starts again). */
void kiln_perfdata_forget_counts(struct pd *pd);

/* Frees what kiln_perfdata_inflate() made. */
void kiln_perfdata_inflate_release(struct pd *pd);

/* The event's name for the profile's sample type (buf holds n bytes). */
const char *kiln_perfdata_event_name(const struct attr *a, char *buf, size_t n);

/*
 * pd->ksyms = the kallsyms of the kernel the file was recorded on (perf's
 * build-id cache, or /proc/kallsyms when the running kernel is that one);
 * left empty when neither is there.
 */
void kiln_perfdata_load_kallsyms(struct pd *pd);

/*
 * Decodes record pd->recs[i] into the events it holds (none, one, or for
 * a sample carrying the counts of a group one per event counted) and
 * hands each to fn(ctx, ev); regs: room for 64 registers.  0 or a
 * negative errno (a malformed record: pd->d says what).
 */
int kiln_perfdata_decode(struct pd *pd, size_t i, uint64_t *regs,
			 kiln_perf_fn fn, void *ctx);

/* The most events (value columns) one profile of a file has. */
#define KILN_PD_MAX_COLUMNS 64

/* The events a file samples: one value column of the profile each. */
struct kiln_pd_cols {
	const struct attr *first[KILN_PD_MAX_COLUMNS];	/* an attr of each */
	char type[KILN_PD_MAX_COLUMNS][160];		/* "name/unit" */
	const char *ptr[KILN_PD_MAX_COLUMNS];		/* type[i], for opts */
	uint32_t n;
};

/*
 * Replaying records while they are read (kiln_perfdata_read_records()):
 * record(pd, st, i) is called for each record i as soon as it is noted,
 * while on is set (the caller clears it to stop).
 */
struct kiln_pd_stream {
	bool on;
	void (*record)(struct pd *pd, struct kiln_pd_stream *st, size_t i);
};

/*
 * Reads the header, attributes and feature sections; [*data_off,
 * *data_end) is the data section.  0 or -EINVAL (pd->d says why).
 */
int kiln_perfdata_read_header(struct pd *pd, size_t *data_off,
			      size_t *data_end);
/*
 * Notes every record of the data section [off, end) in pd->recs (and
 * the attrs, build IDs and features a pipe carries among them); st (may
 * be NULL) hears of each as it is noted.  0 or a negative errno.
 */
int kiln_perfdata_read_records(struct pd *pd, size_t off, size_t end,
			       struct kiln_pd_stream *st);
/* Sorts pd->recs into time order (stable: file order among equals). */
void kiln_perfdata_sort(struct pd *pd);
/* Frees what pd holds (not the file's bytes). */
void kiln_perfdata_release(struct pd *pd);
/*
 * Gives each attr its value column (attr.col): the attrs of one event
 * (one name: perf writes an attr per event, sometimes several) share
 * one; dummies and, with --event, the other events get none.  c gets
 * the columns' names.  0, or -EINVAL with pd->d filled.
 */
int kiln_perfdata_pick_events(struct pd *pd, struct kiln_pd_cols *c);
/* cpu-clock and task-clock count nanoseconds. */
bool kiln_perfdata_clock_event(const struct attr *a);
/* Before decoding: perf's build-id cache folder, and the kernel's symbols
 * (kiln_perfdata_load_kallsyms()) unless local files are off. */
void kiln_perfdata_find_symbols(struct pd *pd);

#endif
