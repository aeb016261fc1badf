/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile model (profile stage): what every reader fills and every
 * writer and renderer reads.  It follows pprof's data model: interned
 * strings, functions, mappings, locations with inline line chains, and
 * samples with several values and labels.
 *
 * Everything is interned: adding the same function, location, label set or
 * stack again returns the existing id, and a sample whose stack and labels
 * already exist adds its values to the existing one.  Memory therefore grows
 * with distinct stacks, not with the number of samples read.
 *
 * Ids of functions, mappings, locations and label sets are 1-based (0 means
 * none) and index the arrays below directly (element 0 is unused).  String
 * ids are 0-based and string 0 is always "".  Sample indexes are 0-based.
 *
 * Allocation failures are sticky, like ferror(): a function returning an id
 * returns 0 and sets p->err to -ENOMEM; check kiln_prof_error() once after
 * a batch of additions.
 */
#ifndef KILN_PROFILE_PROFILE_H
#define KILN_PROFILE_PROFILE_H

#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "util/htab.h"

struct kiln_diag;

/*
 * Time: when samples were taken is a column of its own beside the samples
 * (struct kiln_prof_event, p->events), not a label, so that samples of one
 * stack and label set merge whatever their times.  An event is the part
 * of sample `sample`'s values taken in one time bucket: `time` is in
 * nanoseconds since time_nanos (the recording's start; 0 when unknown,
 * then since the first sample), rounded down to KILN_PROF_TIME_BUCKET_NS,
 * and its values (ntypes entries, kiln_prof_event_values()) add up with
 * the sample's other events to at most the sample's values (the rest has
 * no time).  A sample has at most one event per bucket.  Thread identity
 * stays in the sample's labels ("pid", "thread", "thread_name").
 * docs/formats.md ("Sample times") and docs/design.md.
 */
#define KILN_PROF_TIME_BUCKET_NS 1000000ll

struct kiln_value_type {
	uint32_t type;	/* string id, e.g. "cpu" */
	uint32_t unit;	/* string id, e.g. "nanoseconds" */
};

struct kiln_mapping {
	uint64_t start, limit, offset;
	uint32_t file;		/* string id */
	uint32_t build_id;	/* string id, hex */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
	/* enum kiln_kind of its code, set by kiln_prof_mapping() from the
	 * file name (callers leave it 0). */
	uint8_t kind;
};

struct kiln_function {
	uint32_t name;		/* string id, demangled */
	uint32_t system_name;	/* string id, as in the symbol table */
	uint32_t filename;	/* string id */
	int64_t start_line;
};

struct kiln_line {
	uint32_t function;	/* function id */
	int64_t line;
};

struct kiln_location {
	uint64_t address;
	uint32_t mapping;	/* mapping id, 0 = none */
	uint32_t line0;		/* first of nlines in p->lines, innermost first */
	uint32_t nlines;
	bool is_folded;
	uint32_t fallback;	/* cached name for a location without lines */
};

struct kiln_label {
	uint32_t key;		/* string id */
	uint32_t str;		/* string id, 0 for numeric labels */
	int64_t num;
	uint32_t unit;		/* string id */
};

struct kiln_labelset {
	uint32_t first;		/* index in p->labels */
	uint32_t n;
};

struct kiln_sample {
	uint32_t stack;		/* index of the first location id in p->stacks */
	uint32_t depth;		/* location ids, leaf first */
	uint32_t labels;	/* label set id, 0 = none */
};

/* One entry of the time column: see "Time" above. */
struct kiln_prof_event {
	int64_t time;		/* ns since time_nanos, a bucket's start */
	uint32_t sample;	/* sample index */
};

struct kiln_str {
	uint32_t off, len;
};

struct kiln_prof {
	/* Strings: NUL-terminated in str_data at strs[id].off. */
	char *str_data;
	size_t str_used, str_cap;
	struct kiln_str *strs;
	size_t nstrs, strs_alloc;

	struct kiln_function *functions;	/* [1..nfunctions] */
	size_t nfunctions, functions_alloc;
	struct kiln_mapping *mappings;		/* [1..nmappings] */
	size_t nmappings, mappings_alloc;
	struct kiln_location *locations;	/* [1..nlocations] */
	size_t nlocations, locations_alloc;
	struct kiln_line *lines;		/* pool for locations */
	size_t nlines, lines_alloc;
	struct kiln_labelset *labelsets;	/* [1..nlabelsets] */
	size_t nlabelsets, labelsets_alloc;
	struct kiln_label *labels;		/* pool for label sets */
	size_t nlabels, labels_alloc;

