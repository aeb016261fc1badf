/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace decoder (format stage): one frame's column table
 * and columns, decoded into records (docs/heap-trace.md, version 2) whose
 * events go to the heap analysis (profile/hprof.c) in stream order: the
 * writer (format/heapenc.c) already merged the threads by time and wrote
 * frees as block numbers, so reading is one pass with no table of its
 * own.  Blocks are handed to the analysis under their numbers (from 1) in
 * place of addresses.  Where each field is, format/heapcols.h says.  The
 * frames are inflated and fed here by heaptrace-stream.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/heapcols.h"
#include "format/heapenc.h"
#include "format/heaptraceint.h"
#include "profile/hprof.h"
#include "util/diag.h"
#include "util/varint.h"

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

int kiln_heaptrace_flush(struct reader *r)
{
	int err;

	if (!r->batch.nev && !r->batch.nop)
		return 0;
	if (r->pipe)
		return kiln_heaptrace_pipe_send(r);
	err = kiln_hprof_apply(r->h, &r->batch);
	/* The decoder checked the stacks' ids already. */
	if (err == -EINVAL)
		return bad(r, "the analysis refused a stack or an event");
	return err;
}

/* An event, into the batch (the stacks it uses were checked). */
static inline __attribute__((always_inline)) int
deliver(struct reader *r, enum kiln_hprof_kind kind, uint64_t id, uint64_t size,
	uint64_t stack)
{
	struct kiln_hprof_ev *ev;
	int err;

	if (r->tap && r->h->started) {
		struct kiln_hprof_ev e = {
			.t = r->t, .ptr = id, .size = size, .tid = r->tid,
			.stack = (uint32_t)stack, .kind = kind,
		};

		return r->tap(r->tap_arg, &e, r->h->tot.t_first);
	}
	if (kiln_hprof_batch_full(&r->batch)) {
		err = kiln_heaptrace_flush(r);
		if (err)
			return err;
	}
	ev = kiln_hprof_batch_next(&r->batch);
	ev->t = r->t;
	ev->ptr = id;
	ev->size = size;
	ev->tid = r->tid;
	ev->stack = (uint32_t)stack;
	ev->kind = kind;
	if (!r->tap)
		return 0;
	/* The first event: the analysis takes it first (the trace's start). */
	err = kiln_heaptrace_flush(r);
	if (!err)
		err = r->tap(r->tap_arg, &r->batch.ev[0], r->h->tot.t_first);
	return err;
}

/* The block counter of thread tid (the last two asked are at hand), NULL
 * on ENOMEM. */
static inline uint64_t *count_of(struct reader *r, uint32_t tid)
{
	uint64_t *c;

	if (r->ctid[0] == tid)
		return r->cnt[0];
	if (r->ctid[1] == tid)
		return r->cnt[1];
	c = kiln_tcount_get(&r->counts, tid);
	/* Adding tid may have moved every counter. */
	r->ctid[1] = 0;
	if (r->ctid[0] && c) {
		r->cnt[1] = kiln_tcount_get(&r->counts, r->ctid[0]);
		if (r->cnt[1])
			r->ctid[1] = r->ctid[0];
	}
	r->ctid[0] = c ? tid : 0;
	r->cnt[0] = c;
	return c;
}

/* A varint of column c, the one-byte case inline. */
static inline __attribute__((always_inline)) int
fast_uv(struct reader *r, int c, uint64_t *v, const char *what)
{
	struct col *k = &r->col[c];

	if (k->p < k->end && *k->p < 0x80) {
		*v = *k->p++;
		return 0;
	}
	return uv(r, c, v, what);
}

/*
 * The event records as format/heapcols.c's kiln_hrecs[] has them, here
 * for the inline path to take their columns and codes as constants
 * (loads from the extern table are not folded);
 * kiln_heaptrace_event_cols() checks that the two agree (unit test).
 */
static const struct kiln_hrec ev_recs[KILN_HREC_N] = {
	[KILN_HREC_ALLOC] = { 'A', 1, 2, {
		{ KILN_HF_SPLIT, KILN_HCOL_SIZE_LO, KILN_HCOL_SIZE_HI, "size" },
		{ KILN_HF_UV, KILN_HCOL_STACK, 0, "stack" } } },
	[KILN_HREC_FREE] = { 'F', 1, 1, {
		{ KILN_HF_SPLIT, KILN_HCOL_BACK_LO, KILN_HCOL_BACK_HI, "block" } } },
	[KILN_HREC_RFREE] = { 'R', 1, 2, {
		{ KILN_HF_UV, KILN_HCOL_MISC, 0, "thread" },
		{ KILN_HF_SPLIT, KILN_HCOL_BACK_LO, KILN_HCOL_BACK_HI, "block" } } },
};

