/*
 * The kiln heap trace reader (format stage): decompresses the zstd frames
 * one at a time, parses their records (docs/heap-trace.md) and merges the
 * per-thread batches by time into the heap analysis (profile/heap.c).
 *
 * Memory: one frame's decompressed bytes and the events of about two
 * frames.  Each batch is a sorted run; after frame k the runs are merged
 * (a binary heap of run heads) and every event no later than the latest
 * event of frames before k is handed to the analysis, the rest kept as one
 * run (the trace format's ordering rule: events are out of order by at
 * most one frame).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/format.h"
#include "format/heaptrace.h"
#include "profile/heap.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"

#define TRACE_VERSION 1
/* A frame that inflates beyond this is not one the agent wrote. */
#define MAX_FRAME_BYTES (256u << 20)
#define MAX_DEPTH 4096

struct pev {
	uint64_t t, ptr, size, seq;
	uint32_t tid, stack;
	uint8_t kind;
};

struct run {
	size_t pos, end;	/* in pend */
};

struct reader {
	const char *file;	/* the whole input */
	size_t frame_off;	/* file offset of the current frame */
	size_t nframe;		/* its number, from 1 */
	uint64_t stream_off;	/* stream offset of the current frame */
	const unsigned char *frame_start, *p, *rec, *end; /* the frame */
	struct kiln_diag *d;

	struct kiln_heap *h;
	struct kiln_heaptrace_info *info;
	bool have_header;
	uint32_t next_stack;

	/* the current batch */
	uint32_t btid;
	uint64_t bt;		/* time of its previous timed record */
	uint64_t bleft;		/* timed records still to come */

	/* events waiting for the merge */
	struct pev *pend, *spare;
	size_t npend, pend_alloc, spare_alloc;
	struct run *runs;
	size_t nruns, runs_alloc;
	size_t run_start;	/* first event of the open run */
	uint64_t seq;
	uint64_t max_before;	/* latest event of the frames before */
	uint64_t max_frame;	/* latest event of this frame */
	size_t frame_events;	/* events in this frame */
	bool any_before;	/* events in the frames before */

	uint32_t *tids;		/* threads seen, sorted */
	size_t ntids, tids_alloc;
	uint64_t *pcs;
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
	return kiln_diag(r->d, "byte %zu (zstd frame %zu), stream byte %llu: %s",
			 r->frame_off, r->nframe,
			 (unsigned long long)(r->stream_off +
					      (uint64_t)(r->rec - r->frame_start)),
			 why);
}

static int grow(void **p, size_t *alloc, size_t need, size_t size)
{
	size_t na;
	void *q;

	if (need <= *alloc)
		return 0;
	na = *alloc ? *alloc : 256;
	while (na < need)
		na *= 2;
	q = realloc(*p, na * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*alloc = na;
	return 0;
}

/* ---- fields ---- */

static int uv_slow(struct reader *r, uint64_t *v, const char *what)
{
	uint64_t x = 0;
	unsigned shift = 0;

	for (;;) {
		unsigned char c;

		if (r->p >= r->end)
			return bad(r, "record cut at the end of the frame (in %s)",
				   what);
		c = *r->p++;
		if (shift == 63 && (c & 0x7e))
			return bad(r, "%s: varint larger than 64 bits", what);
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
		shift += 7;
		if (shift > 63)
			return bad(r, "%s: varint longer than 10 bytes", what);
	}
	*v = x;
	return 0;
}

/* A varint; most are one byte. */
static inline int uv(struct reader *r, uint64_t *v, const char *what)
{
	if (r->p < r->end && *r->p < 0x80) {
		*v = *r->p++;
		return 0;
	}
	return uv_slow(r, v, what);
}

static int str(struct reader *r, const char **s, size_t *len, const char *what)
{
	uint64_t n;
	int err = uv(r, &n, what);

	if (err)
		return err;
	if (n > (uint64_t)(r->end - r->p))
		return bad(r, "%s: string of %llu bytes runs past the end of the "
			   "frame", what, (unsigned long long)n);
	*s = (const char *)r->p;
	*len = (size_t)n;
	r->p += n;
	return 0;
}

/* ---- the merge ---- */

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
	err = grow((void **)&r->tids, &r->tids_alloc, r->ntids + 1,
		   sizeof(*r->tids));
	if (err)
		return err;
	memmove(r->tids + lo + 1, r->tids + lo, (r->ntids - lo) * sizeof(*r->tids));
	r->tids[lo] = tid;
	r->ntids++;
	return 0;
}