	struct kiln_value_type *types;		/* sample types */
	size_t ntypes;
	struct kiln_sample *samples;
	size_t nsamples, samples_alloc;
	int64_t *values;			/* nsamples * ntypes */
	uint32_t *stacks;			/* pool of location ids */
	size_t nstacks, stacks_alloc;
	/* The time column (see "Time" above), in the order each (sample,
	 * bucket) first came: for readers of time-ordered input, time
	 * order.  ev_values: nevents * ntypes.  ev_last: per sample, its
	 * last event + 1 (ev_last_alloc entries); ev_untidy: two events
	 * may share a sample and a bucket (kiln_prof_events_tidy()). */
	struct kiln_prof_event *events;
	int64_t *ev_values;
	size_t nevents, events_alloc;
	uint32_t *ev_last;
	size_t ev_last_alloc;
	bool ev_untidy;

	/* Per type: the magnitudes of the values samples were added with
	 * (kiln_prof_add_sample(), _append_sample(), _add_to_sample(); since
	 * the last kiln_prof_take_samples()).  Totals are int64_t: past
	 * INT64_MAX one could wrap, and p->err becomes -EOVERFLOW. */
	uint64_t *mag;

	struct kiln_value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;
	uint32_t default_type;			/* string id, 0 = last type */
	uint32_t drop_frames, keep_frames;	/* string ids */
	uint32_t *comments;			/* string ids */
	size_t ncomments;
	/* Memory over time, where the input has it (a heap trace): the heap
	 * size in bytes at nmem moments, mem_t in nanoseconds since
	 * time_nanos, in time order (kiln_prof_set_memory()). */
	int64_t *mem_t, *mem_bytes;
	size_t nmem;

	int err;				/* sticky -ENOMEM */

	struct kiln_htab str_index, func_index, map_index, loc_index,
		lset_index, sample_index;
	/* Samples were appended without sample_index
	 * (kiln_prof_append_sample()): it is built again before the next
	 * kiln_prof_add_sample() looks in it. */
	bool sample_index_stale;
};

/* NULL with errno set on failure. */
struct kiln_prof *kiln_prof_new(void);
/* Exchanges what a and b hold (a reader that built its model aside
 * gives it to the caller's profile). */
void kiln_prof_swap(struct kiln_prof *a, struct kiln_prof *b);
void kiln_prof_free(struct kiln_prof *p);

static inline int kiln_prof_error(const struct kiln_prof *p)
{
	return p->err;
}

/* Interns a string (not necessarily NUL-terminated); 0 for "". */
uint32_t kiln_prof_intern(struct kiln_prof *p, const char *s, size_t len);
uint32_t kiln_prof_interns(struct kiln_prof *p, const char *s);

static inline const char *kiln_prof_str(const struct kiln_prof *p, uint32_t id)
{
	return p->str_data + p->strs[id].off;
}

static inline uint32_t kiln_prof_strlen(const struct kiln_prof *p, uint32_t id)
{
	return p->strs[id].len;
}

/* Returns the id of an existing string, 0 if absent (or ""). */
uint32_t kiln_prof_find_str(const struct kiln_prof *p, const char *s,
			    size_t len);

/* The label of label set lset whose key is string id key, or NULL (also
 * for lset or key 0). */
const struct kiln_label *kiln_prof_label(const struct kiln_prof *p,
					 uint32_t lset, uint32_t key);

uint32_t kiln_prof_function(struct kiln_prof *p, uint32_t name,
			    uint32_t system_name, uint32_t filename,
			    int64_t start_line);
/* Mappings are interned by start, limit, offset and file. */
uint32_t kiln_prof_mapping(struct kiln_prof *p, const struct kiln_mapping *m);
/* lines: innermost first; n may be 0 (an unsymbolized address). */
uint32_t kiln_prof_location(struct kiln_prof *p, uint32_t mapping,
			    uint64_t address, const struct kiln_line *lines,
			    uint32_t n);
uint32_t kiln_prof_labelset(struct kiln_prof *p, const struct kiln_label *l,
			    uint32_t n);

