/*
 * The kiln heap trace reader (format stage): decompresses the zstd frames
 * one at a time and hands the events of their records (docs/heap-trace.md,
 * version 2) to the heap analysis (profile/hprof.c), in stream order: the
 * writer (format/heapenc.c) already merged the threads by time and wrote
 * frees as block numbers, so reading is one pass with no table of its
 * own.  Blocks are handed to the analysis under their numbers (from 1) in
 * place of addresses.
 *
 * Memory: one frame's decompressed bytes; the analysis holds the rest.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/format.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/limit.h"
#include "util/varint.h"

/* A frame that inflates beyond this is not one the agent wrote. */
#define MAX_FRAME_BYTES (256u << 20)
#define MAX_DEPTH 4096

/* A column of the current frame. */
struct col {
	const unsigned char *p, *end;
};

struct reader {
	size_t frame_off;	/* file offset of the current frame */
	size_t nframe;		/* its number, from 1 */
	struct col col[KILN_HCOL_N];
	uint64_t nrec;		/* the current record's number in its frame */
	unsigned char tag;	/* its tag */
	signed char kind_of[256]; /* tag -> enum kiln_hrec_kind, -1: none */
	struct kiln_diag *d;

	struct kiln_hprof *h;
	struct kiln_heaptrace_info *info;
	bool have_magic, have_header;
	uint32_t next_stack;

	uint64_t t;		/* the time of the last 'T' record */
	uint32_t tid, prev_tid;	/* the current thread, the one before */
	struct kiln_tcount counts; /* blocks allocated per thread */

	uint32_t *tids;		/* threads seen, sorted */
	size_t ntids, tids_alloc;
	uint64_t *pcs;
	uint64_t inflated;	/* bytes decompressed so far */
	const uint64_t *window;	/* [t0, t1) for kiln_hprof_set_window, or NULL */
	uint64_t window_buf[2];
};

static int bad(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct reader *r, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!r->nrec)
		return kiln_diag(r->d, "byte %zu (zstd frame %zu): %s",
				 r->frame_off, r->nframe, why);
	return kiln_diag(r->d, "byte %zu (zstd frame %zu), record %llu ('%c'): %s",
			 r->frame_off, r->nframe, (unsigned long long)r->nrec,
			 r->tag >= 0x20 && r->tag < 0x7f ? r->tag : '?', why);
}

/* ---- fields ---- */

/* The varint of column c that kiln_varint_get() refused, named. */
static __attribute__((noinline, cold)) int
uv_bad(struct reader *r, const struct col *c, int got, const char *what,
       const char *where)
{
	if (got == KILN_VARINT_SHORT)
		return bad(r, "%s: the %s ends early", what, where);
	/* Bits above the 64th in the tenth byte, whether or not it ends. */
	if (c->p[KILN_VARINT_MAX - 1] & 0x7e)
		return bad(r, "%s: varint larger than 64 bits", what);
	return bad(r, "%s: varint longer than 10 bytes", what);
}

/* A varint of k, called `where` in an error. */
static inline int col_uv(struct reader *r, struct col *k, uint64_t *v,
			 const char *what, const char *where)
{
	int got = kiln_varint_get(k->p, (size_t)(k->end - k->p), v);

	if (got <= 0)
		return uv_bad(r, k, got, what, where);
	k->p += got;
	return 0;
}

/* A varint of column c. */
static inline int uv(struct reader *r, int c, uint64_t *v, const char *what)
{
	return col_uv(r, &r->col[c], v, what, kiln_hcol_names[c]);
}

/* A low byte and a varint of the bits above it (sizes, block numbers). */
static inline int split(struct reader *r, int lo, int hi, uint64_t *v,
			const char *what)
{
	struct col *k = &r->col[lo];
	uint64_t x;
	int err;

	if (k->p >= k->end)
		return bad(r, "%s: the %s ends early", what, kiln_hcol_names[lo]);
	err = uv(r, hi, &x, what);
	if (err)
		return err;
	if (x >> 56)
		return bad(r, "%s: larger than 64 bits", what);
	*v = x << 8 | *k->p++;
	return 0;
}