int kiln_heaptrace_event_cols(void)
{
	static const int kinds[] = { KILN_HREC_ALLOC, KILN_HREC_FREE, KILN_HREC_RFREE };
	size_t i;
	int f;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct kiln_hrec *a = &ev_recs[kinds[i]], *b = &kiln_hrecs[kinds[i]];

		if (a->tag != b->tag || a->events != b->events || a->nfield != b->nfield)
			return -EINVAL;
		for (f = 0; f < a->nfield; f++)
			if (a->f[f].code != b->f[f].code || a->f[f].col != b->f[f].col ||
			    (a->f[f].code == KILN_HF_SPLIT &&
			     a->f[f].col_hi != b->f[f].col_hi) ||
			    strcmp(a->f[f].name, b->f[f].name))
				return -EINVAL;
	}
	return 0;
}

/* Field i of event kind k (an integer or a split one), inline. */
static inline __attribute__((always_inline)) int
efield(struct reader *r, int k, int i, uint64_t *v)
{
	const struct kiln_hfield *d = &ev_recs[k].f[i];
	struct col *lo = &r->col[d->col];
	uint64_t x;
	int err;

	if (d->code != KILN_HF_SPLIT)
		return fast_uv(r, d->col, v, d->name);
	if (lo->p >= lo->end)
		return bad(r, "%s: the %s ends early", d->name, kiln_hcol_names[d->col]);
	err = fast_uv(r, d->col_hi, &x, d->name);
	if (err)
		return err;
	if (x >> 56)
		return bad(r, "%s: larger than 64 bits", d->name);
	*v = x << 8 | *lo->p++;
	return 0;
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
static inline __attribute__((always_inline)) int
event(struct reader *r, unsigned char tag, int k)
{
	uint64_t size = 0, stack = 0, back = 0, owner, *count;
	uint32_t t;
	int err;

	if (tag != ev_recs[k].tag) {
		t = r->tid;
		r->tid = r->prev_tid;
		r->prev_tid = t;
	}
	if (!r->tid)
		return bad(r, "an event before any thread record ('X')");
	if (k == KILN_HREC_ALLOC) {
		err = efield(r, KILN_HREC_ALLOC, 0, &size);
		if (!err)
			err = efield(r, KILN_HREC_ALLOC, 1, &stack);
		if (err)
			return err;
		if (!stack || stack >= r->next_stack)
			return bad(r, "stack %llu is not defined yet",
				   (unsigned long long)stack);
		count = count_of(r, r->tid);
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
		err = efield(r, KILN_HREC_RFREE, 0, &owner);
		if (err)
			return err;
		if (!owner || owner >= 1u << 22)
			return bad(r, "tid %llu out of range", (unsigned long long)owner);
	}
	/* The block: the last field of F and R. */
	err = efield(r, k, ev_recs[k].nfield - 1, &back);
	if (err)
		return err;
	count = count_of(r, (uint32_t)owner);
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
	err = kiln_hprof_batch_stack(&r->batch, (uint32_t)id, r->pcs, (uint32_t)depth);
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
		return err ? err : kiln_hprof_batch_maps(&r->batch, s, n);
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
		return event(r, tag, k);	/* (R only: A and F come inline) */
	case KILN_HREC_END:
		return deliver(r, KILN_HPROF_END, 0, 0, 0);
	case KILN_HREC_LOST:
		err = field(r, k, 0, &a);
		return err ? err : kiln_hprof_batch_lost(&r->batch, a);
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
int kiln_heaptrace_records(struct reader *r, const char *data, size_t len)
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
	/* The counters may have moved between frames (a time index). */
	r->ctid[0] = r->ctid[1] = 0;
	/* Later columns (a later version's) are skipped.  Allocations and
	 * frees, nearly every record, are decoded inline. */
	while (r->col[KILN_HCOL_TAG].p < r->col[KILN_HCOL_TAG].end) {
		unsigned char tag = *r->col[KILN_HCOL_TAG].p++;
		int k = r->kind_of[tag];

		r->tag = tag;
		r->nrec++;
		if (k == KILN_HREC_ALLOC && r->have_header)
			err = event(r, tag, KILN_HREC_ALLOC);
		else if (k == KILN_HREC_FREE && r->have_header)
			err = event(r, tag, KILN_HREC_FREE);
		else
			err = record(r, tag);
		if (err)
			return err;
	}
	err = kiln_heaptrace_flush(r);
	if (err)
		return err;
	for (i = 1; i < KILN_HCOL_N; i++)
		if (r->col[i].p != r->col[i].end)
			return bad(r, "%zu bytes left over in the %s column",
				   (size_t)(r->col[i].end - r->col[i].p), kiln_hcol_names[i]);
	return 0;
}