/*
 * Gives location loc, which has no lines yet (an unsymbolized address),
 * the lines `lines` (innermost first), as a symbolizer does in place.  The
 * location keeps its id; it is re-indexed so that kiln_prof_location()
 * with the same lines finds it.  0, -EINVAL (loc out of range or already
 * with lines) or -ENOMEM.
 */
int kiln_prof_set_lines(struct kiln_prof *p, uint32_t loc,
			const struct kiln_line *lines, uint32_t n);

/*
 * Sets the sample types; only while the profile has no samples.
 * 0, -EBUSY or -ENOMEM.
 */
int kiln_prof_set_types(struct kiln_prof *p, const struct kiln_value_type *t,
			size_t n);
/* Convenience: sets one or more types from "type/unit" C strings. */
int kiln_prof_set_types_str(struct kiln_prof *p, const char *const *pairs,
			    size_t n);

/*
 * Adds a sample: locs are location ids, leaf first; values has ntypes
 * entries.  A sample with the same stack and label set gets the values
 * added.  Returns the sample index, or -1 (and p->err) on failure.
 */
long kiln_prof_add_sample(struct kiln_prof *p, const uint32_t *locs,
			  uint32_t depth, const int64_t *values,
			  uint32_t labelset);
/*
 * Adds a sample as a new one without looking for its equal: for a
 * caller that knows it has none (a copy of distinct samples through
 * one-to-one id maps).  The sample index is rebuilt when
 * kiln_prof_add_sample() next needs it.  The index, or -1.
 */
long kiln_prof_append_sample(struct kiln_prof *p, const uint32_t *locs,
			     uint32_t depth, const int64_t *values,
			     uint32_t labelset);
/*
 * Adds values (ntypes entries) to sample idx, a value
 * kiln_prof_add_sample() returned: what adding that sample's stack and
 * label set again does, without looking them up.
 */
/* Notes values (ntypes entries) in p->mag: -EOVERFLOW (sticky, in
 * p->err) when a type's magnitudes pass INT64_MAX. */
static inline void kiln_prof_note_mag(struct kiln_prof *p, const int64_t *values)
{
	size_t i;

	for (i = 0; i < p->ntypes; i++) {
		uint64_t m = values[i] < 0 ? -(uint64_t)values[i] : (uint64_t)values[i];

		if (__builtin_add_overflow(p->mag[i], m, &p->mag[i]) ||
		    p->mag[i] > INT64_MAX)
			p->err = -EOVERFLOW;
	}
}

static inline void kiln_prof_add_to_sample(struct kiln_prof *p, size_t idx,
					   const int64_t *values)
{
	int64_t *v = p->values + idx * p->ntypes;
	size_t i;

	if (p->err)
		return;
	kiln_prof_note_mag(p, values);
	/* Wrapping, not undefined, on absurd inputs. */
	for (i = 0; i < p->ntypes; i++)
		v[i] = (int64_t)((uint64_t)v[i] + (uint64_t)values[i]);
}

/*
 * The time column (see "Time" above).  kiln_prof_add_event() records
 * that values (ntypes entries) of sample idx (a kiln_prof_add_sample()
 * result, whose values already include them) were taken at time ns
 * since time_nanos (>= 0; rounded down to its bucket here): added to the
 * sample's event of that bucket when it is its latest one, else a new
 * event.  kiln_prof_add_timed() is kiln_prof_add_sample() and
 * kiln_prof_add_event() in one.  Errors are sticky (p->err).
 */
void kiln_prof_add_event(struct kiln_prof *p, size_t idx, int64_t time,
			 const int64_t *values);
long kiln_prof_add_timed(struct kiln_prof *p, const uint32_t *locs,
			 uint32_t depth, const int64_t *values,
			 uint32_t labelset, int64_t time);

static inline const int64_t *kiln_prof_event_values(const struct kiln_prof *p,
						    size_t ev)
{
	return p->ev_values + ev * p->ntypes;
}

/*
 * Appends the events of src's samples that smap maps (smap[i] >= 0: the
 * index in p of src's sample i) as kiln_prof_add_event() would, for a
 * copy into a p that had no samples, each kept sample of src a sample of
 * its own in p, from a tidy src (!src->ev_untidy): then no event can
 * meet another of its sample and bucket, and each is appended without
 * looking at the sample's latest (a cache miss per event on a big
 * column).  stop(arg) is asked every 16,384 events (NULL: never):
 * -ECANCELED.  0, -EINVAL (not such a copy) or -ENOMEM.
 */
