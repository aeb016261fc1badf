/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JSON API of kiln serve (web stage): every aggregation the page shows
 * is done in C, over the model, and only what one view draws is sent.
 *
 *   /api/status     loading and heavy work under way (status.c; never
 *                   waits on the model)
 *   /api/profiles   the inputs: names, formats, sample types, totals
 *   /api/flame      flame graph nodes (api-tree.c)
 *   /api/sandwich   callers and callees of one function (api-tree.c)
 *   /api/top        the `kiln top` table (api-table.c)
 *   /api/calltree   the call tree, one node's children at a time
 *                   (api-calltree.c)
 *   /api/summary    what the profile says about itself (api-summary.c)
 *   /api/labels     the selection's labels and their values (api-labels.c)
 *   /api/source     a function's cost per source line (api-table.c)
 *   /api/disasm     a function's instructions and their samples
 *                   (api-disasm.c)
 *   /api/callgraph  the call graph (kiln callgraph's engine) as SVG
 *   /api/timeline   the selection's values per thread over time, or a
 *                   heap trace's size over time
 *   /api/stackchart one thread's runs of identical stacks in time order
 *                   for a time window (api-stack.c)
 *   /api/download   the selection as pprof, collapsed, speedscope,
 *                   perf-script, a flame graph SVG or the saved page
 *
 * Common arguments (call.c): p (input index, default 0), type (sample
 * type name or index, as --sample-type), focus, ignore (regexes, as kiln
 * top), t0 and t1 (a time range, nanoseconds since the recording's
 * start), labels (label conditions), group (a label to root stacks
 * at) and tf (stack transforms, profile/transform.h).  The wire format is in docs/kiln-serve.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "format/format.h"
#include "render/callgraph.h"
#include "render/flame.h"
#include "util/buf.h"
#include "web/call.h"

/* ---- /api/profiles ---- */

int web_api_profiles(struct call *c)
{
	size_t i, t;

	call_add(c, "{\"profiles\":[");
	for (i = 0; i < c->m->n; i++) {
		struct kiln_prof *p = c->m->in[i].prof;
		int def = kiln_prof_type_index(p, NULL, NULL);

		call_add(c, "%s{\"id\":%zu,\"name\":", i ? "," : "", i);
		call_add_str(c, c->m->in[i].name);
		call_add(c, ",\"format\":");
		call_add_str(c, c->m->in[i].format);
		call_add(c, ",\"samples\":%zu,\"times\":%s,\"default_type\":%d,"
		    "\"types\":[", p->nsamples,
		    p->nevents || kiln_prof_find_str(p, "time", 4) ||
		    c->m->in[i].trace ?
		    "true" : "false", def);
		for (t = 0; t < p->ntypes; t++) {
			char s[32];
			int64_t total = kiln_prof_total(p, t);

			kiln_value_str(total, call_unit_name(p, (int)t), s, sizeof(s));
			call_add(c, "%s{\"type\":", t ? "," : "");
			call_add_str(c, call_type_name(p, (int)t));
			call_add(c, ",\"unit\":");
			call_add_str(c, call_unit_name(p, (int)t));
			call_add(c, ",\"total\":%" PRId64 ",\"total_str\":", total);
			call_add_str(c, s);
			call_add(c, "}");
		}
		call_add(c, "]}");
	}
	call_add(c, "],\"base\":");
	if (c->m->base.prof) {
		call_add(c, "{\"name\":");
		call_add_str(c, c->m->base.name);
		call_add(c, ",\"format\":");
		call_add_str(c, c->m->base.format);
		call_add(c, "}");
	} else {
		call_add(c, "null");
	}
	call_add(c, "}\n");
	return 200;
}

/*
 * The call graph of the selection as SVG, laid out by graphviz: the
 * engine and pruning of `kiln callgraph`.  Each node links to
 * WEB_CG_HREF followed by its name, which the page turns into the
 * function's sandwich.  The drawing is done by the function registered
 * with kiln_web_enable_callgraph() (cgsvg.c), so that what links the web
 * stage without it (the agent, inside other programs) never loads
 * graphviz.
 */
#define WEB_CG_HREF "kiln-fn:"

static kiln_web_callgraph_fn cg_draw;

void kiln_web_set_callgraph(kiln_web_callgraph_fn fn)
{
	cg_draw = fn;
}

int web_api_callgraph(struct call *c)
{
	struct kiln_callgraph_opts o = KILN_CALLGRAPH_OPTS_INIT;
	struct web_view *v;
	long nodes;
	bool diff;
	int err;

	if (call_num_arg(c, "nodes", 0, 10000, o.max_nodes, &nodes) ||
	    call_frac_arg(c, "node_fraction", o.node_fraction, &o.node_fraction) ||
	    call_frac_arg(c, "edge_fraction", o.edge_fraction, &o.edge_fraction) ||
	    call_bool_arg(c, "lines", &o.by_line) || call_bool_arg(c, "diff", &diff) ||
	    call_selection(c, &v))
		return c->status;
	o.max_nodes = (int)nodes;
	if (!cg_draw)
		return call_fail(c, 404, "no call graph here (graphviz is not loaded)");
	if (diff) {
		if (!v->base)
			return call_fail(c, 400, "no diff base: start kiln serve with --diff BASE");
		if (v->base_type < 0)
			return call_fail(c, 400, "the diff base has no sample type %s/%s",
				    call_type_name(v->prof, v->type),
				    call_unit_name(v->prof, v->type));
		o.base = v->base;
		o.base_type = v->base_type;
	}
	err = cg_draw(v->prof, v->type, &o, c->m->in[v->p].name, WEB_CG_HREF,
		      c->out);
	if (err == -EINVAL)
		return call_fail(c, 500, "graphviz could not lay out the call graph");
	if (err) {
		c->err = err;
		return 500;
	}
	c->r->type = "image/svg+xml";
	return 200;
}

/* ---- /api/timeline ---- */

/* A heap trace's line: the heap size over time, as the bars of every
 * thread together, with the peak; its buckets are the analysis's. */
static int heap_timeline(struct call *c, struct web_input *in)
{
	struct web_heapline *hl;
	size_t b;
	int err = kiln_web_heapline(in, &hl, &c->d);

	if (err == -EINVAL)
		return call_fail(c, 500, "%s", c->d.msg);
	if (err) {
		c->err = err;
		return 500;
	}
	call_add(c, "{\"type\":\"heap\",\"unit\":\"bytes\",\"bucket_ns\":%" PRIu64
	    ",\"end\":%" PRIu64 ",\"buckets\":%zu,\"untimed\":0,\"nthreads\":0,"
	    "\"threads\":[],\"heap\":{\"peak\":%.0f,\"peak_t\":%" PRIu64
	    ",\"span\":%" PRIu64 ",\"end\":[", hl->bucket_ns,
	    hl->bucket_ns * hl->n, hl->n, hl->peak, hl->peak_t, hl->span);
	for (b = 0; b < hl->n; b++)
		call_add(c, "%s%.0f", b ? "," : "", hl->end[b]);
	call_add(c, "]},\"total\":[");
	for (b = 0; b < hl->n; b++)
		call_add(c, "%s%.0f", b ? "," : "", hl->max[b]);
	call_add(c, "]}\n");
	return c->err ? 500 : 200;
}

int web_api_timeline(struct call *c)
{
	struct web_timeline tl;
	struct web_view *v;
	long nb, nth;
	size_t i, b, shown;
	int err;

	if (call_num_arg(c, "buckets", 1, 10000, 400, &nb) ||
	    call_num_arg(c, "threads", 1, 10000, 64, &nth) ||
	    call_selection_of(c, false, &v))
		return c->status;
	if (c->m->in[v->p].trace)
		return heap_timeline(c, &c->m->in[v->p]);
	err = kiln_web_timeline(v->prof, v->type, (size_t)nb, &tl);
	if (err) {
		c->err = err;
		return 500;
	}
	call_add(c, "{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"bucket_ns\":%" PRId64 ",\"end\":%" PRId64 ",\"buckets\":%zu"
	    ",\"untimed\":%" PRId64 ",\"nthreads\":%zu,\"total\":[",
	    tl.bucket_ns, tl.end, tl.nbuckets, tl.untimed, tl.nthreads);
	for (b = 0; b < tl.nbuckets; b++)
		call_add(c, "%s%" PRId64, b ? "," : "", tl.total[b]);
	call_add(c, "],\"threads\":[");
	shown = tl.nthreads < (size_t)nth ? tl.nthreads : (size_t)nth;
	for (i = 0; i < shown; i++) {
		const struct web_thread *t = &tl.threads[i];

		call_add(c, "%s{\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"name\":",
		    i ? "," : "", t->pid, t->tid);
		call_add_str(c, t->name ? kiln_prof_str(v->prof, t->name) : "");
		call_add(c, ",\"total\":%" PRId64 ",\"values\":[", t->total);
		for (b = 0; b < tl.nbuckets; b++)
			call_add(c, "%s%" PRId64, b ? "," : "", t->values[b]);
		call_add(c, "]}");
	}
	call_add(c, "]}\n");
	kiln_web_timeline_release(&tl);
	return c->err ? 500 : 200;
}

/* ---- /api/download ---- */

int web_api_download(struct call *c)
{
	/* Besides the formats kiln writes (format/registry.c). */
	static const struct { const char *name, *ext, *type; } kinds[] = {
		{ "svg", "svg", "image/svg+xml" },
		{ "html", "html", "text/html; charset=utf-8" },
	};
	const char *format = call_arg(c, "format"), *base, *ext, *type;
	const struct kiln_fmt_info *w = NULL;
	struct kiln_flame_opts o = { 0 };
	struct web_view *v;
	size_t k, i;
	bool reverse;
	int err = 0;

	if (call_bool_arg(c, "reverse", &reverse) || call_selection(c, &v))
		return c->status;
	for (i = 0; format && !w && kiln_fmt_written(i); i++)
		if (!strcmp(format, kiln_fmt_written(i)->name))
			w = kiln_fmt_written(i);
	for (k = 0; format && !w && k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strcmp(format, kinds[k].name))
			break;
	if (!format || (!w && k == sizeof(kinds) / sizeof(kinds[0]))) {
		struct kiln_buf want = KILN_BUF_INIT;

		kiln_fmt_list_writable(&want, ", ", ", ");
		err = call_fail(c, 400, "bad format '%s': want %s, svg or html",
				format ? format : "", want.data ? want.data : "");
		kiln_buf_release(&want);
		return err;
	}
	base = strrchr(c->m->in[v->p].name, '/');
	base = base ? base + 1 : c->m->in[v->p].name;
	if (w) {
		struct kiln_fmt_wopts wo = { v->type, base, false };

		err = kiln_fmt_write(w->fmt, v->prof, &wo, c->out);
		/* Its first extension, less the dot. */
		ext = w->exts + 1;
		type = w->mime;
	} else if (k == 0) {
		o.reverse = reverse;
		err = kiln_flame_svg(v->prof, v->type, &o, c->out);
		ext = kinds[k].ext;
		type = kinds[k].type;
	} else {
		struct kiln_buf msg = KILN_BUF_INIT;
		int status = kiln_web_save_html_locked(c->m, c->r, c->out, &msg);

		kiln_buf_release(&msg);
		if (status != 200)
			return call_fail(c, 500, "cannot save the page (status %d)", status);
		ext = kinds[k].ext;
		type = kinds[k].type;
	}
	if (err) {
		c->err = err;
		return 500;
	}
	c->r->type = type;
	/* The input's name, less what a file name cannot hold, and the
	 * format's extension. */
	snprintf(c->r->filename, sizeof(c->r->filename), "%.100s.%.*s", base,
		 (int)strcspn(ext, " "), ext);
	for (char *f = c->r->filename; *f; f++)
		if (*f == '"' || *f == '\\' || (unsigned char)*f < 0x20 || *f == 0x7f)
			*f = '_';
	return 200;
}

/*
 * Whether request r touches state beside its view (the source policy, a
 * heap trace's lazily made line and its analyses, the saved page): it
 * then runs alone (m->rw for writing), as every request did before views
 * were shared.
 */
static bool exclusive(const struct kiln_web_model *m,
		      const struct kiln_web_req *r)
{
	static const char *const alone[] = { "/api/source", "/api/disasm",
		"/api/heap/sites", "/api/heap/allocs" };
	const char *format;
	size_t i;

	for (i = 0; i < sizeof(alone) / sizeof(alone[0]); i++)
		if (!strcmp(r->path, alone[i]))
			return true;
	if (m->has_trace && (!strcmp(r->path, "/api/summary") ||
			     !strcmp(r->path, "/api/timeline")))
		return true;
	format = r->arg ? r->arg(r->ctx, "format") : NULL;
	return !strcmp(r->path, "/api/download") && format &&
	       !strcmp(format, "html");
}

int kiln_web_api(struct kiln_web_model *m, struct kiln_web_req *r,
		 struct kiln_buf *out)
{
	struct call c = { m, r, out, { "" }, 200, 0 };
	bool alone;
	int status;

	r->type = NULL;
	r->filename[0] = '\0';
	/* The status never waits: it is how the page shows what runs. */
	if (!strcmp(r->path, "/api/status"))
		return kiln_web_status(m, out) ? 500 : 200;
	pthread_mutex_lock(&m->lock);
	/* A request for data before the inputs are read waits for them
	 * (the server answers as soon as it listens). */
	while (!m->st.ready)
		pthread_cond_wait(&m->ready_cv, &m->lock);
	pthread_mutex_unlock(&m->lock);
	if (m->st.failed[0])
		return call_fail(&c, 503, "%s", m->st.failed);
	kiln_web_req_begin(m);
	alone = exclusive(m, r);
	if (alone)
		pthread_rwlock_wrlock(&m->rw);
	else
		pthread_rwlock_rdlock(&m->rw);
	status = kiln_web_api_locked(m, r, out);
	pthread_rwlock_unlock(&m->rw);
	kiln_web_req_end(m);
	return status;
}

int kiln_web_api_locked(struct kiln_web_model *m, struct kiln_web_req *r,
			struct kiln_buf *out)
{
	struct call c = { m, r, out, { "" }, 200, 0 };
	int status;

	r->type = NULL;
	r->filename[0] = '\0';
	if (!strcmp(r->path, "/api/profiles"))
		status = web_api_profiles(&c);
	else if (!strcmp(r->path, "/api/flame"))
		status = web_api_flame(&c);
	else if (!strcmp(r->path, "/api/top"))
		status = web_api_top(&c);
	else if (!strcmp(r->path, "/api/sandwich"))
		status = web_api_sandwich(&c);
	else if (!strcmp(r->path, "/api/download"))
		status = web_api_download(&c);
	else if (!strcmp(r->path, "/api/timeline"))
		status = web_api_timeline(&c);
	else if (!strcmp(r->path, "/api/callgraph"))
		status = web_api_callgraph(&c);
	else if (!strcmp(r->path, "/api/source"))
		status = web_api_source(&c);
	else if (!strcmp(r->path, "/api/calltree"))
		status = web_api_calltree(&c);
	else if (!strcmp(r->path, "/api/summary"))
		status = web_api_summary(&c);
	else if (!strcmp(r->path, "/api/labels"))
		status = web_api_labels(&c);
	else if (!strcmp(r->path, "/api/stackchart"))
		status = web_api_stackchart(&c);
	else if (!strcmp(r->path, "/api/disasm"))
		status = web_api_disasm(&c);
	else if (!strcmp(r->path, "/api/heap/sites"))
		status = web_api_heap_sites(&c);
	else if (!strcmp(r->path, "/api/heap/allocs"))
		status = web_api_heap_allocs(&c);
	else
		status = call_fail(&c, 404, "no API '%s' (there are /api/status, "
			      "/api/profiles, "
			      "/api/flame, /api/top, /api/sandwich, /api/callgraph, "
			      "/api/source, /api/calltree, /api/summary, /api/labels, "
			      "/api/disasm, /api/heap/sites, /api/heap/allocs, "
			      "/api/timeline, /api/stackchart, "
			      "/api/download)", r->path);
	call_release(&c);
	if (c.err) {
		kiln_buf_reset(out);
		return 500;
	}
	return status;
}