/* Closes the open run (the events since run_start). */
static int close_run(struct reader *r)
{
	int err;

	if (r->run_start == r->npend)
		return 0;
	err = grow((void **)&r->runs, &r->runs_alloc, r->nruns + 1,
		   sizeof(*r->runs));
	if (err)
		return err;
	r->runs[r->nruns].pos = r->run_start;
	r->runs[r->nruns].end = r->npend;
	r->nruns++;
	r->run_start = r->npend;
	return 0;
}

static int rank(uint8_t kind)
{
	/* At equal times a block is freed before it is handed out again. */
	return kind == KILN_HEAP_FREE || kind == KILN_HEAP_MUNMAP ? 0 :
	       kind == KILN_HEAP_END ? 2 : 1;
}

static bool before(const struct pev *a, const struct pev *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (rank(a->kind) != rank(b->kind))
		return rank(a->kind) < rank(b->kind);
	return a->seq < b->seq;
}

static void sift_down(struct reader *r, size_t *heap, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < n && before(&r->pend[r->runs[heap[l]].pos],
				    &r->pend[r->runs[heap[m]].pos]))
			m = l;
		if (l + 1 < n && before(&r->pend[r->runs[heap[l + 1]].pos],
					&r->pend[r->runs[heap[m]].pos]))
			m = l + 1;
		if (m == i)
			return;
		t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

static int deliver(struct reader *r, const struct pev *e)
{
	struct kiln_heap_ev ev;
	int err;

	ev.t = e->t;
	ev.ptr = e->ptr;
	ev.size = e->size;
	ev.tid = e->tid;
	ev.stack = e->stack;
	ev.kind = (enum kiln_heap_kind)e->kind;
	err = kiln_heap_event(r->h, &ev);
	if (err == -EINVAL)
		return kiln_diag(r->d, "an event refers to stack %u, which is "
				 "not defined", e->stack);
	return err;
}

/*
 * Hands every waiting event with t < limit to the analysis in time
 * order (all of them with all set); the rest become one run.
 */