int kiln_prof_events_append(struct kiln_prof *p, const struct kiln_prof *src,
			    const long *smap, int (*stop)(void *), void *arg);

/*
 * Merges events that share a sample and a bucket (input out of time
 * order, or two samples made one by kiln_prof_hide() or merging) into
 * the first of them, keeping the column's order.  0 or -ENOMEM.
 */
int kiln_prof_events_tidy(struct kiln_prof *p);

/*
 * For profile/'s operations that rebuild the samples: keeps the events of
 * the samples that map (one entry per sample they had) gives a new index
 * (>= 0), renumbered, drops the others, and tidies.  0 or -ENOMEM.
 */
int kiln_prof_events_remap(struct kiln_prof *p, const long *map);

/*
 * Reading the column in time order (events of one bucket in column
 * order, so the order of their first samples in the input):
 *
 *	struct kiln_prof_events it;
 *	const struct kiln_prof_event *e;
 *	size_t ev;
 *
 *	if (kiln_prof_events_begin(&it, p))
 *		return -ENOMEM;
 *	while ((e = kiln_prof_events_next(&it, &ev)))
 *		use(e->time, e->sample, kiln_prof_event_values(p, ev),
 *		    p->samples[e->sample].labels);
 *	kiln_prof_events_end(&it);
 *
 * The thread of an event is its sample's (kiln_prof_thread()).  The
 * profile must not change while it is read.  begin: 0 or -ENOMEM (a
 * column out of time order needs an index of 4 bytes per event).
 */
struct kiln_prof_events {
	const struct kiln_prof *p;
	uint32_t *order;	/* NULL: the column is in time order */
	size_t i;
};

int kiln_prof_events_begin(struct kiln_prof_events *it,
			   const struct kiln_prof *p);
const struct kiln_prof_event *kiln_prof_events_next(struct kiln_prof_events *it,
					       size_t *ev);
void kiln_prof_events_end(struct kiln_prof_events *it);

/* The "pid" and "thread" labels of label set lset (-1 where absent or
 * not numeric). */
void kiln_prof_thread(const struct kiln_prof *p, uint32_t lset, int64_t *pid,
		      int64_t *tid);

/* A sample's location ids; NULL for a sample without frames (before any
 * stack is stored the stack array is NULL, and NULL + 0 is undefined). */
static inline const uint32_t *kiln_prof_sample_locs(const struct kiln_prof *p,
						    const struct kiln_sample *s)
{
	return s->depth ? p->stacks + s->stack : NULL;
}

static inline int64_t kiln_prof_value(const struct kiln_prof *p, size_t sample,
				      size_t type)
{
	return p->values[sample * p->ntypes + type];
}

/* Sample i's value in a selection given as weights (w: p->nsamples
 * entries, kiln_prof_weights()), or with w NULL its value of type. */
static inline int64_t kiln_prof_weight(const struct kiln_prof *p, size_t i,
				       int type, const int64_t *w)
{
	return w ? w[i] : kiln_prof_value(p, i, (size_t)type);
}

int kiln_prof_add_comment(struct kiln_prof *p, const char *s);

/*
 * Sets the profile's memory over time (see struct kiln_prof: mem_t),
 * copying n moments t (ns since time_nanos, in time order) and their heap
 * sizes; replaces any earlier series.  Merging keeps the first profile's.
 * 0 or -ENOMEM.
 */
int kiln_prof_set_memory(struct kiln_prof *p, const int64_t *t,
			 const int64_t *bytes, size_t n);

/*
 * The index of a sample type by name ("cpu", "samples", "alloc_space" or
 * "type/unit"), or a decimal index.  NULL or "" picks the default: the
 * type named by default_type, else the last one, as pprof does.  Returns
 * the index, or -EINVAL with d filled (the known types listed).
 */
int kiln_prof_type_index(const struct kiln_prof *p, const char *name,
			 struct kiln_diag *d);

int64_t kiln_prof_total(const struct kiln_prof *p, size_t type);

/*
 * Adds every sample of src to dst, remapping ids.  The sample types must
 * match by name and unit.  0, -EINVAL (d filled) or -ENOMEM.
 */
