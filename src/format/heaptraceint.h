/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace reader's internals (format stage), shared by
 * heaptrace.c (one frame's columns decoded into records and handed to
 * the analysis) and heaptrace-stream.c (the zstd frames inflated one at a
 * time, the stream API, the readers into a profile).
 */
#ifndef KILN_FORMAT_HEAPTRACEINT_H
#define KILN_FORMAT_HEAPTRACEINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/heapcols.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "profile/hbatch.h"
#include "profile/hprof.h"
#include "util/buf.h"
#include "util/diag.h"
#include <zstd.h>

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
	/* Every event as it is read, with the trace's first event time
	 * (the allocation list, heaptrace-allocs.c), or NULL.  Once the
	 * analysis has started (its first event, or resumed from a mark)
	 * the events go to the tap instead of the analysis: the list reads
	 * the analysis only where it resumed.  A non-zero return stops
	 * reading. */
	int (*tap)(void *arg, const struct kiln_hprof_ev *ev, uint64_t t_first);
	void *tap_arg;

	/* The events and other calls decoded and not yet handed to h, in
	 * order (kiln_heaptrace_flush()). */
	struct kiln_hprof_batch batch;
	/* The thread that applies the batches (heaptrace-pipe.c), or NULL:
	 * the reader applies them itself.  While it runs, h is its own;
	 * kiln_heaptrace_pipe_wait() gives h back. */
	struct kiln_heaptrace_pipe *pipe;
	bool no_pipe;		/* read in this thread only */
	/* The counters of the last two threads whose events were decoded
	 * (kiln_tcount_get() moves them when it grows: reset per frame and
	 * whenever a thread not among them comes). */
	uint32_t ctid[2];
	uint64_t *cnt[2];
};

/* Events a batch holds before it is applied. */
#define KILN_HEAPTRACE_BATCH 8192

/* The stream API's state (heaptrace-stream.c). */
struct kiln_heaptrace_stream {
	struct reader r;
	ZSTD_DCtx *z;
	struct kiln_buf frame;
	int err;		/* sticky */
	bool raw;		/* one uncompressed stream */
	kiln_heaptrace_progress_fn progress;
	void *progress_arg;
	size_t progress_total;
	struct kiln_heaptrace_index *index;	/* being built, or NULL */
};

/* The time index (heaptrace-index.c): an empty one for a trace of len
 * compressed bytes; NULL on ENOMEM. */
struct kiln_heaptrace_index *kiln_heaptrace_index_new(size_t len);
/* Whether a mark is due after this frame (it reads the analysis). */
bool kiln_heaptrace_index_due(const struct kiln_heaptrace_stream *s);
/* After each frame of the analysis building s->index: a mark when due.
 * 0 or -ENOMEM. */
int kiln_heaptrace_index_mark(struct kiln_heaptrace_stream *s);
/* After the last frame of the analysis building s->index: a mark of the
 * trace's end, whatever the budget.  0 or -ENOMEM. */
int kiln_heaptrace_index_mark_end(struct kiln_heaptrace_stream *s);
/* After the analysis h that built x, finished: keeps its header, its
 * stack and maps definitions, which a resumed analysis defines again, and
 * the blocks live at the marks (taken from h).  0 or -ENOMEM. */
int kiln_heaptrace_index_end(struct kiln_heaptrace_index *x,
			     struct kiln_hprof *h,
			     const struct kiln_heaptrace_info *info);
/* Sets up s (new, windowed from t0) to go on from x's last mark before
 * t0: *from is the byte to feed from (0: no mark fits, from the start).
 * 0 or -ENOMEM. */
int kiln_heaptrace_index_resume(struct kiln_heaptrace_stream *s,
				const struct kiln_heaptrace_index *x,
				uint64_t t0, size_t *from);

/* 0 if heaptrace.c's inline copy of the event records' fields agrees
 * with kiln_hrecs[] (format/heapcols.c), else -EINVAL. */
int kiln_heaptrace_event_cols(void);

/*
 * The analysis of data over range (ns after the first event) from x's
 * marks, read in stretches: from the mark before range[0] to the first
 * mark inside, from the last mark inside to range[1], and the stretch
 * with the range's largest heap if it is one in between; what the
 * stretches in between added is the index's.  The same measures as
 * reading the range from the trace's start (but for rounding, when
 * sampled).  1 (nothing): the range holds no whole stretch; else 0, with
 * *out finished and *info filled (release it), or as
 * kiln_heaptrace_analyse().
 */
int kiln_heaptrace_index_range(const char *data, size_t len,
			       const struct kiln_heaptrace_index *x,
			       const uint64_t *range,
			       kiln_heaptrace_progress_fn fn, void *arg,
			       struct kiln_hprof **out,
			       struct kiln_heaptrace_info *info,
			       struct kiln_diag *d);

/*
 * Hands r's batch to the analysis: applies it, or sends it to the pipe's
 * thread.  0, -ENOMEM, or -EINVAL with r->d filled.
 */
int kiln_heaptrace_flush(struct reader *r);

/*
 * The analysis in a thread of its own (heaptrace-pipe.c): the reader
 * decodes frame after frame while the thread applies what it decoded.
 * _start() starts it for r (r->h made; 0, -ENOMEM or -EAGAIN), _send()
 * hands it r->batch and gives r an empty one (0, or the thread's error),
 * _wait() returns once it applied everything sent (h is then the
 * reader's to read; the thread's error, sticky), _stop() waits, ends it
 * and frees it (r->pipe NULL; NULL pipe: nothing).
 */
struct kiln_heaptrace_pipe;
int kiln_heaptrace_pipe_start(struct reader *r);
int kiln_heaptrace_pipe_send(struct reader *r);
int kiln_heaptrace_pipe_wait(struct reader *r);
void kiln_heaptrace_pipe_stop(struct reader *r);
/*
 * After a frame: false when the second thread does not pay, i.e. over
 * the last stretch of at least 100 ms the two threads together got less
 * than 1.15 times that stretch in CPU time (the machine's other work
 * keeps them from running at once: handing batches over then only costs,
 * in switches and cold caches).  The reader then goes on alone.
 */
bool kiln_heaptrace_pipe_pays(struct reader *r);

/*
 * Parses one frame's contents (or the uncompressed stream's): the magic
 * and version in the first, the column table, then the records, handed
 * to r->h.  0, -ENOMEM or -EINVAL with r->d saying where.
 */
int kiln_heaptrace_records(struct reader *r, const char *data, size_t len);

#endif
