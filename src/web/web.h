/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln serve (web stage): the profiles a user opened, parsed once and held
 * by the C process, a JSON API that aggregates them on request (flame
 * graph nodes at least a pixel wide, top table, sandwich), and the page
 * compiled into the binary.  The browser never holds the raw profile,
 * only what one view draws.  See docs/kiln-serve.md.
 *
 * Threads: the server answers each connection in its own thread; the
 * model has one lock, held for a request's answer but let go while a
 * heap trace is analysed again for a time range, so that no request
 * waits for another's heavy work.  The inputs are read after the server
 * listens (kiln_web_model_new_pending(), _set_input(), _ready()): until
 * then requests for data wait, /api/status answers at once.  See
 * docs/design.md "kiln serve's threads".
 */
#ifndef KILN_WEB_WEB_H
#define KILN_WEB_WEB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_prof;
struct kiln_buf;
struct kiln_diag;
struct kiln_web_model;
struct kiln_web;

/*
 * A new model over n profiles.  Ownership of every profile moves to the
 * model (also on failure); names and formats are copied.  NULL with errno
 * set on failure.
 */
struct kiln_web_model *kiln_web_model_new(struct kiln_prof **profs,
					  const char *const *names,
					  const char *const *formats, size_t n);
void kiln_web_model_free(struct kiln_web_model *m);
/*
 * A model of n inputs still to be read (names copied): requests for data
 * wait until kiln_web_model_ready().  NULL with errno set.
 */
struct kiln_web_model *kiln_web_model_new_pending(const char *const *names,
						  size_t n);
/* The loader's analyses (a heap trace's) stop at their next frame,
 * -ECANCELED, once *flag is non-zero: a CLI's stop signal. */
void kiln_web_model_stop_on(struct kiln_web_model *m,
			    const volatile sig_atomic_t *flag);
/* What the loader does now, for /api/status ("reading 'x' (1 of 2)"). */
void kiln_web_model_loading(struct kiln_web_model *m, const char *what);
/*
 * Input i has been read: prof (ownership moves to the model, also on
 * failure), its format's name (copied) and, for a heap trace, its bytes
 * in trace (taken: left empty; NULL or empty: none), whose memory over
 * time is analysed here, before the model takes the lock.  0, -EINVAL
 * (the trace cannot be analysed, d filled) or -ENOMEM.
 */
int kiln_web_model_set_input(struct kiln_web_model *m, size_t i,
			     struct kiln_prof *prof, const char *format,
			     struct kiln_buf *trace, struct kiln_diag *d);
/* Loading is over: requests stop waiting; with failed (not NULL) they
 * are answered 503 with that message. */
void kiln_web_model_ready(struct kiln_web_model *m, const char *failed);
/* Stops every range analysis and allocation list under way (they
 * answer 409): before the server stops, which waits for its requests. */
void kiln_web_model_cancel(struct kiln_web_model *m);
/*
 * Sets the diff base (--diff BASE): views may then compare each input
 * with it.  Ownership of base moves to the model (also on failure).
 * 0 or -ENOMEM.
 */
int kiln_web_model_set_base(struct kiln_web_model *m, struct kiln_prof *base,
			    const char *name, const char *format);
/* Views match the diff base by function, not by path (--diff-by
 * function: kiln_tree_add_base_by_function()).  Before serving. */
void kiln_web_model_diff_by_function(struct kiln_web_model *m, bool on);
/*
 * Input i is a kiln heap trace whose bytes are in trace: the model takes
 * them (trace is left empty), to analyse the trace again over a time
 * range, and draws its memory over time.
 */
void kiln_web_model_set_trace(struct kiln_web_model *m, size_t i,
			      struct kiln_buf *trace);
/*
 * The view cache's byte budget (filtered copies of the inputs and what
 * was built from them; least recently used dropped first).  Before
 * serving; WEB_CACHE_BYTES (512 MiB) by default.
 */
void kiln_web_model_set_cache(struct kiln_web_model *m, size_t bytes);
/*
 * Once no request has come for WEB_IDLE_DROP_S seconds: drops every view
 * not in use but the warm ones and hands the memory back to the system
 * (malloc_trim).  kiln serve calls it every second.  True when it did.
 */
bool kiln_web_model_tidy(struct kiln_web_model *m);
/*
 * Aggregates ahead of the first request: the call tree of each input's
 * default sample type (for the first few inputs).  0 or -ENOMEM.
 */
int kiln_web_model_warm(struct kiln_web_model *m);

/* A request to the API: its path and how to look up a query argument
 * (NULL when absent; the value already %-decoded). */
struct kiln_web_req {
	const char *path;
	const char *(*arg)(void *ctx, const char *key);
	void *ctx;
	/* Set by kiln_web_api() for answers that are not JSON (downloads):
	 * the Content-Type and the file name to save as. */
	const char *type;
	char filename[160];
};

