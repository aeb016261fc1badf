/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of kiln serve (web stage) shared by model.c and api.c: the
 * inputs and the cache of selections built from them.
 */
#ifndef KILN_WEB_WEBINT_H
#define KILN_WEB_WEBINT_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/hprof.h"
#include "profile/profile.h"
#include "profile/top.h"
#include "profile/tree.h"
#include "util/buf.h"

struct kiln_diag;
struct kiln_web_model;
struct kiln_web_req;
struct kiln_heaptrace_index;
struct web_timed;

/* Frees a view's ordered timed samples (api-stack.c); NULL is fine. */
void kiln_web_timed_free(struct web_timed *tm);

/* The kept answers of a view (web_view.memo). */
enum { WEB_MEMO_LABELS, WEB_MEMO_SUMMARY, WEB_MEMOS };

/* The view cache's byte budget by default (views.c): filtered copies
 * and what was built from them, least recently used dropped first. */
#define WEB_CACHE_BYTES (512ul << 20)
/* Seconds without a request after which the filtered views go and the
 * memory returns to the system (kiln_web_model_tidy()). */
#define WEB_IDLE_DROP_S 5
/* Pages whose newest request is remembered, for cancelling older ones. */
#define WEB_PAGES 64

/* A heap trace's memory over time (the whole run), from its analysis. */
struct web_heapline {
	uint64_t bucket_ns;
	size_t n;
	double *max, *end;	/* [n]: largest heap size in a bucket, at its end */
	double peak;
	uint64_t peak_t;	/* ns after the first event */
	uint64_t span;		/* ns from the first event to the last */
	/* For the summary: the analysis's totals and what the trace says
	 * about itself (cmdline owned, may be NULL). */
	struct kiln_hprof_totals tot;
	uint64_t pid, sample_bytes;
	size_t threads;
	char *cmdline;
	/* The heap views (api-heap.c): allocations and temporary ones made
	 * in each bucket, allocations by size class, the sites that held
	 * the most at any time (each with its series and a label no other
	 * shares), how many held any, and each stack's sample in the
	 * input's profile (to name any site: [1..nstacks], -1 none). */
	double *calls_n, *temp_n;		/* [n] */
	double size_calls[KILN_HPROF_SIZE_CLASSES];
	double size_bytes[KILN_HPROF_SIZE_CLASSES];
	struct web_heapsite *sites;
	size_t nsites, sites_total;
	long *sample_of;
	size_t nstacks;
};

/* One site of the per-site chart (api-heap.c). */
struct web_heapsite {
	uint32_t stack;
	char *label;
	double *values;		/* [n]: live bytes at each bucket's maximum */
	double max;		/* the largest of them */
	double peak;		/* live bytes at the heap's peak */
	double leaked, allocated, calls;
};

/* Fills hl's heap views from the finished analysis h; p (the input's
 * profile, or NULL: no sites) and so (its sample of each stack id, as
 * kiln_heaptrace_read_index() gives it; hl takes it) name the sites.
 * 0 or -ENOMEM. */
int web_heapviews_make(struct web_heapline *hl, const struct kiln_hprof *h,
		       struct kiln_prof *p, long *so);
void web_heapviews_release(struct web_heapline *hl);

struct web_input {
	char *name;
	char *format;
	struct kiln_prof *prof;
	/* A heap trace: its bytes, analysed again for a time range, and its
	 * memory over time (made on first use).  NULL otherwise. */
	char *trace;
	size_t trace_len;
	struct web_heapline *heap;
	struct kiln_heaptrace_index *index;	/* its time index, or NULL */
	/* The range last asked of the trace and its generation: a request
	 * for another range bumps gen, which stops the analyses of older
	 * ones (atomic: read by the analysing threads without the lock). */
	int64_t want_t0, want_t1;
	unsigned gen;
	/* Bumped by each allocation list asked of the trace: an older
	 * list's reading then stops (atomic, as gen). */
	unsigned agen;
	/* What the weighed views are made from, made on first use and
	 * dropped with the views when the server is idle (views.c, under
	 * m->all_lock): [reverse] the tree of every sample, which their
	 * trees are taken from (kiln_tree_select()), [WEB_ALL_LOCS] the
	 * samples of each location, which focus and ignore mark
	 * (kiln_prof_weights()).  NULL when not made. */
	struct web_all *all[3];
};

#define WEB_ALL_SEL 2		/* a selection at a time per CPU here */

