/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace reader (format stage): decompresses the zstd frames
 * one at a time and hands each to the decoder (heaptrace.c), which hands
 * the events of its records to the heap analysis (profile/hprof.c); the
 * stream API for a trace still being written, and the readers that turn
 * the analysis into a profile.
 *
 * Memory: one frame's decompressed bytes; the analysis holds the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/format.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "format/heaptraceint.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/limit.h"
#include "util/workers.h"

/* A frame that inflates beyond this is not one the agent wrote. */
#define MAX_FRAME_BYTES (256u << 20)

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

void kiln_heaptrace_info_release(struct kiln_heaptrace_info *info)
{
	free(info->cmdline);
	info->cmdline = NULL;
}

struct kiln_heaptrace_stream *kiln_heaptrace_stream_new(
	struct kiln_heaptrace_info *info, struct kiln_diag *d)
{
	struct kiln_heaptrace_stream *s = calloc(1, sizeof(*s));

	memset(info, 0, sizeof(*info));
	info->read_threads = 1;
	if (!s)
		return NULL;
	s->r.d = d;
	s->r.info = info;
	s->r.next_stack = 1;
	kiln_hrec_map(s->r.kind_of);
	s->r.pcs = malloc(MAX_DEPTH * sizeof(*s->r.pcs));
	s->z = ZSTD_createDCtx();
	if (!s->r.pcs || !s->z ||
	    kiln_hprof_batch_init(&s->r.batch, KILN_HEAPTRACE_BATCH)) {
		kiln_heaptrace_stream_free(s);
		return NULL;
	}
	return s;
}

void kiln_heaptrace_stream_free(struct kiln_heaptrace_stream *s)
{
	if (!s)
		return;
	kiln_heaptrace_pipe_stop(&s->r);
	kiln_hprof_batch_release(&s->r.batch);
	kiln_hprof_free(s->r.h);
	ZSTD_freeDCtx(s->z);
	kiln_buf_release(&s->frame);
	free(s->r.tids);
	free(s->r.pcs);
	kiln_tcount_release(&s->r.counts);
	free(s);
}

/*
 * Whether the analysis gets a thread of its own from now on: for a
 * trace of more than one frame (a small one is read before a thread
 * would start), when more than one thread may read (kiln_workers()),
 * and not for a time range or the allocation list (which read the
 * analysis as they go).
 */