static int flush(struct reader *r, uint64_t limit, bool all)
{
	size_t *heap = NULL, n = 0, i, kept = 0;
	struct pev *tmp;
	int err;

	err = close_run(r);
	if (err)
		return err;
	if (!r->nruns)
		return 0;
	err = grow((void **)&r->spare, &r->spare_alloc, r->npend + 1,
		   sizeof(*r->spare));
	if (err)
		return err;
	heap = malloc(r->nruns * sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	for (i = 0; i < r->nruns; i++)
		heap[n++] = i;
	for (i = n / 2; i-- > 0;)
		sift_down(r, heap, n, i);
	while (n) {
		struct run *ru = &r->runs[heap[0]];
		const struct pev *bound = NULL;

		/* The top run goes on while it stays before the other heads:
		 * one heap step per switch of runs, not per event. */
		if (n > 1) {
			bound = &r->pend[r->runs[heap[1]].pos];
			if (n > 2 && before(&r->pend[r->runs[heap[2]].pos], bound))
				bound = &r->pend[r->runs[heap[2]].pos];
		}
		do {
			const struct pev *e = &r->pend[ru->pos];

			if (all || e->t < limit) {
				err = deliver(r, e);
				if (err)
					goto out;
			} else {
				r->spare[kept++] = *e;
			}
			ru->pos++;
		} while (ru->pos < ru->end &&
			 (!bound || before(&r->pend[ru->pos], bound)));
		if (ru->pos == ru->end)
			heap[0] = heap[--n];
		if (n)
			sift_down(r, heap, n, 0);
	}
	/* The kept events, in merged order, are the one run left. */
	tmp = r->pend;
	r->pend = r->spare;
	r->spare = tmp;
	i = r->pend_alloc;
	r->pend_alloc = r->spare_alloc;
	r->spare_alloc = i;
	r->npend = kept;
	r->nruns = 0;
	r->run_start = 0;
	err = close_run(r);
out:
	free(heap);
	return err;
}

/* ---- records ---- */

static int timed(struct reader *r, char tag, uint8_t kind)
{
	uint64_t dt, tid = r->btid, ptr = 0, size = 0, stack = 0;
	struct pev *e;
	int err;

	if (!r->bleft)
		return bad(r, "record '%c' outside a batch (no 'B' record "
			   "announced it)", tag);
	err = uv(r, &dt, "dt_ns");
	if (err)
		return err;
	if (kind != KILN_HEAP_END) {
		err = uv(r, &tid, "tid");
		if (!err)
			err = uv(r, &ptr, "ptr");
		if (err)
			return err;
		if (kind != KILN_HEAP_FREE) {
			err = uv(r, &size, "size");
			if (err)
				return err;
		}
		if (kind == KILN_HEAP_ALLOC || kind == KILN_HEAP_MMAP) {
			err = uv(r, &stack, "stack");
			if (err)
				return err;
			if (!stack || stack >= r->next_stack)
				return bad(r, "stack %llu is not defined yet",
					   (unsigned long long)stack);
		}
		if (tid > UINT32_MAX)
			return bad(r, "tid %llu out of range",
				   (unsigned long long)tid);
	}
	r->bleft--;
	r->bt += dt;
	err = grow((void **)&r->pend, &r->pend_alloc, r->npend + 1,
		   sizeof(*r->pend));
	if (err)
		return err;
	e = &r->pend[r->npend++];
	e->t = r->bt;
	e->ptr = ptr;
	e->size = size;
	e->tid = (uint32_t)tid;
	e->stack = (uint32_t)stack;
	e->kind = kind;
	e->seq = r->seq++;
	if (r->bt > r->max_frame)
		r->max_frame = r->bt;
	r->frame_events++;
	return 0;
}

static int header(struct reader *r)
{
	const char *s;
	size_t n, i;
	int err;

	if (r->end - r->p < 8 || memcmp(r->p, "KILNHEAP", 8))
		return bad(r, "the header record lacks the \"KILNHEAP\" magic");
	r->p += 8;
	err = uv(r, &r->info->version, "version");
	if (err)
		return err;
	if (r->info->version != TRACE_VERSION)
		return bad(r, "trace version %llu; this kiln reads version %d",
			   (unsigned long long)r->info->version, TRACE_VERSION);
	err = uv(r, &r->info->pid, "pid");
	if (!err)
		err = uv(r, &r->info->ppid, "ppid");
	if (!err)
		err = uv(r, &r->info->start_realtime_ns, "start_realtime_ns");
	if (!err)
		err = uv(r, &r->info->sample_bytes, "sample_bytes");
	if (!err)
		err = str(r, &s, &n, "cmdline");
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
	r->h = kiln_heap_new(r->info->sample_bytes);
	if (!r->h)
		return -ENOMEM;
	r->have_header = true;
	return 0;
}

static int stack(struct reader *r)
{
	uint64_t id, depth, i;
	int err;

	err = uv(r, &id, "stack id");
	if (!err)
		err = uv(r, &depth, "depth");
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
		err = uv(r, &r->pcs[i], "pc");
		if (err)
			return err;
	}
	err = kiln_heap_add_stack(r->h, (uint32_t)id, r->pcs, (uint32_t)depth);
	if (err)
		return err;
	r->next_stack++;
	return 0;
}