/* An input's tree of every sample, held by the requests taking a tree
 * from it (refs, under m->all_lock); dropped: no longer the input's,
 * freed by the last one done with it. */
struct web_all {
	struct kiln_tree_all a;		/* [0], [1] */
	struct kiln_loc_samples ls;	/* [WEB_ALL_LOCS] */
	unsigned refs;
	bool dropped;
	/* kiln_tree_select()'s working arrays for a, kept for the next
	 * selection ([0], [1]; taken under m->all_lock: a request that
	 * finds both taken makes its own). */
	struct kiln_tree_sel sel[WEB_ALL_SEL];
	bool sel_taken[WEB_ALL_SEL];
};
#define WEB_ALL_LOCS 2

/* Input p's web_all `which` (0, 1: the tree of every sample, reverse or
 * not; WEB_ALL_LOCS), made if not yet and held for the caller until
 * kiln_web_all_put(); NULL when it cannot be made (no memory). */
struct web_all *kiln_web_all_get(struct kiln_web_model *m, unsigned p,
				 int which);
void kiln_web_all_put(struct kiln_web_model *m, struct web_all *a);
/* Frees a (NULL: nothing), held by no request. */
void kiln_web_all_free(struct web_all *a);
/* Into t, the tree of p's samples weighed by w, taken from a's tree of
 * every sample (kiln_tree_select()) with a set of a's kept working
 * arrays when one is free. */
int kiln_web_all_select(struct kiln_web_model *m, struct web_all *a,
			struct kiln_tree *t, struct kiln_prof *p, const int64_t *w);

/* Heavy work running now, for /api/status (WEB_JOBS at most shown). */
#define WEB_JOBS 8
struct web_job {
	bool active;
	unsigned p;		/* the input */
	char what[96];		/* "time range 1.2 s - 3.4 s" */
	size_t done, total;	/* bytes of the trace (atomic) */
	unsigned long id;
};

/* What /api/status says; its own lock, never held while working, so the
 * answer never waits on the model. */
struct web_status {
	pthread_mutex_t lock;
	bool ready;		/* every input read, the model complete */
	char failed[256];	/* why loading stopped, or "" */
	char loading[200];	/* what is being read now, or "" */
	size_t loaded;		/* inputs read so far */
	size_t load_done, load_total;	/* bytes of the one being analysed */
	struct web_job jobs[WEB_JOBS];
	unsigned long next_id;
};

/*
 * What a request selects: input p, sample type, focus, ignore and hide
 * regexes (NULL or "": none) and, when ranged, the samples taken in
 * [t0, t1) (nanoseconds since the input's start, as its "time" labels).
 */
struct web_sel {
	unsigned p;
	int type;
	const char *focus, *ignore, *hide;
	/* Label conditions "KEY=VALUE" (keep) or "KEY!=VALUE" (drop),
	 * separated by ';' ('\;' and '\\' inside), as
	 * kiln_prof_keep_labels() applies them; group: the label every stack
	 * is rooted at (kiln_prof_group_by_label()).  NULL or "": none. */
	const char *labels, *group;
	/* Stack transforms, in kiln_tf_parse()'s text form, applied after
	 * everything above (profile/transform.h).  NULL or "": none. */
	const char *tf;
	bool ranged;
	int64_t t0, t1;
	/* The asking page and its request's number (page NULL: none): a
	 * newer request of the same page stops this one's computation. */
	const char *page;
	uint64_t seq;
	/* The asker reads the view only through its tree, call tree levels
	 * and top tables (kiln_web_view_tree(), _paths(), _top()): a view
	 * made as weights over the input will do (web_view.w). */
	bool weighed_ok;
};

/*
 * One selection: input p filtered by focus/ignore and time range, for
 * sample type type, with what the views need built on first use.
 *
 * Shared (views.c): the cache holds each view once, with a reference
 * per request using it (refs, bytes and tick under m->cache_lock); a
 * request holds lock (recursive) while it reads the view or builds its
 * parts, so two requests of one selection take turns and requests of
 * different selections run side by side.  A view being made is in the
 * cache with its lock held by its maker: asking for the same selection
 * meanwhile waits for it (made once); a failed one says why (err, msg).
 */
