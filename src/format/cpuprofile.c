/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chrome's and Node's CPU profiles (format stage), read as speedscope
 * reads them (jlfwong/speedscope src/import/chrome.ts):
 *
 * - a .cpuprofile (`node --cpu-prof`, Chrome DevTools, the inspector's
 *   Profiler.stop): "nodes" (id, callFrame, children or parent),
 *   "samples" (a node id each) and "timeDeltas" (microseconds since the
 *   sample before, the first since "startTime");
 * - the older tree of V8's C++ API: "head" (nodes with nested
 *   children), "samples" and absolute "timestamps";
 * - Chrome's trace events (an array, or {"traceEvents": [...]}), where a
 *   profile is a "Profile" event followed by "ProfileChunk" events adding
 *   nodes, samples and deltas, or one "CpuProfile" event; a trace with
 *   none of them is read for its durations (format/trace-events.c).
 *
 * Each sample is its node's stack, weighing one sample and the time
 * until the next sample (the last: the mean interval).  "(root)" and
 * V8's "native dummy.js" frames are left out, and so are "(idle)"
 * samples, as speedscope leaves them; "(program)" and "(garbage
 * collector)" stay, as root frames of their own.  A frame is its
 * function's name (or "(anonymous FILE:LINE)"), script URL and line,
 * 1-based.  Trace events label each sample with pid, thread and the
 * thread's name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/jsonread.h"
#include "profile/profile.h"
#include "util/diag.h"
#include "util/buf.h"

#define NONE SIZE_MAX

enum { K_FRAME, K_SKIP, K_IDLE };

struct cnode {
	int64_t id;
	size_t parent;		/* index in r->n, NONE for a root */
	const json_t *frame;	/* callFrame (the node itself in "head" trees) */
	uint32_t loc;		/* 0 until first used */
	int kind;
	long sample;		/* the model's sample of its stack, -1 none yet */
};

struct creader {
	struct kiln_prof *p;
	struct cnode *n;
	size_t nn, alloc;
	size_t *byid;		/* indexes of n sorted by id */
	uint32_t *stack;
	size_t stack_alloc;
	uint64_t total;		/* of the nanoseconds */
	uint32_t lset;
	size_t orphans, orphan_at;	/* samples of no known node */
	bool traced;		/* durations, not a CPU profile */
};

static int add_node(struct creader *r, int64_t id, const json_t *frame,
		    size_t parent)
{
	const char *fn = kiln_json_str(frame, "functionName", "");
	const char *url = kiln_json_str(frame, "url", "");
	struct cnode *c;

	if (KILN_GROW(r->n, r->alloc, r->nn + 1, 256))
		return -ENOMEM;
	c = &r->n[r->nn++];
	c->id = id;
	c->parent = parent;
	c->frame = frame;
	c->loc = 0;
	c->sample = -1;
	c->kind = K_FRAME;
	if (!strcmp(fn, "(root)") || !strcmp(url, "native dummy.js"))
		c->kind = K_SKIP;
	else if (!strcmp(fn, "(idle)"))
		c->kind = K_IDLE;
	return 0;
}

static int cmp_id(const void *a, const void *b, void *ctx)
{
	const struct cnode *n = ctx;
	int64_t x = n[*(const size_t *)a].id, y = n[*(const size_t *)b].id;

	return x < y ? -1 : x > y;
}