static int record(struct reader *r)
{
	uint64_t a, b, c;
	const char *s;
	size_t n;
	char tag;
	int err;

	r->rec = r->p;
	tag = (char)*r->p++;
	if (!r->have_header) {
		if (tag != 'H')
			return bad(r, "not a kiln heap trace: the stream starts "
				   "with 0x%02x, not the header record 'H'",
				   (unsigned char)tag);
		return header(r);
	}
	switch (tag) {
	case 'H':
		return bad(r, "a second header record");
	case 'P':
		err = str(r, &s, &n, "maps");
		return err ? err : kiln_heap_add_maps(r->h, s, n);
	case 'S':
		return stack(r);
	case 'N':
		err = uv(r, &a, "tid");
		return err ? err : str(r, &s, &n, "thread name");
	case 'B':
		if (r->bleft)
			return bad(r, "a batch starts while the previous one "
				   "still expects %llu records",
				   (unsigned long long)r->bleft);
		err = uv(r, &a, "tid");
		if (!err)
			err = uv(r, &b, "t0_ns");
		if (!err)
			err = uv(r, &c, "count");
		if (err)
			return err;
		if (a > UINT32_MAX)
			return bad(r, "tid %llu out of range",
				   (unsigned long long)a);
		/* A batch is a sorted run of its own. */
		err = close_run(r);
		if (!err)
			err = add_tid(r, (uint32_t)a);
		if (err)
			return err;
		r->btid = (uint32_t)a;
		r->bt = b;
		r->bleft = c;
		return 0;
	case 'A':
		return timed(r, tag, KILN_HEAP_ALLOC);
	case 'F':
		return timed(r, tag, KILN_HEAP_FREE);
	case 'M':
		return timed(r, tag, KILN_HEAP_MMAP);
	case 'U':
		return timed(r, tag, KILN_HEAP_MUNMAP);
	case 'E':
		return timed(r, tag, KILN_HEAP_END);
	case 'L':
		err = uv(r, &a, "count");
		if (!err)
			kiln_heap_lost(r->h, a);
		return err;
	default:
		return bad(r, "unknown record tag 0x%02x", (unsigned char)tag);
	}
}

/* Parses one frame's (or the uncompressed stream's) records. */
static int records(struct reader *r, const char *data, size_t len)
{
	int err = 0;

	r->p = (const unsigned char *)data;
	r->frame_start = r->p;
	r->end = r->p + len;
	r->max_frame = 0;
	r->frame_events = 0;
	while (r->p < r->end && !err)
		err = record(r);
	if (!err && r->have_header) {
		/* Events before the latest of the frames before this one are
		 * final: no later frame holds earlier ones. */
		if (r->any_before)
			err = flush(r, r->max_before, false);
		if (r->frame_events) {
			if (!r->any_before || r->max_frame > r->max_before)
				r->max_before = r->max_frame;
			r->any_before = true;
		}
	}
	r->stream_off += len;
	return err;
}

/* Decompresses the frame [off, off+n) into out. */
static int inflate_frame(struct reader *r, ZSTD_DCtx *z, size_t n,
			 struct kiln_buf *out)
{
	ZSTD_inBuffer in = { r->file + r->frame_off, n, 0 };
	unsigned long long want = ZSTD_getFrameContentSize(in.src, n);
	int err;

	kiln_buf_reset(out);
	ZSTD_DCtx_reset(z, ZSTD_reset_session_only);
	if (want != ZSTD_CONTENTSIZE_UNKNOWN && want != ZSTD_CONTENTSIZE_ERROR &&
	    want <= MAX_FRAME_BYTES) {
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
		if (out->len > MAX_FRAME_BYTES)
			return kiln_diag(r->d, "byte %zu (zstd frame %zu): the frame "
					 "inflates to more than %u MiB", r->frame_off,
					 r->nframe, MAX_FRAME_BYTES >> 20);
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

	if (len >= 9 && !memcmp(data, "HKILNHEAP", 9))
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
	return out.pos < sizeof(head) || !memcmp(head, "HKILNHEAP", 9);
}

void kiln_heaptrace_info_release(struct kiln_heaptrace_info *info)
{
	free(info->cmdline);
	info->cmdline = NULL;
}

int kiln_heaptrace_analyse(const char *data, size_t len, struct kiln_heap **out,
			   struct kiln_heaptrace_info *info,
			   struct kiln_diag *d)
{
	struct reader r;
	struct kiln_buf frame = KILN_BUF_INIT;
	ZSTD_DCtx *z = NULL;
	int err = 0;