static int str(struct reader *r, int c, const char **s, size_t *len,
	       const char *what)
{
	struct col *k = &r->col[c];
	uint64_t n;
	int err = uv(r, c, &n, what);

	if (err)
		return err;
	if (n > (uint64_t)(k->end - k->p))
		return bad(r, "%s: string of %llu bytes runs past the end of the "
			   "%s", what, (unsigned long long)n, kiln_hcol_names[c]);
	*s = (const char *)k->p;
	*len = (size_t)n;
	k->p += n;
	return 0;
}

/* Integer field i of record kind k, from where format/heapcols.h puts it. */
static inline int field(struct reader *r, int k, int i, uint64_t *v)
{
	const struct kiln_hfield *d = &kiln_hrecs[k].f[i];

	if (d->code == KILN_HF_SPLIT)
		return split(r, d->col, d->col_hi, v, d->name);
	return uv(r, d->col, v, d->name);
}

/* String field i of record kind k. */
static int sfield(struct reader *r, int k, int i, const char **s, size_t *len)
{
	const struct kiln_hfield *d = &kiln_hrecs[k].f[i];

	return str(r, d->col, s, len, d->name);
}

/* ---- records ---- */

static int add_tid(struct reader *r, uint32_t tid)
{
	size_t lo = 0, hi = r->ntids;
	int err;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->tids[mid] == tid)
			return 0;
		if (r->tids[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	err = kiln_array_grow((void **)&r->tids, &r->tids_alloc, r->ntids + 1,
		   sizeof(*r->tids));
	if (err)
		return err;
	memmove(r->tids + lo + 1, r->tids + lo, (r->ntids - lo) * sizeof(*r->tids));
	r->tids[lo] = tid;
	r->ntids++;
	return 0;
}

static int deliver(struct reader *r, enum kiln_hprof_kind kind, uint64_t id,
		   uint64_t size, uint64_t stack)
{
	struct kiln_hprof_ev ev;
	int err;

	ev.t = r->t;
	ev.ptr = id;
	ev.size = size;
	ev.tid = r->tid;
	ev.stack = (uint32_t)stack;
	ev.kind = kind;
	err = kiln_hprof_event(r->h, &ev);
	if (err == -EINVAL)
		return bad(r, "an event refers to stack %llu, which is not "
			   "defined", (unsigned long long)stack);
	return err;
}

/*
 * The analysis knows a block by a number made of its thread and its
 * number among that thread's blocks (tids fit 22 bits: pid_max).
 */
static inline uint64_t block_id(uint32_t tid, uint64_t num)
{
	return ((uint64_t)tid << 42 | num) + 1;
}

/* An event record of kind k; lower-case tags switch to the thread
 * before. */
static int event(struct reader *r, unsigned char tag, int k)
{
	uint64_t size = 0, stack = 0, back = 0, owner, *count;
	uint32_t t;
	int err;

	if (tag != kiln_hrecs[k].tag) {
		t = r->tid;
		r->tid = r->prev_tid;
		r->prev_tid = t;
	}
	if (!r->tid)
		return bad(r, "an event before any thread record ('X')");
	if (k == KILN_HREC_ALLOC) {
		err = field(r, KILN_HREC_ALLOC, 0, &size);
		if (!err)
			err = field(r, KILN_HREC_ALLOC, 1, &stack);
		if (err)
			return err;
		if (!stack || stack >= r->next_stack)
			return bad(r, "stack %llu is not defined yet",
				   (unsigned long long)stack);
		count = kiln_tcount_get(&r->counts, r->tid);
		if (!count)
			return -ENOMEM;
		if (*count >> 42)
			return bad(r, "more than 2^42 blocks in thread %u", r->tid);
		err = deliver(r, KILN_HPROF_ALLOC, block_id(r->tid, *count), size, stack);
		(*count)++;
		return err;
	}
	owner = r->tid;
	if (k == KILN_HREC_RFREE) {
		err = field(r, KILN_HREC_RFREE, 0, &owner);
		if (err)
			return err;
		if (!owner || owner >= 1u << 22)
			return bad(r, "tid %llu out of range", (unsigned long long)owner);
	}
	/* The block: the last field of F and R. */
	err = field(r, k, kiln_hrecs[k].nfield - 1, &back);
	if (err)
		return err;
	count = kiln_tcount_get(&r->counts, (uint32_t)owner);
	if (!count)
		return -ENOMEM;
	if (back >= *count)
		return bad(r, "a free of the block %llu allocations back in thread "
			   "%llu, which made only %llu", (unsigned long long)back + 1,
			   (unsigned long long)owner, (unsigned long long)*count);
	return deliver(r, KILN_HPROF_FREE, block_id((uint32_t)owner, *count - 1 - back),
		       0, 0);
}

static int header(struct reader *r)
{
	const char *s;
	size_t n, i;
	int err;

	err = field(r, KILN_HREC_HEADER, 0, &r->info->pid);
	if (!err)
		err = field(r, KILN_HREC_HEADER, 1, &r->info->ppid);
	if (!err)
		err = field(r, KILN_HREC_HEADER, 2, &r->info->start_realtime_ns);
	if (!err)
		err = field(r, KILN_HREC_HEADER, 3, &r->info->sample_bytes);
	if (!err)
		err = sfield(r, KILN_HREC_HEADER, 4, &s, &n);
	if (err)
		return err;
	free(r->info->cmdline);
	r->info->cmdline = malloc(n + 1);
	if (!r->info->cmdline)
		return -ENOMEM;
	memcpy(r->info->cmdline, s, n);
	/* NUL-separated arguments, maybe NUL-terminated */
	while (n && !s[n - 1])
		n--;
	for (i = 0; i < n; i++)
		if (!r->info->cmdline[i])
			r->info->cmdline[i] = ' ';
	r->info->cmdline[n] = '\0';
	r->h = kiln_hprof_new(r->info->sample_bytes);
	if (!r->h)
		return -ENOMEM;
	if (r->window)
		kiln_hprof_set_window(r->h, r->window[0], r->window[1]);
	r->have_header = true;
	return 0;
}

static int stack(struct reader *r)
{
	uint64_t id = 0, depth = 0, i;
	int err;

	err = field(r, KILN_HREC_STACK, 0, &id);
	if (!err)
		err = field(r, KILN_HREC_STACK, 1, &depth);
	if (err)
		return err;
	if (id != r->next_stack)
		return bad(r, "stack id %llu out of sequence (expected %u)",
			   (unsigned long long)id, r->next_stack);
	if (depth > MAX_DEPTH)
		return bad(r, "stack %llu has %llu frames (at most %d)",
			   (unsigned long long)id, (unsigned long long)depth,
			   MAX_DEPTH);
	for (i = 0; i < depth; i++) {
		err = field(r, KILN_HREC_STACK, 2, &r->pcs[i]);
		if (err)
			return err;
	}
	err = kiln_hprof_add_stack(r->h, (uint32_t)id, r->pcs, (uint32_t)depth);
	if (err)
		return err;
	r->next_stack++;
	return 0;
}

static int record(struct reader *r, unsigned char tag)
{
	int k = r->kind_of[tag];
	uint64_t a = 0;
	const char *s;
	size_t n;
	int err;

	if (!r->have_header) {
		if (k != KILN_HREC_HEADER)
			return bad(r, "the first record is not the header 'H'");
		return header(r);
	}
	switch (k) {
	case KILN_HREC_HEADER:
		return bad(r, "a second header record");
	case KILN_HREC_MAPS:
		err = sfield(r, k, 0, &s, &n);
		return err ? err : kiln_hprof_add_maps(r->h, s, n);
	case KILN_HREC_STACK:
		return stack(r);
	case KILN_HREC_NAME:
		err = field(r, k, 0, &a);
		return err ? err : sfield(r, k, 1, &s, &n);
	case KILN_HREC_TIME:
		err = field(r, k, 0, &a);
		if (err)
			return err;
		if (r->t + a < r->t)
			return bad(r, "the time overflows");
		r->t += a;
		return 0;
	case KILN_HREC_THREAD:
		err = field(r, k, 0, &a);
		if (err)
			return err;
		if (!a || a >= 1u << 22)
			return bad(r, "tid %llu out of range", (unsigned long long)a);
		r->prev_tid = r->tid;
		r->tid = (uint32_t)a;
		return add_tid(r, r->tid);
	case KILN_HREC_ALLOC: case KILN_HREC_FREE: case KILN_HREC_RFREE:
		return event(r, tag, k);
	case KILN_HREC_END:
		return deliver(r, KILN_HPROF_END, 0, 0, 0);
	case KILN_HREC_LOST:
		err = field(r, k, 0, &a);
		if (!err)
			kiln_hprof_lost(r->h, a);
		return err;
	default:
		return bad(r, "unknown record tag 0x%02x", tag);
	}
}

/* A varint of the frame's column table. */
static int head_uv(struct reader *r, const unsigned char **p,
		   const unsigned char *end, uint64_t *v, const char *what)
{
	struct col c = { *p, end };
	int err = col_uv(r, &c, v, what, "column table");

	*p = c.p;
	return err;
}

/*
 * Parses one frame's contents (or the uncompressed stream's): the magic
 * and version in the first, the column table, then the records.
 */
static int records(struct reader *r, const char *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data, *end = p + len;
	uint64_t ncol, n, i, total = 0, version, len_of[64];
	int err;

	r->nrec = 0;
	if (!r->have_magic) {
		if (len < 8 || memcmp(p, "KILNHEAP", 8))
			return bad(r, "not a kiln heap trace: no \"KILNHEAP\" magic");
		p += 8;
		err = head_uv(r, &p, end, &version, "version");
		if (err)
			return err;
		r->info->version = version;
		if (version != KILN_HEAPTRACE_VERSION)
			return bad(r, "trace version %llu; this kiln reads version %d "
				   "(record the program again with this kiln)",
				   (unsigned long long)version, KILN_HEAPTRACE_VERSION);
		r->have_magic = true;
	}
	err = head_uv(r, &p, end, &ncol, "column count");
	if (err)
		return err;
	if (ncol < KILN_HCOL_N || ncol > 64)
		return bad(r, "%llu columns; version %d has %d",
			   (unsigned long long)ncol, KILN_HEAPTRACE_VERSION, KILN_HCOL_N);
	for (i = 0; i < ncol; i++) {
		err = head_uv(r, &p, end, &len_of[i], "column length");
		if (err)
			return err;
	}
	/* The columns follow the table, back to back. */
	for (i = 0; i < ncol; i++) {
		n = len_of[i];
		if (n > (uint64_t)(end - p) || total + n > (uint64_t)(end - p))
			return bad(r, "column %llu runs past the end of the frame",
				   (unsigned long long)i);
		if (i < KILN_HCOL_N) {
			r->col[i].p = p + total;
			r->col[i].end = p + total + n;
		}
		total += n;
	}
	/* Later columns (a later version's) are skipped. */
	while (r->col[KILN_HCOL_TAG].p < r->col[KILN_HCOL_TAG].end) {
		r->tag = *r->col[KILN_HCOL_TAG].p++;
		r->nrec++;
		err = record(r, r->tag);
		if (err)
			return err;
	}
	for (i = 1; i < KILN_HCOL_N; i++)
		if (r->col[i].p != r->col[i].end)
			return bad(r, "%zu bytes left over in the %s column",
				   (size_t)(r->col[i].end - r->col[i].p), kiln_hcol_names[i]);
	return 0;
}

/* The most one frame may inflate to: it is held whole in memory. */
static size_t frame_limit(void)
{
	size_t l = kiln_input_limit();

	return l < MAX_FRAME_BYTES ? l : MAX_FRAME_BYTES;
}

/*
 * The trace is analysed a frame at a time, so its total size costs time,
 * not memory: a long run's trace legitimately inflates to many GiB.  A
 * trace that inflates more than BOMB_RATIO times its compressed size and
 * beyond the input limit is a decompression bomb (the agent's frames
 * compress 3-10 times).
 */
#define BOMB_RATIO 1024

static int check_total(struct reader *r, size_t compressed)
{
	uint64_t cap = (uint64_t)compressed * BOMB_RATIO;
	char lim[32];

	if (cap < kiln_input_limit())
		cap = kiln_input_limit();
	if (r->inflated <= cap)
		return 0;
	return kiln_diag(r->d, "byte %zu (zstd frame %zu): the trace inflates to "
			 "more than %s from %zu bytes, over %d times its size and "
			 "the limit for decompressed input (set KILN_MAX_INPUT to "
			 "raise it)", r->frame_off, r->nframe,
			 kiln_size_str(kiln_input_limit(), lim, sizeof(lim)),
			 compressed, BOMB_RATIO);
}

/* Decompresses the frame [off, off+n) into out. */
static int inflate_frame(struct reader *r, ZSTD_DCtx *z, const char *src,
			 size_t n, struct kiln_buf *out)
{
	ZSTD_inBuffer in = { src, n, 0 };
	unsigned long long want = ZSTD_getFrameContentSize(in.src, n);
	int err;

	kiln_buf_reset(out);
	ZSTD_DCtx_reset(z, ZSTD_reset_session_only);
	if (want != ZSTD_CONTENTSIZE_UNKNOWN && want != ZSTD_CONTENTSIZE_ERROR &&
	    want <= frame_limit()) {
		err = kiln_buf_grow(out, (size_t)want + 1);
		if (err)
			return err;
	}
	for (;;) {
		ZSTD_outBuffer o;
		size_t rc;

		err = kiln_buf_grow(out, 65536);
		if (err)
			return err;
		o.dst = out->data + out->len;
		o.size = out->cap - out->len - 1;
		o.pos = 0;
		rc = ZSTD_decompressStream(z, &o, &in);
		out->len += o.pos;
		out->data[out->len] = '\0';
		if (ZSTD_isError(rc)) {
			if (ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation)
				return -ENOMEM;
			return kiln_diag(r->d, "byte %zu (zstd frame %zu): corrupt "
					 "zstd frame: %s", r->frame_off, r->nframe,
					 ZSTD_getErrorName(rc));
		}
		if (out->len > frame_limit()) {
			char lim[32];

			return kiln_diag(r->d, "byte %zu (zstd frame %zu): the frame "
					 "inflates to more than %s (the agent writes "
					 "frames of 1 MiB; KILN_MAX_INPUT is the limit "
					 "below 256 MiB)", r->frame_off, r->nframe,
					 kiln_size_str(frame_limit(), lim, sizeof(lim)));
		}
		if (rc == 0)
			return 0;
		if (in.pos == in.size && o.pos < o.size)
			return kiln_diag(r->d, "byte %zu (zstd frame %zu): the "
					 "frame ends early", r->frame_off, r->nframe);
	}
}

static bool is_zstd(const char *data, size_t len)
{
	return len >= 4 && (unsigned char)data[0] == 0x28 &&
	       (unsigned char)data[1] == 0xb5 && (unsigned char)data[2] == 0x2f &&
	       (unsigned char)data[3] == 0xfd;
}

bool kiln_heaptrace_detect(const char *data, size_t len)
{
	char head[9];
	ZSTD_DCtx *z;
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_outBuffer out = { head, sizeof(head), 0 };
	int i;

	if (len >= 8 && !memcmp(data, "KILNHEAP", 8))
		return true;
	if (!is_zstd(data, len))
		return false;
	z = ZSTD_createDCtx();
	if (!z)
		return false;
	/* The first bytes come after a few steps at most. */
	for (i = 0; i < 16 && out.pos < out.size; i++) {
		size_t rc = ZSTD_decompressStream(z, &out, &in);

		if (ZSTD_isError(rc) || rc == 0)
			break;
	}
	ZSTD_freeDCtx(z);
	/* A first frame cut too short to tell is left to the reader, which
	 * says where it ends. */
	return out.pos < 8 || !memcmp(head, "KILNHEAP", 8);
}

/*
 * A varint of p[*i..n), or false when it does not end there.  Bits above
 * the 64th in a tenth byte are dropped: the peek only recognizes a trace,
 * the reader names what is wrong with one.
 */
static bool peek_uv(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
	int got = kiln_varint_get_proto(p + *i, n - *i, v);

	if (got <= 0)
		return false;
	*i += (size_t)got;
	return true;
}

int kiln_heaptrace_peek(const char *data, size_t len,
			struct kiln_heaptrace_info *info)
{
	unsigned char out[8192];
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_outBuffer o = { out, sizeof(out), 0 };
	uint64_t version, ncol, col0 = 0, v[4];
	size_t i = 8, f, k;
	ZSTD_DCtx *z;

	if (!is_zstd(data, len))
		return -EINVAL;
	z = ZSTD_createDCtx();
	if (!z)
		return -ENOMEM;
	/* The first frame only: the header is in its first bytes. */
	while (o.pos < o.size && in.pos < in.size) {
		size_t rc = ZSTD_decompressStream(z, &o, &in);

		if (ZSTD_isError(rc) || rc == 0)
			break;
	}
	ZSTD_freeDCtx(z);
	if (o.pos < 8 || memcmp(out, "KILNHEAP", 8) ||
	    !peek_uv(out, o.pos, &i, &version) || version != KILN_HEAPTRACE_VERSION ||
	    !peek_uv(out, o.pos, &i, &ncol) || ncol < KILN_HCOL_N || ncol > 64)
		return -EINVAL;
	for (k = 0; k < ncol; k++) {
		uint64_t l;

		if (!peek_uv(out, o.pos, &i, &l))
			return -EINVAL;
		if (!k)
			col0 = l;
	}
	/* The tags column, then the fields column: H's fields first. */
	if (!col0 || col0 > o.pos - i || out[i] != 'H')
		return -EINVAL;
	f = i + (size_t)col0;
	for (k = 0; k < 4; k++)
		if (!peek_uv(out, o.pos, &f, &v[k]))
			return -EINVAL;
	info->version = version;
	info->pid = v[0];
	info->ppid = v[1];
	info->start_realtime_ns = v[2];
	info->sample_bytes = v[3];
	return 0;
}

void kiln_heaptrace_info_release(struct kiln_heaptrace_info *info)
{
	free(info->cmdline);
	info->cmdline = NULL;
}

struct kiln_heaptrace_stream {
	struct reader r;
	ZSTD_DCtx *z;
	struct kiln_buf frame;
	int err;		/* sticky */
	bool raw;		/* one uncompressed stream */
};

struct kiln_heaptrace_stream *kiln_heaptrace_stream_new(
	struct kiln_heaptrace_info *info, struct kiln_diag *d)
{
	struct kiln_heaptrace_stream *s = calloc(1, sizeof(*s));

	memset(info, 0, sizeof(*info));
	if (!s)
		return NULL;
	s->r.d = d;
	s->r.info = info;
	s->r.next_stack = 1;
	kiln_hrec_map(s->r.kind_of);
	s->r.pcs = malloc(MAX_DEPTH * sizeof(*s->r.pcs));
	s->z = ZSTD_createDCtx();
	if (!s->r.pcs || !s->z) {
		kiln_heaptrace_stream_free(s);
		return NULL;
	}
	return s;
}

void kiln_heaptrace_stream_free(struct kiln_heaptrace_stream *s)
{
	if (!s)
		return;
	kiln_hprof_free(s->r.h);
	ZSTD_freeDCtx(s->z);
	kiln_buf_release(&s->frame);
	free(s->r.tids);
	free(s->r.pcs);
	kiln_tcount_release(&s->r.counts);
	free(s);
}

int kiln_heaptrace_stream_feed(struct kiln_heaptrace_stream *s, const char *data,
			       size_t len, bool final, size_t *used)
{
	struct reader *r = &s->r;
	struct kiln_heaptrace_info *info = r->info;
	size_t at = 0;
	int err = s->err;

	*used = 0;
	if (err)
		return err;
	if (!r->nframe && !is_zstd(data, len)) {
		if (!final && len < 8)
			return 0;	/* too early to tell */
		/* An uncompressed stream (for tests and debugging). */
		if (!final || len < 8 || memcmp(data, "KILNHEAP", 8)) {
			err = kiln_diag(r->d, "byte 0: not a kiln heap trace (neither "
					"a zstd frame nor the \"KILNHEAP\" magic)");
			goto out;
		}
		s->raw = true;
		r->nframe = 1;
		err = records(r, data, len);
		info->frames = 1;
		at = len;
		goto out;
	}
	while (at < len && !err) {
		size_t n = ZSTD_findFrameCompressedSize(data + at, len - at);

		if (ZSTD_isError(n)) {
			if (ZSTD_getErrorCode(n) == ZSTD_error_srcSize_wrong) {
				/* A frame still being written, or cut. */
				if (final) {
					info->truncated = true;
					info->truncated_at = r->frame_off;
				}
				break;
			}
			err = kiln_diag(r->d, "byte %zu (zstd frame %zu): not a zstd "
					"frame: %s", r->frame_off, r->nframe + 1,
					ZSTD_getErrorName(n));
			break;
		}
		r->nframe++;
		err = inflate_frame(r, s->z, data + at, n, &s->frame);
		if (!err) {
			r->inflated += s->frame.len;
			err = check_total(r, r->frame_off + n);
		}
		if (!err && s->frame.len)
			err = records(r, s->frame.data, s->frame.len);
		if (!err)
			info->frames++;
		r->frame_off += n;
		at += n;
	}
out:
	*used = at;
	s->err = err;
	return err;
}

int kiln_heaptrace_stream_end(struct kiln_heaptrace_stream *s, size_t len,
			      struct kiln_hprof **out)
{
	struct reader *r = &s->r;
	struct kiln_heaptrace_info *info = r->info;
	int err = s->err;

	*out = NULL;
	if (!err && !r->have_header && info->truncated)
		err = kiln_diag(r->d, "byte %zu: the file ends inside zstd frame %zu "
				"(which starts at byte %zu), before the header record",
				len, r->nframe + 1, info->truncated_at);
	else if (!err && !r->have_header)
		err = kiln_diag(r->d, "byte %zu: the trace ends before its header "
				"record", len);
	if (!err) {
		kiln_hprof_finish(r->h);
		info->threads = r->ntids;
		*out = r->h;
		r->h = NULL;
	}
	s->err = err;
	return err;
}

int kiln_heaptrace_stream_window(struct kiln_heaptrace_stream *s, uint64_t t0,
				 uint64_t t1)
{
	if (s->r.have_header || t0 >= t1)
		return -EINVAL;
	s->r.window_buf[0] = t0;
	s->r.window_buf[1] = t1;
	s->r.window = s->r.window_buf;
	return 0;
}

static int analyse(const char *data, size_t len, const uint64_t *range,
		   struct kiln_hprof **out, struct kiln_heaptrace_info *info,
		   struct kiln_diag *d)
{
	struct kiln_heaptrace_stream *s = kiln_heaptrace_stream_new(info, d);
	size_t used;
	int err = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (range)
		err = kiln_heaptrace_stream_window(s, range[0], range[1]);
	if (!err)
		err = kiln_heaptrace_stream_feed(s, data, len, true, &used);
	if (!err)
		err = kiln_heaptrace_stream_end(s, len, out);
	kiln_heaptrace_stream_free(s);
	return err;
}

int kiln_heaptrace_analyse(const char *data, size_t len, struct kiln_hprof **out,
			   struct kiln_heaptrace_info *info,
			   struct kiln_diag *d)
{
	return analyse(data, len, NULL, out, info, d);
}

static int read_prof(struct kiln_prof *p, const char *data, size_t len,
		     const uint64_t *range, struct kiln_diag *d)
{
	struct kiln_heaptrace_info info;
	struct kiln_hprof *h = NULL;
	struct kiln_sym *sym = NULL;
	char note[160];
	int err;

	err = analyse(data, len, range, &h, &info, d);
	if (err)
		goto out;
	err = kiln_hprof_prof(h, KILN_HPROF_MEASURES, p, NULL);
	if (err)
		goto out;
	p->time_nanos = (int64_t)info.start_realtime_ns;
	if (info.cmdline && *info.cmdline) {
		err = kiln_prof_add_comment(p, info.cmdline);
		if (err)
			goto out;
	}
	if (info.truncated) {
		snprintf(note, sizeof(note), "the trace was cut after byte %zu "
			 "(process killed?): read up to there", info.truncated_at);
		err = kiln_prof_add_comment(p, note);
		if (err)
			goto out;
	}
	sym = kiln_sym_new(NULL);
	if (!sym) {
		err = -ENOMEM;
		goto out;
	}
	err = kiln_sym_prof(sym, p, 0);
	if (!err)
		err = kiln_prof_error(p);
out:
	kiln_sym_free(sym);
	kiln_hprof_free(h);
	kiln_heaptrace_info_release(&info);
	return err;
}

int kiln_heaptrace_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d)
{
	return read_prof(p, data, len, NULL, d);
}

int kiln_heaptrace_read_range(struct kiln_prof *p, const char *data, size_t len,
			      uint64_t t0, uint64_t t1, struct kiln_diag *d)
{
	const uint64_t range[2] = { t0, t1 };

	return read_prof(p, data, len, range, d);
}