static size_t find_id(const struct creader *r, int64_t id)
{
	size_t lo = 0, hi = r->nn;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int64_t m = r->n[r->byid[mid]].id;

		if (m == id)
			return r->byid[mid];
		if (m < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NONE;
}

/* Sorts the nodes by id and links children to parents. */
static int link_nodes(struct creader *r, const json_t *nodes,
		      struct kiln_diag *d, const char *where)
{
	size_t i, j;

	free(r->byid);
	r->byid = malloc((r->nn + 1) * sizeof(*r->byid));
	if (!r->byid)
		return -ENOMEM;
	for (i = 0; i < r->nn; i++)
		r->byid[i] = i;
	qsort_r(r->byid, r->nn, sizeof(*r->byid), cmp_id, r->n);
	for (i = 1; i < r->nn; i++)
		if (r->n[r->byid[i]].id == r->n[r->byid[i - 1]].id)
			return kiln_diag(d, "%snode id %" PRId64 " twice", where,
					 r->n[r->byid[i]].id);
	if (!nodes)
		return 0;
	for (i = 0; i < r->nn; i++) {
		const json_t *node = json_array_get(nodes, i);
		const json_t *kids = json_object_get(node, "children");
		const json_t *par = json_object_get(node, "parent");

		/* Chunks of trace events name the parent instead. */
		int64_t v;

		if (kiln_json_int(par, &v)) {
			size_t pi = find_id(r, v);

			if (pi != NONE)
				r->n[i].parent = pi;
		}
		for (j = 0; j < json_array_size(kids); j++) {
			const json_t *k = json_array_get(kids, j);
			size_t ci = kiln_json_int(k, &v) ? find_id(r, v) : NONE;

			if (ci != NONE)
				r->n[ci].parent = i;
		}
	}
	return 0;
}

/* The nodes of a .cpuprofile (a flat array). */
static int load_nodes(struct creader *r, const json_t *nodes,
		      struct kiln_diag *d, const char *where)
{
	size_t i;
	int err;

	r->nn = 0;
	if (!json_is_array(nodes))
		return kiln_diag(d, "%sno \"nodes\" array", where);
	for (i = 0; i < json_array_size(nodes); i++) {
		const json_t *node = json_array_get(nodes, i);
		const json_t *id = json_object_get(node, "id");
		const json_t *cf = json_object_get(node, "callFrame");

		int64_t v;

		if (!kiln_json_int(id, &v) || !json_is_object(cf))
			return kiln_diag(d, "%snode %zu: no integer \"id\" and "
					 "\"callFrame\" object", where, i);
		err = add_node(r, v, cf, NONE);
		if (err)
			return err;
	}
	return link_nodes(r, nodes, d, where);
}

/* The nodes of an old "head" tree, walked without recursion. */
static int load_tree(struct creader *r, const json_t *head,
		     struct kiln_diag *d)
{
	struct { const json_t *node; size_t parent; } *todo = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	r->nn = 0;
	if (!json_is_object(head))
		return kiln_diag(d, "\"head\" is not a node");
	todo = malloc(64 * sizeof(*todo));
	if (!todo)
		return -ENOMEM;
	cap = 64;
	todo[n].node = head;
	todo[n++].parent = NONE;
	while (n && !err) {
		const json_t *node = todo[--n].node, *kids, *id;
		size_t parent = todo[n].parent, j, self = r->nn;

		int64_t v;

		id = json_object_get(node, "id");
		if (!kiln_json_int(id, &v)) {
			err = kiln_diag(d, "node %zu of the tree: no integer \"id\"",
					r->nn);
			break;
		}
		err = add_node(r, v, node, parent);
		kids = json_object_get(node, "children");
		for (j = 0; !err && j < json_array_size(kids); j++) {
			if (n == cap) {
				void *t = realloc(todo, cap * 2 * sizeof(*todo));

				if (!t) {
					err = -ENOMEM;
					break;
				}
				todo = t;
				cap *= 2;
			}
			todo[n].node = json_array_get(kids, j);
			todo[n++].parent = self;
		}
	}
	free(todo);
	return err ? err : link_nodes(r, NULL, d, "");
}

/* The location of node i's frame; 0 with p->err on failure. */
static uint32_t node_loc(struct creader *r, size_t i)
{
	struct kiln_prof *p = r->p;
	struct cnode *c = &r->n[i];
	const char *fn = kiln_json_str(c->frame, "functionName", "");
	const char *url = kiln_json_str(c->frame, "url", "");
	const json_t *jl = json_object_get(c->frame, "lineNumber");
	int64_t line = 0;
	uint32_t name, f;
	struct kiln_line ln;
	char anon[256];

	if (c->loc)
		return c->loc;
	/* Chrome's lines are 0-based. */
	if (kiln_json_int(jl, &line) && line >= 0 && line < INT32_MAX)
		line++;
	else
		line = 0;
	if (!*fn) {
		const char *base = strrchr(url, '/');

		if (*url)
			snprintf(anon, sizeof(anon), "(anonymous %s:%" PRId64 ")",
				 base ? base + 1 : url, line);
		else
			snprintf(anon, sizeof(anon), "(anonymous)");
		fn = anon;
	}
	name = kiln_prof_interns(p, fn);
	f = kiln_prof_function(p, name, name, kiln_prof_interns(p, url), line);
	if (!f)
		return 0;
	ln.function = f;
	ln.line = line;
	c->loc = kiln_prof_location(p, 0, 0, &ln, 1);
	return c->loc;
}

/* One sample of node ni weighing ns nanoseconds. */
static int add_sample(struct creader *r, size_t ni, int64_t ns,
		      struct kiln_diag *d, const char *where)
{
	size_t cur, depth = 0, steps = 0;
	int64_t v[2] = { 1, ns };

	if (r->n[ni].kind == K_IDLE)
		return 0;
	if (__builtin_add_overflow(r->total, (uint64_t)ns, &r->total) ||
	    r->total > INT64_MAX)
		return kiln_diag(d, "%sthe time adds up past 64 bits", where);
	/* Most samples repeat a node: its stack is walked once. */
	if (r->n[ni].sample >= 0) {
		kiln_prof_add_to_sample(r->p, (size_t)r->n[ni].sample, v);
		return 0;
	}
	for (cur = ni; cur != NONE; cur = r->n[cur].parent) {
		if (++steps > r->nn)
			return kiln_diag(d, "%snode %" PRId64 ": its parents make "
					 "a cycle", where, r->n[ni].id);
		if (r->n[cur].kind != K_FRAME)
			continue;
		if (KILN_GROW(r->stack, r->stack_alloc, depth + 1, 64))
			return -ENOMEM;
		r->stack[depth] = node_loc(r, cur);
		if (!r->stack[depth])
			return r->p->err ? r->p->err : -ENOMEM;
		depth++;
	}
	if (!depth)
		return 0;
	/* Walked from the leaf up: leaf first, as the model keeps stacks. */
	r->n[ni].sample = kiln_prof_add_sample(r->p, r->stack, (uint32_t)depth,
					       v, r->lset);
	return r->p->err;
}

/*
 * The samples of one profile, the nodes loaded: times[i] is when sample
 * i was taken, in microseconds (made monotonic here, as speedscope does
 * with V8's occasional negative deltas).
 */
static int add_samples(struct creader *r, const json_t *samples, double *t,
		       size_t n, double end, struct kiln_diag *d,
		       const char *where)
{
	size_t i;
	int err = 0;

	for (i = 1; i < n; i++)
		if (t[i] < t[i - 1])
			t[i] = t[i - 1];
	for (i = 0; i < n && !err; i++) {
		const json_t *s = json_array_get(samples, i);
		int64_t id;
		size_t ni = kiln_json_int(s, &id) ? find_id(r, id) : NONE;
		double us;

		/* Trimmed traces name nodes they lack: speedscope leaves
		 * such samples out, and so does kiln, saying so. */
		if (ni == NONE) {
			if (!r->orphans++)
				r->orphan_at = i;
			continue;
		}
		if (i + 1 < n)
			us = t[i + 1] - t[i];
		else if (n > 1)
			us = (t[n - 1] - t[0]) / (double)(n - 1);
		else
			us = end > t[0] ? end - t[0] : 0;
		if (!(us >= 0 && us < 4e15))
			return kiln_diag(d, "%ssample %zu: a time delta beyond "
					 "reason", where, i);
		err = add_sample(r, ni, (int64_t)(us * 1000 + 0.5), d, where);
	}
	return err;
}

/* A profile of nodes, samples and timeDeltas (a .cpuprofile, or one
 * put together from trace events). */
static int read_new(struct creader *r, const json_t *nodes,
		    const json_t *samples, const json_t *deltas, double start,
		    double end, struct kiln_diag *d, const char *where)
{
	size_t n = json_array_size(samples), i;
	double *t, at = start;
	int err;

	if (!json_is_array(samples) || !json_is_array(deltas))
		return kiln_diag(d, "%sno \"samples\" and \"timeDeltas\" arrays",
				 where);
	if (json_array_size(deltas) < n)
		return kiln_diag(d, "%s%zu samples but %zu time deltas", where, n,
				 json_array_size(deltas));
	err = load_nodes(r, nodes, d, where);
	if (err)
		return err;
	t = malloc((n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const json_t *dt = json_array_get(deltas, i);

		if (!json_is_number(dt)) {
			free(t);
			return kiln_diag(d, "%stime delta %zu is not a number",
					 where, i);
		}
		at += json_number_value(dt);
		t[i] = at;
	}
	err = add_samples(r, samples, t, n, end, d, where);
	free(t);
	return err;
}

/* The old tree with absolute timestamps. */
static int read_old(struct creader *r, const json_t *root, struct kiln_diag *d)
{
	const json_t *samples = json_object_get(root, "samples");
	const json_t *ts = json_object_get(root, "timestamps");
	size_t n = json_array_size(samples), i;
	double *t;
	int err;

	if (!json_is_array(samples) || !json_is_array(ts) ||
	    json_array_size(ts) < n)
		return kiln_diag(d, "no \"samples\" and as many \"timestamps\"");
	err = load_tree(r, json_object_get(root, "head"), d);
	if (err)
		return err;
	t = malloc((n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!json_is_number(json_array_get(ts, i))) {
			free(t);
			return kiln_diag(d, "timestamp %zu is not a number", i);
		}
		t[i] = json_number_value(json_array_get(ts, i));
	}
	err = add_samples(r, samples, t, n, 0, d, "");
	free(t);
	return err;
}

/* A profile put together from trace events. */
struct tprof {
	char key[80];		/* the event's id, or "pid:tid" */
	int64_t pid, tid;
	json_t *nodes, *samples, *deltas;
	double start, end;
};

static double num(const json_t *obj, const char *key, double def)
{
	const json_t *j = json_object_get(obj, key);

	return json_is_number(j) ? json_number_value(j) : def;
}

/* An integer member (pid, tid), 0 when it is none or beyond 2^53. */
static int64_t inum(const json_t *obj, const char *key)
{
	int64_t v;

	return kiln_json_int(json_object_get(obj, key), &v) ? v : 0;
}

static void event_key(const json_t *ev, char *key, size_t n)
{
	const json_t *id = json_object_get(ev, "id");

	if (json_is_string(id))
		snprintf(key, n, "%s", json_string_value(id));
	else
		snprintf(key, n, "%.0f:%.0f", num(ev, "pid", 0), num(ev, "tid", 0));
}

static int cmp_ts(const void *a, const void *b, void *ctx)
{
	const json_t *ev = ctx;
	double x = num(json_array_get(ev, *(const size_t *)a), "ts", 0);
	double y = num(json_array_get(ev, *(const size_t *)b), "ts", 0);

	if (x != y)
		return x < y ? -1 : 1;
	/* Stable: equal times keep the file's order. */
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Appends the array member key of obj (if any) to *to. */
static int extend(json_t **to, const json_t *obj, const char *key)
{
	json_t *a = json_object_get(obj, key);

	if (!json_is_array(a))
		return 0;
	return json_array_extend(*to, a) ? -ENOMEM : 0;
}

static int read_trace(struct creader *r, const json_t *events,
		      struct kiln_diag *d)
{
	struct kiln_prof *p = r->p;
	struct tprof *tp = NULL;
	size_t ntp = 0, i, j, n = json_array_size(events), *order;
	uint32_t k_pid = kiln_prof_interns(p, "pid");
	uint32_t k_thread = kiln_prof_interns(p, "thread");
	uint32_t k_name = kiln_prof_interns(p, "thread_name");
	int err = 0;

	order = malloc((n + 1) * sizeof(*order));
	tp = calloc(n + 1, sizeof(*tp));
	if (!order || !tp) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		order[i] = i;
	/* Chrome writes events out of time order; chunks add up in it. */
	qsort_r(order, n, sizeof(*order), cmp_ts, (void *)events);
	for (i = 0; i < n && !err; i++) {
		const json_t *ev = json_array_get(events, order[i]);
		const char *name = kiln_json_str(ev, "name", "");
		const json_t *data = json_object_get(json_object_get(ev, "args"),
						     "data");
		const json_t *cp = json_object_get(data, "cpuProfile");
		char key[80];
		struct tprof *t = NULL;

		if (strcmp(name, "Profile") && strcmp(name, "ProfileChunk") &&
		    strcmp(name, "CpuProfile"))
			continue;
		if (!json_is_object(data))
			continue;	/* some Chrome versions leave it out */
		event_key(ev, key, sizeof(key));
		for (j = 0; j < ntp; j++)
			if (!strcmp(tp[j].key, key))
				t = &tp[j];
		if (strcmp(name, "ProfileChunk")) {
			/* A Profile or CpuProfile (re)starts one.  Bounded:
			 * each event looks the profiles up. */
			if (!t && ntp == 4096) {
				err = kiln_diag(d, "more than 4096 CPU profiles "
						"in one trace");
				break;
			}
			if (!t) {
				t = &tp[ntp++];
				snprintf(t->key, sizeof(t->key), "%s", key);
				t->nodes = json_array();
				t->samples = json_array();
				t->deltas = json_array();
				if (!t->nodes || !t->samples || !t->deltas) {
					err = -ENOMEM;
					break;
				}
			}
			t->pid = inum(ev, "pid");
			t->tid = inum(ev, "tid");
			t->start = num(data, "startTime", num(cp, "startTime", 0));
			t->end = num(data, "endTime", num(cp, "endTime", 0));
		}
		if (!t)
			continue;	/* a chunk of no declared profile */
		err = extend(&t->nodes, cp, "nodes");
		if (!err)
			err = extend(&t->samples, cp, "samples");
		if (!err)
			err = extend(&t->deltas, data, "timeDeltas");
		if (!err)
			err = extend(&t->deltas, cp, "timeDeltas");
		if (!err && json_is_number(json_object_get(data, "endTime")))
			t->end = num(data, "endTime", 0);
	}
	if (!err && !ntp) {
		/* No CPU profile: a trace of durations (chrome://tracing,
		 * Perfetto's JSON, clang -ftime-trace), read as speedscope
		 * does. */
		err = kiln_trace_events_read(p, events, d);
		r->traced = true;
	}
	for (j = 0; j < ntp && !err; j++) {
		struct kiln_label l[3];
		const char *tname = NULL;
		char where[120];

		/* The thread's name, from its metadata event. */
		for (i = 0; i < n && !tname; i++) {
			const json_t *ev = json_array_get(events, i);

			if (!strcmp(kiln_json_str(ev, "name", ""), "thread_name") &&
			    inum(ev, "pid") == tp[j].pid &&
			    inum(ev, "tid") == tp[j].tid)
				tname = kiln_json_str(json_object_get(ev, "args"),
						      "name", NULL);
		}
		memset(l, 0, sizeof(l));
		l[0].key = k_pid;
		l[0].num = tp[j].pid;
		l[1].key = k_thread;
		l[1].num = tp[j].tid;
		l[2].key = k_name;
		l[2].str = tname ? kiln_prof_interns(p, tname) : 0;
		r->lset = kiln_prof_labelset(p, l, tname ? 3 : 2);
		snprintf(where, sizeof(where), "profile '%.60s': ", tp[j].key);
		err = read_new(r, tp[j].nodes, tp[j].samples, tp[j].deltas,
			       tp[j].start, tp[j].end, d, where);
	}
out:
	for (j = 0; tp && j < ntp; j++) {
		json_decref(tp[j].nodes);
		json_decref(tp[j].samples);
		json_decref(tp[j].deltas);
	}
	free(tp);
	free(order);
	return err;
}

int kiln_cpuprofile_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d)
{
	static const char *const types[] = { "samples/count",
					     "wall/nanoseconds" };
	struct creader r;
	const json_t *events = NULL;
	json_t *root;
	int err;

	root = kiln_json_load(data, len, &err, d);
	if (!root)
		return err;
	memset(&r, 0, sizeof(r));
	r.p = p;
	err = kiln_prof_set_types_str(p, types, 2);
	if (err)
		goto out;
	p->period_type = p->types[1];
	if (json_is_array(root))
		events = root;
	else if (json_is_array(json_object_get(root, "traceEvents")))
		events = json_object_get(root, "traceEvents");
	if (events)
		err = read_trace(&r, events, d);
	else if (json_object_get(root, "nodes"))
		err = read_new(&r, json_object_get(root, "nodes"),
			       json_object_get(root, "samples"),
			       json_object_get(root, "timeDeltas"),
			       num(root, "startTime", 0), num(root, "endTime", 0),
			       d, "");
	else if (json_object_get(root, "head"))
		err = read_old(&r, root, d);
	else
		err = kiln_diag(d, "line 1: not a CPU profile: no \"nodes\", "
				"\"samples\" and \"timeDeltas\" (nor trace events)");
	if (!err && !p->nsamples && !p->err)
		err = kiln_diag(d, "no samples (none but idle ones)");
	if (!err && r.orphans)
		kiln_diag_warn(d, "left out %zu sample%s naming no node of the "
			       "profile, first sample %zu", r.orphans,
			       r.orphans == 1 ? "" : "s", r.orphan_at);
	if (!err && p->nsamples && !r.traced) {
		/* The period: the mean interval, as pprof shows it. */
		int64_t n = kiln_prof_total(p, 0);

		p->period = n ? kiln_prof_total(p, 1) / n : 0;
	}
out:
	free(r.n);
	free(r.byid);
	free(r.stack);
	json_decref(root);
	return err ? err : p->err;
}