	*out = NULL;
	memset(info, 0, sizeof(*info));
	memset(&r, 0, sizeof(r));
	r.file = data;
	r.d = d;
	r.info = info;
	r.next_stack = 1;
	r.pcs = malloc(MAX_DEPTH * sizeof(*r.pcs));
	if (!r.pcs)
		return -ENOMEM;
	if (!is_zstd(data, len)) {
		/* An uncompressed stream (for tests and debugging). */
		if (len < 9 || memcmp(data, "HKILNHEAP", 9)) {
			err = kiln_diag(d, "byte 0: not a kiln heap trace (neither "
					"a zstd frame nor a 'H' \"KILNHEAP\" header)");
			goto out;
		}
		r.nframe = 1;
		err = records(&r, data, len);
		info->frames = 1;
	} else {
		z = ZSTD_createDCtx();
		if (!z) {
			err = -ENOMEM;
			goto out;
		}
		while (r.frame_off < len && !err) {
			size_t n = ZSTD_findFrameCompressedSize(data + r.frame_off,
								len - r.frame_off);

			r.nframe++;
			if (ZSTD_isError(n)) {
				if (ZSTD_getErrorCode(n) == ZSTD_error_srcSize_wrong) {
					info->truncated = true;
					info->truncated_at = r.frame_off;
					break;
				}
				err = kiln_diag(d, "byte %zu (zstd frame %zu): not a "
						"zstd frame: %s", r.frame_off, r.nframe,
						ZSTD_getErrorName(n));
				break;
			}
			err = inflate_frame(&r, z, n, &frame);
			if (!err && frame.len)
				err = records(&r, frame.data, frame.len);
			if (!err)
				info->frames++;
			r.frame_off += n;
		}
	}
	if (!err && !r.have_header && info->truncated)
		err = kiln_diag(d, "byte %zu: the file ends inside zstd frame %zu "
				"(which starts at byte %zu), before the header record",
				len, r.nframe, info->truncated_at);
	else if (!err && !r.have_header)
		err = kiln_diag(d, "byte %zu: the trace ends before its header "
				"record", len);
	if (!err && r.bleft && !info->truncated)
		err = kiln_diag(d, "byte %zu: the trace ends inside a batch that "
				"expects %llu more records", len,
				(unsigned long long)r.bleft);
	if (!err)
		err = flush(&r, 0, true);
	if (!err) {
		kiln_heap_finish(r.h);
		info->threads = r.ntids;
		*out = r.h;
		r.h = NULL;
	}
out:
	kiln_heap_free(r.h);
	ZSTD_freeDCtx(z);
	kiln_buf_release(&frame);
	free(r.pend);
	free(r.spare);
	free(r.runs);
	free(r.tids);
	free(r.pcs);
	return err;
}

int kiln_heaptrace_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d)
{
	struct kiln_heaptrace_info info;
	struct kiln_heap *h = NULL;
	struct kiln_sym *sym = NULL;
	char note[160];
	int err;

	err = kiln_heaptrace_analyse(data, len, &h, &info, d);
	if (err)
		goto out;
	err = kiln_heap_prof(h, KILN_HEAP_MEASURES, p, NULL);
	if (err)
		goto out;
	p->time_nanos = (int64_t)info.start_realtime_ns;
	if (info.cmdline && *info.cmdline)
		kiln_prof_add_comment(p, info.cmdline);
	if (info.truncated) {
		snprintf(note, sizeof(note), "the trace was cut after byte %zu "
			 "(process killed?): read up to there", info.truncated_at);
		kiln_prof_add_comment(p, note);
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
	kiln_heap_free(h);
	kiln_heaptrace_info_release(&info);
	return err;
}
