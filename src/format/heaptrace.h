/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace reader (format stage): zstd frames of records in
 * columns, as docs/heap-trace.md describes them, fed in order to a heap
 * analysis (profile/hprof.h).  kiln_heaptrace_read() (format.h) is the
 * read-any-profile entry; kiln heap uses the analysis directly.
 */
#ifndef KILN_FORMAT_HEAPTRACE_H
#define KILN_FORMAT_HEAPTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_hprof;
struct kiln_diag;

/* What the trace says about itself. */
struct kiln_heaptrace_info {
	uint64_t version, pid, ppid;
	uint64_t start_realtime_ns;	/* CLOCK_REALTIME at the start */
	uint64_t sample_bytes;		/* R, 0: every allocation */
	char *cmdline;			/* arguments separated by spaces;
					 * owned, see _info_release() */
	size_t frames;			/* complete zstd frames read */
	size_t threads;			/* threads that recorded events */
	unsigned read_threads;		/* threads that read it: 2 when the
					 * analysis ran beside the decoding
					 * (kiln_workers()) */
	bool truncated;			/* the last frame was cut short */
	size_t truncated_at;		/* bytes read up to the cut */
};

void kiln_heaptrace_info_release(struct kiln_heaptrace_info *info);

/*
 * The header of a zstd trace from its first bytes (the start of its first
 * frame; up to one zstd block, 128 KiB, suffices): fills version, pid,
 * ppid, start_realtime_ns and sample_bytes of *info, nothing else.  0,
 * -EINVAL when data does not start a trace of this version, -ENOMEM.
 */
int kiln_heaptrace_peek(const char *data, size_t len,
			struct kiln_heaptrace_info *info);

/*
 * True when data is a kiln heap trace: a zstd frame whose contents start
 * with the magic "KILNHEAP" (or that is cut too short to
 * tell), or an uncompressed stream starting so.
 */
bool kiln_heaptrace_detect(const char *data, size_t len);

/*
 * Reads a whole trace (zstd frames, or one uncompressed stream) into a new
 * finished analysis *out (kiln_hprof_free() it), filling *info (release it
 * in every case).  A file cut inside its last frame is read up to the
 * last complete frame (info->truncated).  0, -ENOMEM, or -EINVAL with d
 * filled ("byte N (zstd frame K), stream byte S: why").
 */
int kiln_heaptrace_analyse(const char *data, size_t len, struct kiln_hprof **out,
			   struct kiln_heaptrace_info *info,
			   struct kiln_diag *d);

/*
 * The same, fed as the file grows (kiln heap analyses the trace while the
 * program runs): _feed() consumes the complete zstd frames at the start
 * of data[0..len), which must continue exactly where the bytes it
 * consumed before ended, and says in *used how many it took (the caller
 * drops those and passes the rest again with what came since).  With
 * `final` no more bytes will come: a cut last frame is then reported as
 * truncated.  _end() finishes the analysis into *out (len: the file's
 * size, for messages).  Errors as kiln_heaptrace_analyse(), sticky.
 * *info is filled as the frames come; release it after _free().
 */
struct kiln_heaptrace_stream;
struct kiln_heaptrace_stream *kiln_heaptrace_stream_new(
	struct kiln_heaptrace_info *info, struct kiln_diag *d);
int kiln_heaptrace_stream_feed(struct kiln_heaptrace_stream *s, const char *data,
			       size_t len, bool final, size_t *used);
int kiln_heaptrace_stream_end(struct kiln_heaptrace_stream *s, size_t len,
			      struct kiln_hprof **out);
void kiln_heaptrace_stream_free(struct kiln_heaptrace_stream *s);
/* Restricts the analysis to [t0, t1) ns after the first event
 * (kiln_hprof_set_window), before the first feed.  0 or -EINVAL. */
int kiln_heaptrace_stream_window(struct kiln_heaptrace_stream *s, uint64_t t0,
				 uint64_t t1);

/*
 * Progress of a long analysis (kiln serve's busy state and cancel):
 * called after each zstd frame with the compressed bytes consumed so far
 * and the total; a non-zero return stops the analysis, which then fails
 * with -ECANCELED.  Called in the analysing thread.
 */
typedef int (*kiln_heaptrace_progress_fn)(void *arg, size_t done, size_t total);
/* Sets s's progress callback (before the first feed); total is what it
 * is told as the whole (the file's size). */
void kiln_heaptrace_stream_progress(struct kiln_heaptrace_stream *s,
				    kiln_heaptrace_progress_fn fn, void *arg,
				    size_t total);
/* kiln_heaptrace_analyse() reporting progress to fn (NULL: none); also
 * -ECANCELED when fn stopped it. */
int kiln_heaptrace_analyse_progress(const char *data, size_t len,
				    kiln_heaptrace_progress_fn fn, void *arg,
				    struct kiln_hprof **out,
				    struct kiln_heaptrace_info *info,
				    struct kiln_diag *d);

/*
 * A trace's time index (kiln serve's ranges): marks every 1/64 of its
 * bytes (fewer when the live blocks would take more than 256 MiB), each
 * with the reader's state and the blocks live there, so that a range is
 * analysed from the mark before it, not from the start, and stops at
 * its end.  Built by one whole analysis; read-only afterwards (threads
 * may share it).
 */
