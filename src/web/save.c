/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "Save as one HTML file" for kiln serve (web stage): the page with its
 * style and script inlined and the data of the current selection embedded
 * as window.KILN_OFFLINE, so that it opens from file:// with no server
 * and no network.  The data are the API's own answers for the selection,
 * asked here: the call tree down to 1/SAVE_WIDTH of the whole (the page
 * zooms and searches in it), the whole top table, and the call graph's
 * SVG.  app.js answers its requests from them when KILN_OFFLINE is set.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "web/web.h"
#include "web/webint.h"

#define SAVE_WIDTH "20000"	/* pixels of the embedded flame graph */

/* A request made here: fixed arguments first, then the selection's own
 * from the request being answered. */
struct sub {
	const struct kiln_web_req *parent;
	const char *const *kv;		/* key, value, ..., NULL */
};

static const char *sub_arg(void *ctx, const char *key)
{
	static const char *const pass[] = { "p", "type", "focus", "ignore",
					    "hide", "t0", "t1", "labels",
					    "group", NULL };
	const struct sub *s = ctx;
	size_t i;

	for (i = 0; s->kv[i]; i += 2)
		if (!strcmp(s->kv[i], key))
			return s->kv[i + 1];
	for (i = 0; pass[i]; i++)
		if (!strcmp(pass[i], key))
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

/* Asks the API for path with the fixed arguments kv and appends the
 * answer (JSON, or the SVG as a JSON string when svg) to out under
 * "key":.  The API's status, or 500. */
static int embed(struct kiln_web_model *m, const struct kiln_web_req *parent,
		 const char *key, const char *path, const char *const *kv,
		 bool svg, struct kiln_buf *out, struct kiln_buf *err_msg)
{
	struct sub s = { parent, kv };
	struct kiln_web_req r = { path, sub_arg, &s, NULL, "" };
	struct kiln_buf ans = KILN_BUF_INIT;
	int status = kiln_web_api_locked(m, &r, &ans);

	if (status != 200) {
		if (status != 500)
			kiln_buf_add(err_msg, ans.data, ans.len);
		kiln_buf_release(&ans);
		return status;
	}
	if (kiln_buf_addf(out, ",\"%s\":", key) ||
	    (svg ? kiln_buf_add_json(out, ans.data, ans.len)
		 : kiln_buf_add(out, ans.data, ans.len))) {
		kiln_buf_release(&ans);
		return 500;
	}
	kiln_buf_release(&ans);
	return 200;
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

/* The page up to the script tag of asset path (a view's own file, whose
 * tab the saved page hides), then that file inlined.  0 or -ENOMEM
 * (-ENOENT, -EINVAL: no such asset or tag). */
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

	pthread_mutex_lock(&m->lock);
	status = kiln_web_save_html_locked(m, r, out, err_msg);
	pthread_mutex_unlock(&m->lock);
	return status;
}

int kiln_web_save_html_locked(struct kiln_web_model *m,
			      const struct kiln_web_req *r,
			      struct kiln_buf *out, struct kiln_buf *err_msg)
{
	static const char *const flame_kv[] = { "width", SAVE_WIDTH, "min", "1",
		"root", "", "search", "", "reverse", "0", "diff", "0", NULL };
	static const char *const top_kv[] = { "n", "0", "offset", "0",
		"sort", "", "order", "", "filter", "", "lines", "0",
		"diff", "0", NULL };
	static const char *const cg_kv[] = { "nodes", "", "lines", "0",
		"diff", "0", "node_fraction", "", "edge_fraction", "", NULL };
	static const char *const none[] = { NULL };
	static const char *const sel_keys[] = { "p", "type", "focus", "ignore",
						"hide", "t0", "t1", "labels",
						"group", NULL };
	size_t i;
	const struct kiln_web_asset *html = kiln_web_asset("/");
	const struct kiln_web_asset *css = kiln_web_asset("/style.css");
	const struct kiln_web_asset *js = kiln_web_asset("/app.js");
	struct kiln_buf data = KILN_BUF_INIT;
	const char *page;
	size_t n;
	int status;

	if (!html || !css || !js)
		return 500;
	/* The data: the selection, and the API's answers for it. */
	if (kiln_buf_adds(&data, "{\"sel\":{"))
		return 500;
	for (i = 0; sel_keys[i]; i++) {
		const char *v = r->arg ? r->arg(r->ctx, sel_keys[i]) : NULL;

		if (kiln_buf_addf(&data, "%s\"%s\":", i ? "," : "", sel_keys[i]) ||
		    kiln_buf_add_json(&data, v ? v : "", v ? strlen(v) : 0)) {
			kiln_buf_release(&data);
			return 500;
		}
	}
	if (kiln_buf_addc(&data, '}')) {
		kiln_buf_release(&data);
		return 500;
	}
	status = embed(m, r, "profiles", "/api/profiles", none, false, &data, err_msg);
	if (status == 200)
		status = embed(m, r, "flame", "/api/flame", flame_kv, false, &data, err_msg);
	if (status == 200)
		status = embed(m, r, "top", "/api/top", top_kv, false, &data, err_msg);
	if (status == 200) {
		/* No graphviz here (the agent): no call graph in the page. */
		status = embed(m, r, "callgraph", "/api/callgraph", cg_kv, true,
			       &data, err_msg);
		if (status == 404) {
			kiln_buf_reset(err_msg);
			status = kiln_buf_adds(&data, ",\"callgraph\":null") ? 500 : 200;
		}
	}
	if (status == 200 && kiln_buf_addc(&data, '}'))
		status = 500;
	if (status != 200) {
		kiln_buf_release(&data);
		return status;
	}
	/* The page with its title, its style and script inlined and the
	 * data first. */
	page = (const char *)html->data;
	n = html->len;
	{
		const char *ps = r->arg ? r->arg(r->ctx, "p") : NULL;
		size_t pi = ps ? strtoul(ps, NULL, 10) : 0;
		const char *name = pi < m->n ? m->in[pi].name : "";

		if (splice(out, &page, &n, "<title>kiln serve</title>") ||
		    kiln_buf_adds(out, "<title>kiln: ") ||
		    kiln_buf_add_xml(out, name, strlen(name)) ||
		    kiln_buf_adds(out, "</title>"))
			status = 500;
	}
	if (status != 200 ||
	    splice(out, &page, &n, "<link rel=\"stylesheet\" href=\"/style.css\">") ||
	    kiln_buf_adds(out, "<style>\n") ||
	    kiln_buf_add(out, css->data, css->len) ||
	    kiln_buf_adds(out, "</style>") ||
	    inline_js(out, &page, &n, "/calltree.js") ||
	    inline_js(out, &page, &n, "/summary.js") ||
	    inline_js(out, &page, &n, "/labels.js") ||
	    inline_js(out, &page, &n, "/heapviews.js") ||
	    splice(out, &page, &n, "<script src=\"/app.js\"></script>") ||
	    kiln_buf_adds(out, "<script>\nwindow.KILN_OFFLINE = ") ||
	    add_script_safe(out, data.data, data.len) ||
	    kiln_buf_adds(out, ";\n</script>\n<script>\n") ||
	    add_script_safe(out, (const char *)js->data, js->len) ||
	    kiln_buf_adds(out, "</script>") ||
	    kiln_buf_add(out, page, n))
		status = 500;
	kiln_buf_release(&data);
	return status;
}