struct web_view {
	pthread_mutex_t lock;
	unsigned refs;
	bool ready;			/* made; else err says why not */
	int err;
	char *msg;			/* the maker's diag on -EINVAL */
	size_t bytes;			/* what it holds, roughly */
	bool used;
	unsigned p;
	int type;
	char *focus, *ignore, *hide;	/* NULL for none */
	char *labels, *group;		/* NULL for none */
	char *tf;			/* NULL for none */
	bool ranged;
	int64_t t0, t1;
	struct kiln_prof *prof;		/* the input's, or a filtered copy */
	bool own;			/* prof is a copy */
	/* A selection by focus, ignore and time range only is first made
	 * without a copy: prof is the input and w[i] what its sample i
	 * weighs in the selection (kiln_prof_weights()), read by the trees,
	 * call tree levels and top tables.  A request that needs more (the
	 * labels, the timeline, the saved page...) has the copy made then
	 * (kiln_web_view_whole()).  NULL: prof is the selection. */
	int64_t *w;
	struct kiln_web_model *m;	/* whose input it is */
	struct kiln_prof *base;		/* the diff base, filtered alike, or NULL */
	bool base_own;
	int base_type;			/* the view's type in the base, -1 none */
	bool base_by_function;		/* --diff-by function */
	struct kiln_tree tree[2];	/* [reverse]; n == 0 until built */
	/* The stacks' names for the call tree's levels on demand
	 * (api-calltree.c), [reverse]; n == 0 and off NULL until made. */
	struct kiln_tree_paths paths[2];
	struct kiln_top top[2];		/* [by_line] */
	bool top_built[2];
	struct kiln_top base_top[2];	/* the diff base's, [by_line] */
	bool base_top_built[2];
	/* The last sandwich: function name string id (0: none) and trees. */
	uint32_t sw_name;
	struct kiln_tree sw_callers, sw_callees;
	/* Answers that depend on the selection only (/api/labels with its
	 * n, /api/summary), kept: each costs a pass over every sample. */
	struct kiln_buf memo[WEB_MEMOS];
	long memo_arg[WEB_MEMOS];
	bool memo_ok[WEB_MEMOS];
	/* The stack chart's timed samples in (thread, time) order, made
	 * on first use (api-stack.c), or NULL. */
	struct web_timed *timed;
	unsigned long tick;		/* last use, for eviction */
	bool pinned;			/* made by kiln_web_model_warm(): kept
					 * when idle (kiln_web_model_tidy()) */
};

/* A page's newest request (views.c): hash of its page argument (0:
 * free slot) and the largest seq seen, both atomic. */
struct web_page {
	uint64_t hash, seq;
	unsigned long tick;
};

/* Where source files may be read from (source.c). */
struct web_srcpol {
	struct kiln_buf roots;		/* NUL-separated, resolved: the working
					 * directory, --source-path folders */
	struct kiln_buf trims;		/* --trim-path prefixes */
	/* What the inputs' programs' debug info names (made on first use):
	 * their source files, sorted, each once, in filebuf; their compile
	 * folders (NUL-separated) */
	struct kiln_buf filebuf;
	char **files;
	size_t nfiles;
	struct kiln_buf compdirs;
	bool sources_done;
};

/*
 * Threads (docs/design.md "kiln serve's threads"): every request runs in
 * its connection's thread.  The inputs never change once loading is over
 * (named first: kiln_prof_name_all()), and are read without a lock.
 * lock guards the loading (the inputs being set, ready); requests wait
 * on ready_cv until the loader says the model is complete.  rw is held
 * for reading by the views' requests for their whole answer, and for
 * writing by the few that touch state of their own (the source policy,
 * a heap trace's analyses, the saved page: kiln_web_api() says which),
 * which then run alone as every request did before.  cache_lock guards
 * the view cache, the pages, the computations running and a heap
 * trace's wanted range; it is held only for moments.
 */
/* A request waiting for a computation slot (on its own stack). */
struct web_waiter {
	struct web_waiter *prev, *next;
};