static bool want_pipe(struct kiln_heaptrace_stream *s)
{
	struct reader *r = &s->r;

	if (r->pipe || r->no_pipe || !r->have_header || r->nframe < 1)
		return false;
	/* Decided once (the CPUs are counted from /sys). */
	if (r->tap || r->window || s->raw || kiln_workers() < 2) {
		r->no_pipe = true;
		return false;
	}
	return true;
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
	if (!r->nframe && !kiln_is_zstd(data, len)) {
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
		err = kiln_heaptrace_records(r, data, len);
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
		if (want_pipe(s)) {
			err = kiln_heaptrace_pipe_start(r);
			if (err == -EAGAIN) {
				/* No thread to be had: read on alone. */
				r->no_pipe = true;
				err = 0;
			}
			if (err)
				break;
		}
		r->nframe++;
		err = inflate_frame(r, s->z, data + at, n, &s->frame);
		if (!err) {
			r->inflated += s->frame.len;
			err = check_total(r, r->frame_off + n);
		}
		if (!err && s->frame.len)
			err = kiln_heaptrace_records(r, s->frame.data, s->frame.len);
		if (!err)
			info->frames++;
		r->frame_off += n;
		at += n;
		if (!err && s->progress &&
		    s->progress(s->progress_arg, r->frame_off, s->progress_total))
			err = -ECANCELED;
		/* A second thread that does not pay is given up (unless
		 * asked for): the calls are the same either way. */
		if (!err && r->pipe && !kiln_workers_given() &&
		    !kiln_heaptrace_pipe_pays(r)) {
			err = kiln_heaptrace_pipe_wait(r);
			kiln_heaptrace_pipe_stop(r);
			r->no_pipe = true;
		}
		/* A mark reads the analysis: the thread must be done. */
		if (!err && r->pipe && kiln_heaptrace_index_due(s))
			err = kiln_heaptrace_pipe_wait(r);
		if (!err && s->index)
			err = kiln_heaptrace_index_mark(s);
		/* Past a range's end every event is ignored (reader times
		 * never go back): the rest need not be read. */
		if (r->window && r->h && r->h->started &&
		    r->t - r->h->tot.t_first >= r->window[1])
			break;
	}
out:
	/* Between feeds the analysis is up to date (and h the reader's). */
	if (r->pipe) {
		int e = kiln_heaptrace_pipe_wait(r);

		if (!err)
			err = e;
	}
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
	kiln_heaptrace_pipe_stop(r);
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

void kiln_heaptrace_stream_progress(struct kiln_heaptrace_stream *s,
				    kiln_heaptrace_progress_fn fn, void *arg,
				    size_t total)
{
	s->progress = fn;
	s->progress_arg = arg;
	s->progress_total = total;
}

/*
 * The analysis of data, over range (NULL: the whole run), from the mark
 * of index x nearest before it (x NULL: from the start), building index
 * build (NULL: none) as it goes.
 */
static int analyse(const char *data, size_t len, const uint64_t *range,
		   const struct kiln_heaptrace_index *x,
		   struct kiln_heaptrace_index *build,
		   kiln_heaptrace_progress_fn fn, void *arg,
		   struct kiln_hprof **out, struct kiln_heaptrace_info *info,
		   struct kiln_diag *d)
{
	struct kiln_heaptrace_stream *s;
	size_t used, from = 0;
	int err = 0;

	*out = NULL;
	if (range && x && !build) {
		/* Whole stretches of the range are not read again. */
		err = kiln_heaptrace_index_range(data, len, x, range, fn, arg, out,
						 info, d);
		if (err <= 0)
			return err;
	}
	s = kiln_heaptrace_stream_new(info, d);
	if (!s)
		return -ENOMEM;
	kiln_heaptrace_stream_progress(s, fn, arg, len);
	s->index = build;
	if (range)
		err = kiln_heaptrace_stream_window(s, range[0], range[1]);
	if (!err && range && x)
		err = kiln_heaptrace_index_resume(s, x, range[0], &from);
	if (!err)
		err = kiln_heaptrace_stream_feed(s, data + from, len - from, true,
						 &used);
	if (!err && build)
		err = kiln_heaptrace_index_mark_end(s);
	if (!err)
		err = kiln_heaptrace_stream_end(s, len, out);
	if (!err && build)
		err = kiln_heaptrace_index_end(build, *out, info);
	if (err) {
		kiln_hprof_free(*out);
		*out = NULL;
	}
	kiln_heaptrace_stream_free(s);
	return err;
}

int kiln_heaptrace_analyse(const char *data, size_t len, struct kiln_hprof **out,
			   struct kiln_heaptrace_info *info,
			   struct kiln_diag *d)
{
	return analyse(data, len, NULL, NULL, NULL, NULL, NULL, out, info, d);
}

/*
 * The heap size over time (kiln_prof_set_memory()): two moments a bucket of
 * the analysis, its middle with the largest size within it (so that a
 * short peak shows) and its end with the size there.  Times count from
 * the first event, taken as the trace's start (time_nanos).
 */
static int memory_series(struct kiln_prof *p, const struct kiln_hprof *h)
{
	size_t n = (size_t)h->nbuckets * 2, i;
	int64_t *t, *b;
	int err;

	if (!h->nbuckets || !h->total_end || !h->total_max)
		return 0;
	t = malloc(n * sizeof(*t));
	b = malloc(n * sizeof(*b));
	if (!t || !b) {
		free(t);
		free(b);
		return -ENOMEM;
	}
	for (i = 0; i < h->nbuckets; i++) {
		t[2 * i] = (int64_t)(i * h->bucket_ns + h->bucket_ns / 2);
		b[2 * i] = (int64_t)(h->total_max[i] + 0.5);
		t[2 * i + 1] = (int64_t)((i + 1) * h->bucket_ns);
		b[2 * i + 1] = (int64_t)(h->total_end[i] + 0.5);
	}
	err = kiln_prof_set_memory(p, t, b, n);
	free(t);
	free(b);
	return err;
}

int kiln_heaptrace_analyse_progress(const char *data, size_t len,
				    kiln_heaptrace_progress_fn fn, void *arg,
				    struct kiln_hprof **out,
				    struct kiln_heaptrace_info *info,
				    struct kiln_diag *d)
{
	return analyse(data, len, NULL, NULL, NULL, fn, arg, out, info, d);
}

int kiln_heaptrace_analyse_index(const char *data, size_t len,
				 kiln_heaptrace_progress_fn fn, void *arg,
				 struct kiln_hprof **out,
				 struct kiln_heaptrace_info *info,
				 struct kiln_heaptrace_index **index,
				 struct kiln_diag *d)
{
	struct kiln_heaptrace_index *x = kiln_heaptrace_index_new(len);
	int err;

	*index = NULL;
	if (!x) {
		memset(info, 0, sizeof(*info));
		*out = NULL;
		return -ENOMEM;
	}
	err = analyse(data, len, NULL, NULL, x, fn, arg, out, info, d);
	if (err)
		kiln_heaptrace_index_free(x);
	else
		*index = x;
	return err;
}

/*
 * The profile of data over range (NULL: the whole run), from index x's
 * marks (NULL: from the start), building index build (NULL: none); the
 * finished analysis goes to *keep (NULL: freed).
 */
static int read_prof(struct kiln_prof *p, const char *data, size_t len,
		     const uint64_t *range, const struct kiln_heaptrace_index *x,
		     struct kiln_heaptrace_index *build, struct kiln_hprof **keep,
		     long **keep_so, struct kiln_heaptrace_info *keep_info,
		     kiln_heaptrace_progress_fn fn, void *arg,
		     struct kiln_diag *d)
{
	struct kiln_heaptrace_info info;
	struct kiln_hprof *h = NULL;
	struct kiln_sym *sym = NULL;
	char note[160];
	int err;

	err = analyse(data, len, range, x, build, fn, arg, &h, &info, d);
	if (err)
		goto out;
	err = kiln_hprof_prof(h, KILN_HPROF_MEASURES, p, keep_so);
	if (err)
		goto out;
	p->time_nanos = (int64_t)info.start_realtime_ns;
	err = memory_series(p, h);
	if (err)
		goto out;
	if (info.cmdline && *info.cmdline) {
		err = kiln_prof_add_comment(p, info.cmdline);
		if (err)
			goto out;
	}
	if (info.truncated) {
		snprintf(note, sizeof(note), "the trace was cut after byte %zu "
			 "(process killed, or its disk full?): read up to there",
			 info.truncated_at);
		/* Said on stderr by every command, and kept in the profile. */
		kiln_diag_warn(d, "%s", note);
		err = kiln_prof_add_comment(p, note);
		if (err)
			goto out;
	}
	sym = kiln_sym_new(NULL);
	if (!sym) {
		err = -ENOMEM;
		goto out;
	}
	/* JIT code (node --perf-basic-prof) by the map its runtime wrote. */
	err = kiln_sym_load_trace_perfmap(sym, (int)info.pid,
					  info.start_realtime_ns);
	if (!err && h->nmaps)
		err = kiln_sym_load_trace_jitdump(sym, h->maps[h->nmaps],
						  h->maps_len[h->nmaps], (int)info.pid,
						  info.start_realtime_ns);
	if (!err)
		err = kiln_sym_prof(sym, p, 0);
	if (!err)
		err = kiln_prof_error(p);
out:
	kiln_sym_free(sym);
	if (keep_so && err && h) {
		free(*keep_so);
		*keep_so = NULL;
	}
	if (keep && !err) {
		*keep = h;
		h = NULL;
	}
	kiln_hprof_free(h);
	if (keep_info && !err) {
		/* The caller's now, to release. */
		*keep_info = info;
		memset(&info, 0, sizeof(info));
	}
	kiln_heaptrace_info_release(&info);
	return err;
}

int kiln_heaptrace_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d)
{
	return read_prof(p, data, len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			 NULL, d);
}

int kiln_heaptrace_read_range(struct kiln_prof *p, const char *data, size_t len,
			      const struct kiln_heaptrace_index *x,
			      uint64_t t0, uint64_t t1,
			      kiln_heaptrace_progress_fn fn, void *arg,
			      struct kiln_diag *d)
{
	const uint64_t range[2] = { t0, t1 };

	return read_prof(p, data, len, range, x, NULL, NULL, NULL, NULL, fn, arg,
			 d);
}

int kiln_heaptrace_read_index(struct kiln_prof *p, const char *data, size_t len,
			      kiln_heaptrace_progress_fn fn, void *arg,
			      struct kiln_hprof **h, long **sample_of,
			      struct kiln_heaptrace_info *info,
			      struct kiln_heaptrace_index **index,
			      struct kiln_diag *d)
{
	struct kiln_heaptrace_index *x = kiln_heaptrace_index_new(len);
	int err;

	*h = NULL;
	*index = NULL;
	*sample_of = NULL;
	if (!x)
		return -ENOMEM;
	err = read_prof(p, data, len, NULL, NULL, x, h, sample_of, info, fn, arg,
			d);
	if (err)
		kiln_heaptrace_index_free(x);
	else
		*index = x;
	return err;
}