/*
 * Answers one API request (path under /api/): appends the body to out and
 * returns the HTTP status: 200 with JSON (or, for a download, the file,
 * with r->type and r->filename set), or 400/404 with a JSON object
 * {"error": "why"}, or 500 when out of memory (out then may be partial).
 */
int kiln_web_api(struct kiln_web_model *m, struct kiln_web_req *r,
		 struct kiln_buf *out);

/*
 * The call graph view draws with graphviz through a function registered
 * here (kiln serve does, by kiln_web_enable_callgraph(); the agent does
 * not, and never loads graphviz): SVG of sample type `type` of p with
 * options o, titled title, each function linked to href + its name.
 * 0, -EINVAL (layout failed) or -ENOMEM.
 */
struct kiln_callgraph_opts;
typedef int (*kiln_web_callgraph_fn)(struct kiln_prof *p, int type,
				     const struct kiln_callgraph_opts *o,
				     const char *title, const char *href,
				     struct kiln_buf *out);
void kiln_web_set_callgraph(kiln_web_callgraph_fn fn);
/* Registers the graphviz drawing (cgsvg.c). */
void kiln_web_enable_callgraph(void);

/*
 * The disassembly view (/api/disasm) decodes with capstone through the
 * functions registered here (kiln serve does, by kiln_web_enable_disasm();
 * the agent does not, and never loads capstone): kiln_disasm_at() and
 * kiln_disasm_release() of symbolize/disasm.h.
 */
struct kiln_disasm;
typedef int (*kiln_web_disasm_fn)(const char *path, const char *build_id,
				  uint64_t offset, struct kiln_disasm *out,
				  struct kiln_diag *d);
void kiln_web_set_disasm(kiln_web_disasm_fn at,
			 void (*release)(struct kiln_disasm *));
/* Registers symbolize/disasm.c (web/disasm.c). */
void kiln_web_enable_disasm(void);

/*
 * The page as one self-contained HTML file with the data of r's selection
 * embedded (save.c; "save as one HTML file", and the agent's browser
 * answer), appended to out.  r's arguments give the selection (p, type,
 * focus, ignore, t0, t1; NULL arg: the defaults).  200, or the status of
 * a request for the data that failed (its error answer appended to
 * err_msg), or 500.
 */
struct kiln_web_req;
int kiln_web_save_html(struct kiln_web_model *m, const struct kiln_web_req *r,
		       struct kiln_buf *out, struct kiln_buf *err_msg);

/* One file of the page, compiled in from src/web/page/ at build time. */
struct kiln_web_asset {
	const char *path;	/* "/app.js"; "/" is index.html */
	const char *type;	/* Content-Type */
	const unsigned char *data;
	size_t len;
};

/* The asset served at path, or NULL. */
const struct kiln_web_asset *kiln_web_asset(const char *path);

/*
 * Where the source view may read files (docs/kiln-serve.md "Source"):
 * the working directory now, the folders of the colon-separated
 * source_path (NULL: none), and the compile folders of the programs the
 * inputs map; paths with a trim_path prefix (colon-separated, NULL: none)
 * are looked for under the roots without it.  0 or -ENOMEM.
 */
int kiln_web_model_set_source(struct kiln_web_model *m, const char *source_path,
			      const char *trim_path);

/*
 * Listens on addr, as pprof's -http takes it: "HOST:PORT", "[V6]:PORT",
 * "PORT", ":PORT" or ":" (loopback), "0.0.0.0:PORT" or "[::]:PORT" (every
 * address); port 0 or none picks a free one.  token (NULL: none) is
 * demanded of every request; a server not on loopback makes one when
 * none is given (in its URL).  Nothing is answered before
 * kiln_web_serve().  On success *out is the server, kiln_web_url() says
 * where it listens.  0, -EINVAL (bad addr or token, d filled), or -errno
 * (d filled).
 */
int kiln_web_listen(const char *addr, const char *token, struct kiln_web **out,
		    struct kiln_diag *d);
/*
 * Serves model m (which must outlive the server) on w: a thread per
 * connection, so a slow answer holds up no other.  0 or -errno (d filled).
 */
int kiln_web_serve(struct kiln_web *w, struct kiln_web_model *m,
		   struct kiln_diag *d);
/* "http://127.0.0.1:8080/", with "?token=..." where one is demanded. */
const char *kiln_web_url(const struct kiln_web *w);
/* Whether w listens on loopback only. */
bool kiln_web_loopback(const struct kiln_web *w);
/*
 * Appends a URL line for every address w answers on (each interface's
 * for 0.0.0.0 and ::; kiln_web_url() otherwise).  0 or -errno.
 */
int kiln_web_urls(const struct kiln_web *w, struct kiln_buf *out);
/* Stops the server and frees it (NULL is fine); the model stays. */
void kiln_web_stop(struct kiln_web *w);

#endif