struct kiln_heaptrace_index;
/* kiln_heaptrace_analyse_progress() that also builds *index (free it
 * with _index_free(); NULL on failure). */
int kiln_heaptrace_analyse_index(const char *data, size_t len,
				 kiln_heaptrace_progress_fn fn, void *arg,
				 struct kiln_hprof **out,
				 struct kiln_heaptrace_info *info,
				 struct kiln_heaptrace_index **index,
				 struct kiln_diag *d);
void kiln_heaptrace_index_free(struct kiln_heaptrace_index *x);
/*
 * kiln_heaptrace_read() (format.h) into p that also keeps the finished
 * analysis (*h: its memory over time; kiln_hprof_free() it) and builds
 * the time index (*index), in one reading of the trace: kiln serve's.
 * *sample_of gets the sample of p of each stack id of *h (-1: none; as
 * kiln_hprof_prof() gives it; free() it).  Progress to fn (NULL: none).
 * Errors as kiln_heaptrace_read(); *h, *sample_of and *index are NULL on
 * failure.
 */
struct kiln_prof;
int kiln_heaptrace_read_index(struct kiln_prof *p, const char *data, size_t len,
			      kiln_heaptrace_progress_fn fn, void *arg,
			      struct kiln_hprof **h, long **sample_of,
			      struct kiln_heaptrace_info *info,
			      struct kiln_heaptrace_index **index,
			      struct kiln_diag *d);
/* How many ranges were read from x's stretch sums, and how many stretches
 * they did not read (for messages and tests). */
void kiln_heaptrace_index_stats(const struct kiln_heaptrace_index *x,
				size_t *fast, size_t *skipped);
/* Marks and bytes the index holds (for messages and tests). */
size_t kiln_heaptrace_index_marks(const struct kiln_heaptrace_index *x,
				  size_t *bytes);

/*
 * kiln_heaptrace_read() (format.h) over the time range [t0, t1) ns after
 * the trace's first event: the measures of kiln_hprof_set_window() (what
 * was allocated in the range, the peak within it, what it allocated that
 * is still live at its end).  kiln serve's time range on heap traces.
 * With x (the trace's index, or NULL) it starts at the mark before t0;
 * it stops at t1 in any case.  Progress goes to fn (NULL: none);
 * -ECANCELED when fn stopped it.
 */
struct kiln_prof;
int kiln_heaptrace_read_range(struct kiln_prof *p, const char *data, size_t len,
			      const struct kiln_heaptrace_index *x,
			      uint64_t t0, uint64_t t1,
			      kiln_heaptrace_progress_fn fn, void *arg,
			      struct kiln_diag *d);

/*
 * The allocation list of a trace (kiln serve's heap views): the blocks
 * that pass every filter of q, in allocation order, one page of them,
 * with how many pass and their size histogram.  Times are ns after the
 * trace's first event.  A block's lifetime is from its allocation to its
 * free, or to the trace's last event when it is never freed.
 */
struct kiln_heaptrace_allocq {
	uint64_t t0, t1;		/* allocated in [t0, t1) */
	bool alive;			/* and live at alive_at: allocated */
	uint64_t alive_at;		/* at or before it, freed after it */
	uint64_t life_min, life_max;	/* lifetime in [min, max] */
	uint64_t size_min, size_max;	/* size in [min, max] */
	uint32_t site;			/* allocated at this stack id; 0: any */
	size_t offset, n;		/* the page: blocks offset.. offset+n-1 */
};

/* One block of the list; freed is UINT64_MAX when it was not freed up to
 * the list's read_to. */
struct kiln_heaptrace_alloc {
	uint64_t t, freed, size;
	uint32_t stack, tid;
};

struct kiln_heaptrace_allocs {
	uint64_t count;			/* blocks that pass */
	double bytes;			/* their bytes */
	struct kiln_heaptrace_alloc *a;	/* the page (owned), n of them */
	size_t n;
	uint64_t size_calls[65];	/* blocks that pass by size class */
	uint64_t size_bytes[65];	/* (kiln_hprof_size_class()) */
	uint64_t read_from, read_to;	/* the events read, ns */
	bool to_end;			/* read_to is the trace's last event */
	size_t bytes_read;		/* compressed bytes of the trace read */
};

void kiln_heaptrace_allocs_release(struct kiln_heaptrace_allocs *a);

/*
 * Fills *out (release it in every case) with the allocation list of q.
 * Only what decides q is read: from x's last mark before the earliest
 * block that could pass (alive_at, or t0) to the time by which every
 * such block's filters are decided (alive_at, or else t1, plus the
 * largest lifetime bound), so "live at the end, lifetime at least 1 s"
 * reads nothing past the index's mark of the trace's end.  Blocks sampled traces did
 * not report are not listed.  0, -EINVAL (d filled; q inconsistent),
 * -ECANCELED (fn stopped it) or -ENOMEM.
 */
int kiln_heaptrace_allocs(const char *data, size_t len,
			  const struct kiln_heaptrace_index *x,
			  const struct kiln_heaptrace_allocq *q,
			  kiln_heaptrace_progress_fn fn, void *arg,
			  struct kiln_heaptrace_allocs *out,
			  struct kiln_diag *d);

#endif