struct kiln_web_model {
	pthread_mutex_t lock;
	pthread_cond_t ready_cv;
	pthread_rwlock_t rw;
	pthread_mutex_t cache_lock;
	pthread_cond_t work_cv;		/* a computation slot came free */
	pthread_mutex_t all_lock;	/* the inputs' trees of every sample */
	struct web_status st;
	const volatile sig_atomic_t *stop;	/* the loader stops when set */
	struct web_input *in;
	size_t n;
	struct web_srcpol src;
	struct web_input base;		/* --diff BASE; prof NULL when none */
	bool has_trace;			/* an input is a heap trace */
	/* The view cache (views.c), under cache_lock. */
	struct web_view **views;
	size_t nviews, views_alloc;
	size_t cache_bytes, cache_budget;
	unsigned long tick;
	unsigned long made, hits;	/* views made, found made */
	/* Filtered views being made now, and at most how many at once;
	 * the requests waiting for a slot, first come first (making.c). */
	unsigned working, work_max;
	struct web_waiter *wait_head, *wait_tail;
	/* Requests being answered, and when the last one ended
	 * (CLOCK_MONOTONIC ns); dropped: idle views gone since. */
	unsigned inflight;
	uint64_t idle_since;
	bool dropped;
	struct web_page pages[WEB_PAGES];
	int closing;			/* atomic: the server stops */
	bool diff_by_function;		/* --diff-by function */
};

/* A view being made (making.c): its model, the view, and the asking
 * page's hash (0: none) and request number. */
struct web_making {
	struct kiln_web_model *m;
	struct web_view *v;
	uint64_t hash, seq;
};

/* The hash of a page argument (never 0). */
uint64_t kiln_web_page_hash(const char *page);
/* Records that page hash asked request seq (m->cache_lock held): false
 * when a newer request of that page came already. */
bool kiln_web_page_asks(struct kiln_web_model *m, uint64_t hash,
			uint64_t seq);
/* Whether a request newer than seq of page hash came (no lock). */
bool kiln_web_page_moved_on(struct kiln_web_model *m, uint64_t hash,
			    uint64_t seq);
/* Non-zero when mk's making should stop (a kiln_prof_stop_fn). */
int kiln_web_make_stop(void *mk);
/* Makes view v (its lock held, its selection's strings set) of selection
 * s: its profile and diff base.  0, -EINVAL (d filled), -ECANCELED or
 * -ENOMEM. */
/*
 * A view made of weights (v->w) made whole: its filtered copy made as
 * kiln_web_view_make() makes it for other selections, and what was built
 * over the input dropped (v's lock held, as by its asker).  0 or -errno
 * (v left as it was).
 */
int kiln_web_view_whole(struct kiln_web_model *m, struct web_view *v,
			const struct web_making *mk, struct kiln_diag *d);
/* Drops the inputs' trees of every sample (m->all_lock taken): each is
 * freed now, or by the last request still taking a tree from it. */
void kiln_web_all_drop(struct kiln_web_model *m);
/* Drops what v built on first use (trees, tables, kept answers). */
void kiln_web_view_drop_built(struct web_view *v);
int kiln_web_view_make(struct kiln_web_model *m, struct web_view *v,
		       const struct web_sel *s, const struct web_making *mk,
		       struct kiln_diag *d);

/* A request is done with view v (kiln_web_view()'s): lets go its lock
 * and reference; the cache may then drop views over its budget, and
 * hands their memory back (views.c). */
void kiln_web_view_done(struct kiln_web_model *m, struct web_view *v);
/* Frees every cached view (kiln_web_model_free()). */
void kiln_web_views_free(struct kiln_web_model *m);
/* A request begins and ends (kiln_web_api()): counts the requests in
 * flight, and when the last one ended (kiln_web_model_tidy()). */
void kiln_web_req_begin(struct kiln_web_model *m);
void kiln_web_req_end(struct kiln_web_model *m);

/*
 * kiln_web_api() and kiln_web_save_html() with m->rw already held for
 * writing (save.c asks the API for each part of the page).
 */
int kiln_web_api_locked(struct kiln_web_model *m, struct kiln_web_req *r,
			struct kiln_buf *out);
int kiln_web_save_html_locked(struct kiln_web_model *m,
			      const struct kiln_web_req *r,
			      struct kiln_buf *out, struct kiln_buf *err_msg);
/* /api/status: loading and the heavy work running now (status.c); takes
 * only m->st.lock.  0 or -ENOMEM. */
int kiln_web_status(struct kiln_web_model *m, struct kiln_buf *out);
/* A job slot for heavy work on input p over total bytes (-1: none
 * free); _progress() updates it, _end() frees it.  status.c. */
int kiln_web_job_start(struct kiln_web_model *m, unsigned p, const char *what,
		       size_t total);
void kiln_web_job_progress(struct kiln_web_model *m, int job, size_t done,
			   size_t total);
