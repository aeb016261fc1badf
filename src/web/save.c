/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "Save as one HTML file" for kiln serve (web stage): the page with its
 * style and scripts inlined and the data of the current selection embedded
 * as window.KILN_OFFLINE, so that it opens from file:// with no server
 * and no network.  The data are the API's own answers for the selection,
 * asked here, for every sample type of the profile: one per entry of
 * save_parts[] below (docs/kiln-serve.md "The saved page").  The page's
 * fetch layer (page/offline.js) answers the views' requests from them, so
 * the views draw a saved page through the same code as a live one.  Adding
 * a view to the saved page is one entry there (and, where its requests
 * ask for more than one saved answer covers, one in offline.js's ANSWER).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "web/call.h"
#include "web/web.h"
#include "web/webint.h"

#define SAVE_WIDTH "20000"	/* pixels of the embedded flame graph */
#define SAVE_MIN "0.00005"	/* the call tree: nodes down to 1/20000 */
#define SAVE_SW_WIDTH "2000"	/* pixels of each embedded sandwich */
#define SAVE_FNS 30		/* sandwich and source: the hottest functions */
#define SAVE_SOURCE_MAX (4u << 20)	/* bytes of source answers, all types */
#define SAVE_DISASM_MAX (2u << 20)	/* bytes of disassembly, all types */
#define SAVE_SC_WIDTH "4000"	/* pixels of each thread's stack chart */
#define SAVE_SC_THREADS 16	/* stack chart: the busiest threads */
#define SAVE_SC_THREADS_STR "16"	/* (each answer's thread list) */
#define SAVE_HEAP_SITES "32"	/* the per-site chart: every site kept */
#define SAVE_ALLOCS "1000"	/* the allocation list: the first blocks */
#define SAVE_SC_MAX (4u << 20)	/* bytes of stack chart answers, all types
				 * (each type an equal share) */

/* How a part is saved. */
enum {
	SAVE_SVG = 1,		/* the answer is SVG: saved as a JSON string */
	SAVE_BASE = 2,		/* only with a --diff base */
	SAVE_MAYFAIL = 4,	/* a 400 or 404 answer (no graphviz, no such
				 * type in the base) saves null */
	SAVE_FN = 8,		/* one answer per hot function: {"by_fn":{}} */
	SAVE_CAP = 16,		/* source text: counts against SAVE_SOURCE_MAX,
				 * null without source roots */
	SAVE_ASM = 64,		/* disassembly: counts against SAVE_DISASM_MAX */
	SAVE_THREAD = 32,	/* one answer per busy thread, over the
				 * selection's time span, counted against
				 * the type's share of SAVE_SC_MAX:
				 * {"by_thread":[]}; null without sample
				 * times */
};

/* Bytes the capped parts may still take, over every sample type. */
struct save_left {
	size_t source;		/* SAVE_CAP */
	size_t disasm;		/* SAVE_ASM */
	size_t stackchart;	/* SAVE_THREAD */
};

/* One part of a sample type's data: the answer to path with the fixed
 * arguments kv (then the selection's own), under key. */
struct save_part {
	const char *key;
	const char *path;
	const char *const *kv;	/* key, value, ..., NULL */
	unsigned flags;
};

static const char *const flame_kv[] = { "width", SAVE_WIDTH, "min", "1",
	"root", "", "search", "", "reverse", "0", "diff", "0", NULL };
static const char *const flame_rev_kv[] = { "width", SAVE_WIDTH, "min", "1",
	"root", "", "search", "", "reverse", "1", "diff", "0", NULL };
static const char *const flame_diff_kv[] = { "width", SAVE_WIDTH, "min", "1",
	"root", "", "search", "", "reverse", "0", "diff", "1", NULL };
#define TOP_KV "n", "0", "offset", "0", "sort", "", "order", "", "filter", ""
static const char *const top_kv[] = { TOP_KV, "lines", "0", "diff", "0",
	"absolute", "0", NULL };
static const char *const top_lines_kv[] = { TOP_KV, "lines", "1", "diff", "0",
	"absolute", "0", NULL };
static const char *const top_diff_kv[] = { TOP_KV, "lines", "0", "diff", "1",
	"absolute", "0", NULL };
static const char *const top_diff_abs_kv[] = { TOP_KV, "lines", "0", "diff", "1",
	"absolute", "1", NULL };
static const char *const ct_kv[] = { "min", SAVE_MIN, "path", "",
	"reverse", "0", NULL };
static const char *const ct_rev_kv[] = { "min", SAVE_MIN, "path", "",
	"reverse", "1", NULL };
static const char *const cg_kv[] = { "nodes", "", "lines", "0", "diff", "0",
	"node_fraction", "", "edge_fraction", "", NULL };
static const char *const sw_kv[] = { "width", SAVE_SW_WIDTH, "search", "", NULL };
static const char *const sc_kv[] = { "width", SAVE_SC_WIDTH, "threads",
	SAVE_SC_THREADS_STR, NULL };
static const char *const no_kv[] = { NULL };

/* A heap trace's views (heapviews.js), once per page, not per type: the
 * per-site chart of every site the server keeps (the page cuts it to the
 * number shown, offline.js), and the allocation list under its default
 * filter (alive at the end): the first SAVE_ALLOCS blocks, which the page
 * pages through, and filters where they are all of them. */
static const char *const hsites_kv[] = { "n", SAVE_HEAP_SITES, NULL };
static const char *const hallocs_kv[] = { "alive", "end", "n", SAVE_ALLOCS,
	"offset", "0", "site", "", "life_min", "", "life_max", "",
	"size_min", "", "size_max", "", NULL };
static const struct save_part heap_parts[] = {
	{ "sites", "/api/heap/sites", hsites_kv, 0 },
	{ "allocs", "/api/heap/allocs", hallocs_kv, 0 },
};

static const struct save_part save_parts[] = {
	{ "flame", "/api/flame", flame_kv, 0 },
	{ "flame_rev", "/api/flame", flame_rev_kv, 0 },
	{ "flame_diff", "/api/flame", flame_diff_kv, SAVE_BASE | SAVE_MAYFAIL },
	{ "top", "/api/top", top_kv, 0 },
	{ "top_lines", "/api/top", top_lines_kv, 0 },
	{ "top_diff", "/api/top", top_diff_kv, SAVE_BASE | SAVE_MAYFAIL },
	{ "top_diff_abs", "/api/top", top_diff_abs_kv, SAVE_BASE | SAVE_MAYFAIL },
	{ "calltree", "/api/calltree", ct_kv, 0 },
	{ "calltree_rev", "/api/calltree", ct_rev_kv, 0 },
	{ "summary", "/api/summary", no_kv, 0 },
	{ "callgraph", "/api/callgraph", cg_kv, SAVE_SVG | SAVE_MAYFAIL },
	{ "sandwich", "/api/sandwich", sw_kv, SAVE_FN },
	{ "source", "/api/source", no_kv, SAVE_FN | SAVE_CAP },
	{ "disasm", "/api/disasm", no_kv, SAVE_FN | SAVE_ASM },
	{ "stackchart", "/api/stackchart", sc_kv, SAVE_THREAD },
};

/* The selection's arguments, passed on to every part. */
static const char *const sel_keys[] = { "p", "type", "focus", "ignore",
					"hide", "t0", "t1", "labels",
					"group", "tf", NULL };

/* A request made here: its own arguments (type, fn), the part's, then
 * the selection's from the request being answered. */
struct sub {
	const struct kiln_web_req *parent;
	const char *const *own;
	const char *const *kv;
};

static const char *sub_arg(void *ctx, const char *key)
{
	const struct sub *s = ctx;
	size_t i;

	for (i = 0; s->own[i]; i += 2)
		if (!strcmp(s->own[i], key))
			return s->own[i + 1];
	for (i = 0; s->kv[i]; i += 2)
		if (!strcmp(s->kv[i], key))
			return s->kv[i + 1];
	for (i = 0; sel_keys[i]; i++)
		if (!strcmp(sel_keys[i], key))
			return s->parent->arg ? s->parent->arg(s->parent->ctx, key)
					      : NULL;
	return NULL;
}

/* Appends s to out with "</" written "<\/" (the same JSON, and no
 * "</script>" can end the script early).  0 or -ENOMEM. */
static int add_script_safe(struct kiln_buf *out, const char *s, size_t n)
{
	size_t i, from = 0;
	int err = 0;

	for (i = 0; i + 1 < n && !err; i++)
		if (s[i] == '<' && s[i + 1] == '/') {
			err = kiln_buf_add(out, s + from, i + 1 - from);
			if (!err)
				err = kiln_buf_addc(out, '\\');
			from = i + 1;
		}
	return err ? err : kiln_buf_add(out, s + from, n - from);
}

/* Asks the API for part pt with the arguments own and appends the answer
 * (JSON, or the SVG as a JSON string) to out.  The API's status (its
 * message in err_msg), or 500. */
static int ask(struct kiln_web_model *m, const struct kiln_web_req *parent,
	       const struct save_part *pt, const char *const *own,
	       struct kiln_buf *out, struct kiln_buf *err_msg)
{
	struct sub s = { parent, own, pt->kv };
	struct kiln_web_req r = { pt->path, sub_arg, &s, NULL, "" };
	struct kiln_buf ans = KILN_BUF_INIT;
	int status = kiln_web_api_locked(m, &r, &ans);

	if (status == 200 &&
	    ((pt->flags & SAVE_SVG) ? kiln_buf_add_json(out, ans.data, ans.len)
				    : kiln_buf_add(out, ans.data, ans.len)))
		status = 500;
	if (status != 200 && status != 500) {
		kiln_buf_reset(err_msg);
		kiln_buf_add(err_msg, ans.data, ans.len);
	}
	kiln_buf_release(&ans);
	return status;
}

/* Rows by cum, then flat, descending; then by name id. */
static int cmp_cum(const void *a, const void *b)
{
	const struct kiln_top_row *x = *(const struct kiln_top_row *const *)a;
	const struct kiln_top_row *y = *(const struct kiln_top_row *const *)b;

	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return x->flat != y->flat ? (x->flat > y->flat ? -1 : 1) :
	       x->name < y->name ? -1 : x->name > y->name;
}

/* The names of the selection's SAVE_FNS hottest functions (by cum) for
 * type tstr, copied into names (NUL-separated); *n of them.  The API's
 * status (a bad selection: 400, its message in err_msg). */
static int hot_fns(struct kiln_web_model *m, const struct kiln_web_req *parent,
		   const char *tstr, struct kiln_buf *names, size_t *n,
		   struct kiln_buf *err_msg)
{
	const char *const own[] = { "type", tstr, NULL };
	struct sub s = { parent, own, no_kv };
	struct kiln_web_req r = { "", sub_arg, &s, NULL, "" };
	struct kiln_buf ans = KILN_BUF_INIT;
	struct call c = { m, &r, &ans, { "" }, 200, 0 };
	const struct kiln_top_row **rows;
	struct web_view *v;
	struct kiln_top *t;
	int status = 200;
	size_t i;

	*n = 0;
	if (call_selection(&c, &v)) {
		kiln_buf_reset(err_msg);
		kiln_buf_add(err_msg, ans.data, ans.len);
		kiln_buf_release(&ans);
		return c.err ? 500 : c.status;
	}
	kiln_buf_release(&ans);
	rows = kiln_web_view_top(v, false, &t) ? NULL :
	       malloc((t->n + 1) * sizeof(*rows));
	if (!rows) {
		call_release(&c);
		return 500;
	}
	for (i = 0; i < t->n; i++)
		rows[i] = &t->rows[i];
	qsort(rows, t->n, sizeof(*rows), cmp_cum);
	for (i = 0; i < t->n && *n < SAVE_FNS && status == 200; i++) {
		const char *name = kiln_prof_str(v->prof, rows[i]->name);

		if (!rows[i]->cum || !*name)
			continue;
		if (kiln_buf_add(names, name, strlen(name) + 1))
			status = 500;
		else
			++*n;
	}
	free(rows);
	call_release(&c);
	return status;
}

/*
 * One answer of a part saved per function or per thread, appended to out
 * after `sep` (kept: answers already there): kept when the API has it
 * and it fits *cap (NULL: no cap), else left out whole (its separator
 * too; *cut counts those over the cap).  1 kept, 0 left out, -1: 500.
 */
static int ask_capped(struct kiln_web_model *m, const struct kiln_web_req *r,
		      const struct save_part *pt, const char *const *own,
		      const char *key, size_t kept, size_t *cap, size_t *cut,
		      struct kiln_buf *out, struct kiln_buf *err_msg)
{
	size_t start = out->len;
	int status;

	if ((kept && kiln_buf_addc(out, ',')) ||
	    (key && (kiln_buf_add_json(out, key, strlen(key)) ||
		     kiln_buf_addc(out, ':'))))
		return -1;
	status = ask(m, r, pt, own, out, err_msg);
	if (status == 500)
		return -1;
	if (status != 200 || (cap && out->len - start > *cap)) {
		/* Not there (no such function, no binary to disassemble, an
		 * empty window), or over the cap. */
		kiln_buf_reset(err_msg);
		out->len = start;
		*cut += status == 200;
		return 0;
	}
	if (cap)
		*cap -= out->len - start;
	return 1;
}

/* A SAVE_THREAD part for type tstr, appended to out: the answers for the
 * SAVE_SC_THREADS busiest threads of the selection over its time span
 * (t0, t1; else the whole recording), busiest first, as far as *left
 * lets; null when no sample has a time.  The API's status, or 500. */
static int save_threads(struct kiln_web_model *m, const struct kiln_web_req *r,
			const struct save_part *pt, const char *tstr,
			size_t *left, struct kiln_buf *out,
			struct kiln_buf *err_msg)
{
	const char *t0 = r->arg ? r->arg(r->ctx, "t0") : NULL;
	const char *t1 = r->arg ? r->arg(r->ctx, "t1") : NULL;
	const char *tonly[] = { "type", tstr, NULL };
	struct sub s = { r, tonly, no_kv };
	struct kiln_web_req tr = { "", sub_arg, &s, NULL, "" };
	struct kiln_buf ans = KILN_BUF_INIT;
	struct call c = { m, &tr, &ans, { "" }, 200, 0 };
	int64_t ids[SAVE_SC_THREADS][2];
	char pid[24], tid[24];
	const char *own[] = { "type", tstr, "pid", pid, "tid", tid,
			      "from", t0 ? t0 : "", "to", t1 ? t1 : "", NULL };
	size_t i, n, cut = 0, kept = 0;
	int status = web_stackchart_threads(&c, ids, SAVE_SC_THREADS, &n);

	if (status != 200) {
		kiln_buf_reset(err_msg);
		kiln_buf_add(err_msg, ans.data, ans.len);
	}
	status = c.err ? 500 : status;
	kiln_buf_release(&ans);
	call_release(&c);
	if (status != 200)
		return status;
	if (!n)
		return kiln_buf_adds(out, "null") ? 500 : 200;
	if (kiln_buf_adds(out, "{\"by_thread\":["))
		return 500;
	for (i = 0; i < n; i++) {
		int k;

		snprintf(pid, sizeof(pid), "%" PRId64, ids[i][0]);
		snprintf(tid, sizeof(tid), "%" PRId64, ids[i][1]);
		k = ask_capped(m, r, pt, own, NULL, kept, left, &cut, out, err_msg);
		if (k < 0)
			return 500;
		kept += (size_t)k;
	}
	return kiln_buf_addf(out, "],\"cut\":%zu,\"threads\":%zu,\"width\":%s}",
			     cut, n, SAVE_SC_WIDTH) ? 500 : 200;
}

/* Part pt for type tstr, appended to out as ,"key":answer (null where
 * it does not apply).  *left: bytes the capped parts may still take.
 * The API's status, or 500. */
static int save_part(struct kiln_web_model *m, const struct kiln_web_req *r,
		     const struct save_part *pt, const char *tstr,
		     const struct kiln_buf *fns, size_t nfns, struct save_left *left,
		     struct kiln_buf *out, struct kiln_buf *err_msg)
{
	const char *own[] = { "type", tstr, "fn", NULL, NULL };
	size_t *cap = (pt->flags & SAVE_CAP) ? &left->source :
		      (pt->flags & SAVE_ASM) ? &left->disasm : NULL;
	size_t i, at, cut = 0, kept = 0;
	const char *fn;
	int status;

	if (kiln_buf_addf(out, ",\"%s\":", pt->key))
		return 500;
	/* No base, or no source roots (libkiln's page, in the profiled
	 * program: it reads no source files). */
	if (((pt->flags & SAVE_BASE) && !m->base.prof) ||
	    ((pt->flags & SAVE_CAP) && !m->src.roots.len))
		return kiln_buf_adds(out, "null") ? 500 : 200;
	if (pt->flags & SAVE_THREAD)
		return save_threads(m, r, pt, tstr, &left->stackchart, out, err_msg);
	if (!(pt->flags & SAVE_FN)) {
		own[2] = NULL;
		at = out->len;
		status = ask(m, r, pt, own, out, err_msg);
		if ((status == 400 || status == 404) && (pt->flags & SAVE_MAYFAIL)) {
			kiln_buf_reset(err_msg);
			out->len = at;
			status = kiln_buf_adds(out, "null") ? 500 : 200;
		}
		return status;
	}
	/* One answer per hot function, as far as the cap lets. */
	if (kiln_buf_adds(out, "{\"by_fn\":{"))
		return 500;
	for (i = 0, fn = fns->data; i < nfns; i++, fn += strlen(fn) + 1) {
		int k;

		own[3] = fn;
		k = ask_capped(m, r, pt, own, fn, kept, cap, &cut, out, err_msg);
		if (k < 0)
			return 500;
		kept += (size_t)k;
	}
	return kiln_buf_addf(out, "},\"cut\":%zu}", cut) ? 500 : 200;
}

/* The heap views' parts, appended to out as ,"heap":{...}, or null when
 * the input is no heap trace.  The API's status, or 500. */
static int save_heap(struct kiln_web_model *m, const struct kiln_web_req *r,
		     struct kiln_buf *out, struct kiln_buf *err_msg)
{
	static const char *const own[] = { NULL };
	size_t i, at;
	int status = 200;

	if (kiln_buf_adds(out, ",\"heap\":{"))
		return 500;
	at = out->len;
	for (i = 0; i < sizeof(heap_parts) / sizeof(heap_parts[0]); i++) {
		if (kiln_buf_addf(out, "%s\"%s\":", i ? "," : "",
				  heap_parts[i].key))
			return 500;
		status = ask(m, r, &heap_parts[i], own, out, err_msg);
		if (status == 400 || status == 404) {
			/* No heap trace: no heap views. */
			kiln_buf_reset(err_msg);
			out->len = at - 1;
			return kiln_buf_adds(out, "null") ? 500 : 200;
		}
		if (status != 200)
			return status;
	}
	return kiln_buf_addc(out, '}') ? 500 : 200;
}

/* The data: the selection, the inputs, then each sample type's parts.
 * The API's status (its message in err_msg), or 500. */
static int save_data(struct kiln_web_model *m, const struct kiln_web_req *r,
		     struct kiln_buf *data, struct kiln_buf *err_msg)
{
	static const struct save_part profiles = { "profiles", "/api/profiles", no_kv, 0 };
	const char *ps = r->arg ? r->arg(r->ctx, "p") : NULL;
	size_t pi = ps ? strtoul(ps, NULL, 10) : 0, i, t, nfns, ntypes;
	struct save_left left = { SAVE_SOURCE_MAX, SAVE_DISASM_MAX, SAVE_SC_MAX };
	struct kiln_buf fns = KILN_BUF_INIT;
	int status = 200;

	if (kiln_buf_adds(data, "{\"sel\":{"))
		return 500;
	for (i = 0; sel_keys[i]; i++) {
		const char *v = r->arg ? r->arg(r->ctx, sel_keys[i]) : NULL;

		if (kiln_buf_addf(data, "%s\"%s\":", i ? "," : "", sel_keys[i]) ||
		    kiln_buf_add_json(data, v ? v : "", v ? strlen(v) : 0))
			return 500;
	}
	if (kiln_buf_addf(data, "},\"fns\":%d,\"source_max\":%u,"
			  "\"disasm_max\":%u,\"stackchart_max\":%u,\"profiles\":",
			  SAVE_FNS, SAVE_SOURCE_MAX, SAVE_DISASM_MAX, SAVE_SC_MAX))
		return 500;
	status = ask(m, r, &profiles, no_kv, data, err_msg);
	if (status != 200)
		return status;
	if (kiln_buf_adds(data, ",\"types\":["))
		return 500;
	/* A bad p: the first type's selection says why. */
	ntypes = pi < m->n ? m->in[pi].prof->ntypes : 1;
	for (t = 0; t < ntypes && status == 200; t++) {
		char tstr[24];

		snprintf(tstr, sizeof(tstr), "%zu", t);
		kiln_buf_reset(&fns);
		left.stackchart = SAVE_SC_MAX / ntypes;
		status = hot_fns(m, r, tstr, &fns, &nfns, err_msg);
		if (status == 200 && kiln_buf_addf(data, "%s{\"type\":", t ? "," : ""))
			status = 500;
		if (status == 200 && kiln_buf_add_json(data, call_type_name(m->in[pi].prof, (int)t),
			strlen(call_type_name(m->in[pi].prof, (int)t))))
			status = 500;
		for (i = 0; status == 200 && i < sizeof(save_parts) / sizeof(save_parts[0]); i++)
			status = save_part(m, r, &save_parts[i], tstr, &fns, nfns,
					   &left, data, err_msg);
		if (status == 200 && kiln_buf_addc(data, '}'))
			status = 500;
	}
	kiln_buf_release(&fns);
	if (status == 200 && kiln_buf_addc(data, ']'))
		status = 500;
	if (status == 200)
		status = save_heap(m, r, data, err_msg);
	if (status == 200 && kiln_buf_addc(data, '}'))
		status = 500;
	return status;
}

/* Appends page up to the first `from` to out and moves *page and *n past
 * it, so that the caller appends what replaces it, then the rest.
 * 0, -EINVAL (no `from` in the page) or -ENOMEM. */
static int splice(struct kiln_buf *out, const char **page, size_t *n,
		  const char *from)
{
	const char *at = memmem(*page, *n, from, strlen(from));

	if (!at)
		return -EINVAL;
	if (kiln_buf_add(out, *page, (size_t)(at - *page)))
		return -ENOMEM;
	*n -= (size_t)(at - *page) + strlen(from);
	*page = at + strlen(from);
	return 0;
}

/* The page up to the script tag of asset path, then that file inlined.
 * 0 or -ENOMEM (-ENOENT, -EINVAL: no such asset or tag). */
static int inline_js(struct kiln_buf *out, const char **page, size_t *n,
		     const char *path)
{
	const struct kiln_web_asset *a = kiln_web_asset(path);
	char tag[64];

	if (!a)
		return -ENOENT;
	snprintf(tag, sizeof(tag), "<script src=\"%s\"></script>", path);
	if (splice(out, page, n, tag) || kiln_buf_adds(out, "<script>\n") ||
	    add_script_safe(out, (const char *)a->data, a->len) ||
	    kiln_buf_adds(out, "</script>"))
		return -ENOMEM;
	return 0;
}

int kiln_web_save_html(struct kiln_web_model *m, const struct kiln_web_req *r,
		       struct kiln_buf *out, struct kiln_buf *err_msg)
{
	int status;

	pthread_rwlock_wrlock(&m->rw);	/* one view asked several times */
	status = kiln_web_save_html_locked(m, r, out, err_msg);
	pthread_rwlock_unlock(&m->rw);
	return status;
}

int kiln_web_save_html_locked(struct kiln_web_model *m,
			      const struct kiln_web_req *r,
			      struct kiln_buf *out, struct kiln_buf *err_msg)
{
	/* The page's scripts, in its order, after the data; app.js last. */
	static const char *const scripts[] = { "/calltree.js", "/summary.js",
		"/labels.js", "/offline.js", "/zoom.js", "/stackchart.js",
		"/cgnav.js", "/transforms.js", "/disasm.js", "/heapviews.js", NULL };
	const struct kiln_web_asset *html = kiln_web_asset("/");
	const struct kiln_web_asset *css = kiln_web_asset("/style.css");
	const struct kiln_web_asset *js = kiln_web_asset("/app.js");
	struct kiln_buf data = KILN_BUF_INIT;
	const char *page, *ps = r->arg ? r->arg(r->ctx, "p") : NULL;
	size_t n, i, pi = ps ? strtoul(ps, NULL, 10) : 0;
	const char *name = pi < m->n ? m->in[pi].name : "";
	int status;

	if (!html || !css || !js)
		return 500;
	status = save_data(m, r, &data, err_msg);
	if (status != 200) {
		kiln_buf_release(&data);
		return status;
	}
	/* The page with its title, its style, the data and its scripts
	 * inlined. */
	page = (const char *)html->data;
	n = html->len;
	if (splice(out, &page, &n, "<title>kiln serve</title>") ||
	    kiln_buf_adds(out, "<title>kiln: ") ||
	    kiln_buf_add_xml(out, name, strlen(name)) ||
	    kiln_buf_adds(out, "</title>") ||
	    splice(out, &page, &n, "<link rel=\"stylesheet\" href=\"/style.css\">") ||
	    kiln_buf_adds(out, "<style>\n") ||
	    kiln_buf_add(out, css->data, css->len) ||
	    kiln_buf_adds(out, "</style>\n<script>\nwindow.KILN_OFFLINE = ") ||
	    add_script_safe(out, data.data, data.len) ||
	    kiln_buf_adds(out, ";\n</script>"))
		status = 500;
	for (i = 0; scripts[i] && status == 200; i++)
		if (inline_js(out, &page, &n, scripts[i]))
			status = 500;
	if (status != 200 ||
	    splice(out, &page, &n, "<script src=\"/app.js\"></script>") ||
	    kiln_buf_adds(out, "<script>\n") ||
	    add_script_safe(out, (const char *)js->data, js->len) ||
	    kiln_buf_adds(out, "</script>") ||
	    kiln_buf_add(out, page, n))
		status = 500;
	kiln_buf_release(&data);
	return status;
}