int kiln_prof_merge(struct kiln_prof *dst, const struct kiln_prof *src,
		    struct kiln_diag *d);

/*
 * Asked now and then by a long operation (every few thousand samples):
 * non-zero stops it with -ECANCELED.
 */
typedef int (*kiln_prof_stop_fn)(void *arg);
/* How often (samples or events) a long operation asks whether to stop. */
#define KILN_PROF_CHECK_EVERY 16384

/*
 * kiln_prof_merge() of only the samples i of src with keep[i] set (keep
 * NULL: every one) and their events; stop (NULL: never) is asked now and
 * then.  Into an empty dst the time column stays tidy without sorting.
 * 0, -EINVAL (d filled), -ECANCELED (dst then partial: free it) or
 * -ENOMEM.
 */
int kiln_prof_merge_some(struct kiln_prof *dst, const struct kiln_prof *src,
			 const uint8_t *keep, kiln_prof_stop_fn stop,
			 void *arg, struct kiln_diag *d);

/*
 * Sets keep[i] (p->nsamples entries) to whether sample i passes focus and
 * ignore as kiln_prof_filter() judges it, without changing the samples
 * (a profile read by several threads: named first, kiln_prof_name_all()).
 * 0, -EINVAL (bad regex, d filled), -ECANCELED (stop) or -ENOMEM.
 */
int kiln_prof_filter_mask(struct kiln_prof *p, const char *focus,
			  const char *ignore, uint8_t *keep,
			  kiln_prof_stop_fn stop, void *arg,
			  struct kiln_diag *d);

/*
 * For each location of a profile, the samples whose stacks hold it (in
 * sample order, each once): focus and ignore can then be judged by
 * location and the samples marked, without reading every sample's stack
 * (kiln_prof_weights()).  Location l's samples are
 * samples[off[l] .. off[l + 1]).
 */
struct kiln_loc_samples {
	uint32_t *off;		/* [nlocations + 2] */
	uint32_t *samples;
	size_t nlocations, n;
};
int kiln_loc_samples_build(struct kiln_loc_samples *ls,
			   const struct kiln_prof *p);
void kiln_loc_samples_release(struct kiln_loc_samples *ls);

/*
 * A selection of p weighed without a copy of its samples: w[i]
 * (p->nsamples entries) is the value of type `type` that sample i keeps
 * after kiln_prof_filter(focus, ignore) and, with range, after
 * kiln_prof_keep_time(range[0], range[1]) -- its value when it passes,
 * with a range the sum of its events' values inside it; 0 when it goes.
 * ls (NULL: none) is p's samples by location: with it every location is
 * judged and the samples of those that match marked, instead of every
 * sample's stack read.  p is only read (named first,
 * kiln_prof_name_all()).  0, -EINVAL (bad regex, d filled), -ECANCELED
 * (stop) or -ENOMEM.
 */
int kiln_prof_weights(struct kiln_prof *p, const struct kiln_loc_samples *ls,
		      const char *focus, const char *ignore,
		      const int64_t *range, int type, int64_t *w,
		      kiln_prof_stop_fn stop, void *arg, struct kiln_diag *d);

/*
 * Keeps only samples with a frame whose function name (or file name)
 * matches focus, then drops those with a frame matching ignore, as pprof's
 * -focus and -ignore do.  Either may be NULL.  POSIX extended regexes.
 * 0, -EINVAL (bad regex, d filled) or -ENOMEM.
 */
int kiln_prof_filter(struct kiln_prof *p, const char *focus,
		     const char *ignore, struct kiln_diag *d);

/*
 * Removes from every stack the frames whose function name matches hide,
 * as pprof's -hide does: the samples stay (their values count where the
 * rest of their stack leads), a location keeps its other inline frames,
 * and a location left with none goes.  NULL or "": nothing.  POSIX
 * extended regex.  0, -EINVAL (bad regex, d filled) or -ENOMEM.
 */
int kiln_prof_hide(struct kiln_prof *p, const char *hide, struct kiln_diag *d);

/*
 * Keeps only what was taken in [t0, t1): the events whose time (see
 * "Time" above) is in the range, each sample left with the sum of its
 * kept events' values.  Samples without events are dropped.  0 or
 * -ENOMEM.
 */