void kiln_web_job_end(struct kiln_web_model *m, int job);

/*
 * The view of selection s, built or found in the cache (m->rw held),
 * with a reference and its lock taken for the caller (let go by
 * call_release(): unlock, then kiln_web_view_put()).  At most
 * m->work_max filtered views are made at once; the others wait.  A heap
 * trace analysed again for a range stops when another range of it is
 * asked for, and any making stops when a newer request of the same page
 * (s->page) comes and no other request waits for it: -ECANCELED.  The
 * diff base is filtered by focus, ignore and hide alike, never by time
 * (its times are its own).  0, -EINVAL (bad regex, d filled),
 * -ECANCELED or -ENOMEM.
 */
int kiln_web_view(struct kiln_web_model *m, const struct web_sel *s,
		  struct web_view **out, struct kiln_diag *d);
/* The view's tree (built on first use), with the diff base's values
 * added when diff is set.  0, -EINVAL (no base, or the base lacks the
 * view's sample type: d filled) or -ENOMEM. */
int kiln_web_view_tree(struct web_view *v, bool reverse, bool diff,
		       struct kiln_tree **out, struct kiln_diag *d);
/* The view's stacks as names for levels made on demand (made on first
 * use).  0 or -ENOMEM. */
int kiln_web_view_paths(struct web_view *v, bool reverse,
			struct kiln_tree_paths **out);
/* The view's top table, flat order (built on first use).  0 or -ENOMEM. */
int kiln_web_view_top(struct web_view *v, bool by_line,
		      struct kiln_top **out);
/* The diff base's top table for the view's type (v->base set and
 * v->base_type >= 0), built on first use.  0 or -ENOMEM. */
int kiln_web_view_base_top(struct web_view *v, bool by_line,
			   struct kiln_top **out);

/* One thread's samples over time (timeline.c). */
struct web_thread {
	int64_t pid, tid;	/* -1 when the samples do not say */
	uint32_t name;		/* string id of thread_name (or comm), 0 */
	int64_t total;
	int64_t *values;	/* [nbuckets] */
};

/*
 * The selection's values per thread and time bucket: nbuckets buckets of
 * bucket_ns (whole milliseconds) from 0 (the recording's start) to end,
 * threads sorted by total, busiest first.  Samples without a time add to
 * untimed only; nbuckets is 0 when no sample has a time.
 */
struct web_timeline {
	int64_t bucket_ns, end;
	size_t nbuckets;
	int64_t *total;		/* [nbuckets], every thread */
	struct web_thread *threads;
	size_t nthreads;
	int64_t untimed;
};

/* The memory over time of input in (a heap trace), made on first use.
 * 0, -EINVAL (d filled: the trace cannot be read again) or -ENOMEM. */
int kiln_web_heapline(struct web_input *in, struct web_heapline **out,
		      struct kiln_diag *d);

/* Fills tl from sample type `type` of p, in at most nbuckets buckets.
 * 0, -EINVAL (nbuckets 0) or -ENOMEM. */
int kiln_web_timeline(const struct kiln_prof *p, int type, size_t nbuckets,
		      struct web_timeline *tl);
void kiln_web_timeline_release(struct web_timeline *tl);

/* A source file's text and where its lines start (source.c). */
struct web_source {
	char *text;		/* the file, NUL-terminated */
	size_t *line;		/* [n + 1]: line k starts at line[k - 1] */
	size_t n;		/* lines */
};

/*
 * Finds the profile's source file `file` where the model's policy allows
 * reading it (source.c's header): 0 with its resolved path in out
 * (PATH_MAX bytes), or 0 with *why saying why there is none and which
 * option would help, or -ENOMEM.
 */
int kiln_web_source_find(struct kiln_web_model *m, const char *file,
			 char *out, const char **why);
void kiln_web_srcpol_release(struct web_srcpol *sp);

/*
 * Reads the source file path (found by kiln_web_source_find()) for the
 * source view: a regular text file (no NUL bytes) of at most 8 MiB.  0
 * with the text, or 0 with *why saying why there is none ("not readable
 * on this machine", ...), or -ENOMEM.
 */
int kiln_web_source_read(const char *path, struct web_source *src,
			 const char **why);
/* Line `line` (from 1) without its line break, or NULL past the end. */
const char *kiln_web_source_line(const struct web_source *src, size_t line,
				 size_t *len);
void kiln_web_source_release(struct web_source *src);

#endif
