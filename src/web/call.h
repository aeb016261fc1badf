/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request plumbing of kiln serve's API (web stage, internal to
 * src/web/api*.c): one struct call per request, the arguments, the
 * selection every view works on, and JSON output.  Output errors are
 * sticky in c->err (-ENOMEM); an answer made by call_fail() is final.
 */
#ifndef KILN_WEB_CALL_H
#define KILN_WEB_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "util/diag.h"
#include "web/web.h"
#include "web/webint.h"

#define WEB_WIDTH_MAX 100000	/* pixels a client may ask to fill */
#define WEB_TOP_DEFAULT 100	/* rows of /api/top without n */

/* Everything one request needs; err is sticky (-ENOMEM from the buffer). */
struct call {
	struct kiln_web_model *m;
	struct kiln_web_req *r;
	struct kiln_buf *out;
	struct kiln_diag d;
	int status;
	int err;
	/* The views call_selection() took for it, let go by
	 * call_release(). */
	struct web_view *held[4];
	unsigned nheld;
};

/* Lets go the views the call took (call_selection()); once answered. */
void call_release(struct call *c);

/* Appends formatted text, or a JSON string literal, to the answer. */
void call_add(struct call *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void call_add_str(struct call *c, const char *s);
/* A value as kiln top writes it ("1.50s", "12MB"), as a JSON string. */
void call_add_value_str(struct call *c, int64_t v, const char *unit);
/* The answer {"error": "..."} with status; returns status. */
int call_fail(struct call *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A query argument (NULL when absent). */
const char *call_arg(struct call *c, const char *key);
/* A whole number in [lo, hi], a 0/1, a fraction in [0, 1]; def when
 * absent.  -1 when bad (the 400 answer is made). */
int call_num_arg(struct call *c, const char *key, long lo, long hi,
		 long def, long *out);
int call_bool_arg(struct call *c, const char *key, bool *out);
int call_frac_arg(struct call *c, const char *key, double def, double *out);
/* The selection (p, type, focus, ignore and, unless !ranged, t0, t1) as
 * a view of the model, held until call_release(); page and seq (a
 * whole number) name the asking page's request: a newer one of that
 * page cancels its computation (409).  -1 when the request is bad or
 * cancelled (answer made). */
int call_selection_of(struct call *c, bool ranged, struct web_view **v);
/* The same; weighed_ok: the caller reads the view only through its tree,
 * call tree levels and top tables, so a view of weights will do
 * (web_sel.weighed_ok). */
int call_selection_as(struct call *c, bool ranged, bool weighed_ok,
		      struct web_view **v);
int call_selection(struct call *c, struct web_view **v);
/* call_selection() for the flame graph, sandwich, top table and call
 * tree, which read the view through its trees and tables only. */
int call_selection_weighed(struct call *c, struct web_view **v);
const char *call_type_name(const struct kiln_prof *p, int type);
const char *call_unit_name(const struct kiln_prof *p, int type);

/* The answer's "names" table: string ids, each once, in first-use order;
 * web_name_ref() gives s's index in it (adding it), web_names_write()
 * appends "names":[...] (zero-initialize, free(idx) after). */
struct web_names {
	uint32_t *idx;		/* string id -> index + 1 */
	size_t nidx;
	uint32_t n;
};
uint32_t web_name_ref(struct call *c, struct web_names *nm,
		      const struct kiln_prof *p, uint32_t s);
void web_names_write(struct call *c, struct web_names *nm,
		     const struct kiln_prof *p);
/* Walks path (frame names from the root's child down, separated by ';',
 * with '\;' and '\\' for those characters inside a name; NULL or "": the
 * root, 0) a name at a time: step(ctx, node, name) gives the child of
 * node named name, 0 when there is none (then the 404 answer is made, or,
 * with c->err set, nothing).  The last node, or UINT32_MAX (404, or out
 * of memory: c->err). */
uint32_t web_path_walk(struct call *c, const char *path,
		       uint32_t (*step)(void *ctx, uint32_t node, const char *name),
		       void *ctx);
/* The node of t at path: frame names from the root's child down,
 * separated by ';', with '\;' and '\\' for those characters inside a
 * name; NULL or "": the root.  UINT32_MAX when there is no such node (the
 * 404 answer is made) or out of memory (c->err). */
struct kiln_tree;
uint32_t web_tree_walk(struct call *c, const struct kiln_tree *t,
		       const char *path);
/* The string id of the file a node's code was mapped from, or 0. */
struct kiln_tree_node;
uint32_t web_node_module(const struct kiln_prof *p,
			 const struct kiln_tree_node *n);

/* A kept answer: call_memo_get() appends view v's answer `which` made
 * with argument arg and returns true when there is one; call_memo_put()
 * keeps what the answer appended to c->out from offset `from` on. */
bool call_memo_get(struct call *c, struct web_view *v, int which, long arg);
void call_memo_put(struct call *c, struct web_view *v, int which, long arg,
		   size_t from);

/* The endpoints: each answers one path under /api/ and returns the
 * status (docs/kiln-serve.md). */
int web_api_profiles(struct call *c);
int web_api_flame(struct call *c);
int web_api_sandwich(struct call *c);
int web_api_top(struct call *c);
int web_api_source(struct call *c);
int web_api_callgraph(struct call *c);
int web_api_timeline(struct call *c);
int web_api_download(struct call *c);
int web_api_calltree(struct call *c);
int web_api_summary(struct call *c);
int web_api_labels(struct call *c);
int web_api_stackchart(struct call *c);
/* The pids and tids (ids[i][0], ids[i][1]) of the selection's `max`
 * busiest threads with timed samples, *n of them (0: no sample has a
 * time), for the saved page (save.c).  The status, as web_api_*. */
int web_stackchart_threads(struct call *c, int64_t (*ids)[2], size_t max,
			   size_t *n);
int web_api_disasm(struct call *c);
int web_api_heap_sites(struct call *c);
int web_api_heap_allocs(struct call *c);

#endif