int kiln_prof_keep_time(struct kiln_prof *p, int64_t t0, int64_t t1);

/*
 * The samples of p taken out to be added again (the rewriting filters:
 * filter.c, transform.c): p keeps its tables (function, location and label
 * ids stay valid) and has no samples; the caller adds what it keeps with
 * kiln_prof_readd() (which notes each old sample's new index) and ends
 * with kiln_prof_samples_free(), which frees the old arrays and points
 * the time column's events at the new samples (those of samples not
 * added go).
 */
struct kiln_prof_samples {
	struct kiln_sample *samples;
	int64_t *values;
	uint32_t *stacks;
	size_t n;
	long *map;	/* each old sample's new index, -1: gone */
};
struct kiln_prof_samples kiln_prof_take_samples(struct kiln_prof *p);
/* Adds old sample i of o again with stack locs and values v. */
void kiln_prof_readd(struct kiln_prof *p, struct kiln_prof_samples *o, size_t i,
		     const uint32_t *locs, uint32_t depth, const int64_t *v,
		     uint32_t lset);
void kiln_prof_samples_free(struct kiln_prof *p, struct kiln_prof_samples *o);

/* A label's value as text: a string label's string, a numeric one's
 * decimal (written into buf of n bytes, which 32 suffice for). */
const char *kiln_prof_label_text(const struct kiln_prof *p,
				 const struct kiln_label *l, char *buf, size_t n);

/* A condition on a sample's labels: its label `key` has (or, exclude,
 * has not) the value `value` (as kiln_prof_label_text() writes it). */
struct kiln_label_cond {
	const char *key, *value;
	bool exclude;
};

/*
 * Keeps the samples whose labels meet the n conditions: for every key
 * that include conditions name, the sample's label of that key has one
 * of their values (a sample without it goes); no exclude condition's
 * label has its value.  n 0: all stay.  0 or -ENOMEM.
 */
int kiln_prof_keep_labels(struct kiln_prof *p, const struct kiln_label_cond *c,
			  size_t n);

/*
 * Roots every stack at its sample's label `key`: a frame named
 * "KEY=VALUE" ("KEY=(none)" for samples without it) is added as the
 * outermost frame, so that a tree or flame graph starts with one node
 * per value.  NULL or "": nothing.  0 or -ENOMEM.
 */
int kiln_prof_group_by_label(struct kiln_prof *p, const char *key);

/* One frame of an expanded stack: inline frames are frames of their own. */
struct kiln_frame {
	uint32_t name;		/* string id, never 0: fallback for unknown */
	uint32_t function;	/* function id, 0 when unknown */
	uint32_t location;	/* location id */
	int64_t line;
};

/*
 * Expands sample s into frames, leaf first, inline frames innermost first,
 * into *frames (grown as needed, owned by the caller, free() it).
 * Unsymbolized locations get their module's name in brackets
 * ("[libfoo.so]", "[perf-1234.map]"; "[unknown]" without a module, see
 * docs/symbols.md), interned once; the address stays in the location.  Returns the number of frames or
 * -ENOMEM.
 */
long kiln_prof_frames(struct kiln_prof *p, const struct kiln_sample *s,
		      struct kiln_frame **frames, size_t *cap);
/* The same for one location: its frames, inline frames innermost first
 * (what kiln_prof_frames() gives for each location of a stack). */
long kiln_prof_loc_frames(struct kiln_prof *p, uint32_t loc,
			  struct kiln_frame **frames, size_t *cap);

/*
 * Makes every name kiln_prof_frames() would make on first use (the
 * "[module]" names of unsymbolized locations) now, so that reading p
 * afterwards (frames, trees, top tables, filters into another profile)
 * never writes it: a profile read by several threads at once (kiln
 * serve's inputs) is named once before it is shared.  0 or -ENOMEM.
 */
int kiln_prof_name_all(struct kiln_prof *p);

/* Where a location's code lives, for colouring. */
enum kiln_kind {
	KILN_KIND_USER,		/* the program itself */
	KILN_KIND_LIB,		/* a shared library */
	KILN_KIND_KERNEL,	/* kernel code */
	KILN_KIND_OTHER,	/* unknown, JIT, interpreter */
};

enum kiln_kind kiln_prof_loc_kind(const struct kiln_prof *p, uint32_t loc);

#endif
