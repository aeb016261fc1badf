/* SPDX-License-Identifier: Apache-2.0 */
/*
 * URLs as inputs (cli stage): `kiln top http://HOST:PORT/debug/pprof/profile
 * ?seconds=5` fetches the body with libcurl, as `go tool pprof URL` does,
 * and hands it to the same detection and readers as a file's bytes.
 * libcurl is linked into the kiln binary only: libkiln.so runs inside
 * profiled programs and has no business with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "util/limit.h"
#include "util/lazylib.h"

/* libcurl, loaded by the first URL fetched (util/lazylib.h). */
#define CURL_FNS(X) \
	X(url_get, curl_url_get) X(free, curl_free) \
	X(easy_getinfo, curl_easy_getinfo) \
	X(easy_strerror, curl_easy_strerror) \
	X(global_init, curl_global_init) X(url, curl_url) \
	X(url_set, curl_url_set) X(url_strerror, curl_url_strerror) \
	X(easy_init, curl_easy_init) X(slist_append, curl_slist_append) \
	X(easy_setopt, curl_easy_setopt) \
	X(easy_perform, curl_easy_perform) \
	X(easy_cleanup, curl_easy_cleanup) \
	X(slist_free_all, curl_slist_free_all) \
	X(url_cleanup, curl_url_cleanup) \
	X(global_cleanup, curl_global_cleanup)
KILN_LAZYLIB(curl, KILN_SONAME_CURL, KILN_PKG_CURL, CURL_FNS);
#define CU (curl_fns.f)

/*
 * No overall timeout but for a profile over a time: the server answers
 * only once it has collected for ?seconds=N, so N plus a margin (Go's
 * pprof allows half as much again) is allowed.  A heap snapshot of a big
 * program can take long too, and Ctrl-C stops a fetch that hangs; only
 * the connection has a fixed bound.
 */
#define CONNECT_TIMEOUT_S 15L
#define MARGIN_S 30L

struct fetch {
	const char *url;
	struct kiln_buf *body;
	size_t limit;
	long seconds;		/* ?seconds=N of the URL, 0 without */
	bool too_big, nomem;
	bool progress, shown;	/* a progress line is wanted / was printed */
	double t0, last;
	char status[128];	/* the last status line: "404 Not Found" */
};

bool kiln_cli_is_url(const char *input)
{
	return !strncmp(input, "http://", 7) || !strncmp(input, "https://", 8);
}

/* Received bytes go to the body, up to the input limit: past it the
 * transfer stops (returning less than was given makes curl fail). */
static size_t on_data(char *ptr, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;

	n *= size;
	if (n > f->limit - f->body->len) {
		f->too_big = true;
		return 0;
	}
	if (kiln_buf_add(f->body, ptr, n)) {
		f->nomem = true;
		return 0;
	}
	return n;
}

/* Keeps the status line of the last answer (after redirects). */
static size_t on_header(char *ptr, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;
	size_t len = size * n, i;
	const char *sp;

	if (len > 5 && !memcmp(ptr, "HTTP/", 5)) {
		sp = memchr(ptr, ' ', len);
		if (sp) {
			len -= (size_t)(sp + 1 - ptr);
			ptr = (char *)sp + 1;
			while (len && (ptr[len - 1] == '\r' || ptr[len - 1] == '\n' ||
				       ptr[len - 1] == ' '))
				len--;
			if (len >= sizeof(f->status))
				len = sizeof(f->status) - 1;
			for (i = 0; i < len; i++)
				f->status[i] = (ptr[i] >= 32 && ptr[i] < 127) ? ptr[i] : '?';
			f->status[len] = '\0';
		}
	}
	return size * n;
}

/* Once a second, while the server collects: how long, how much came. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct fetch *f = arg;
	double now = kiln_cli_now();
	char size[32];

	(void)dltotal, (void)ultotal, (void)ulnow;
	if (!f->progress || now - f->last < 1)
		return 0;
	f->last = now;
	f->shown = true;
	if (f->seconds > 0 && !dlnow)
		fprintf(stderr, "\rkiln: fetching '%s': %.0f s of %ld s (the server "
			"is profiling)   ", f->url, now - f->t0, f->seconds);
	else
		fprintf(stderr, "\rkiln: fetching '%s': %.0f s, %s received   ",
			f->url, now - f->t0,
			kiln_size_str((size_t)dlnow, size, sizeof(size)));
	return 0;
}

/* ?seconds=N in the query, 0 when absent or not a number. */
static long query_seconds(CURLU *u)
{
	char *q = NULL, *s, *tok, *save = NULL;
	long v = 0;

	if (CU.url_get(u, CURLUPART_QUERY, &q, 0) || !q)
		return 0;
	for (s = q; (tok = strtok_r(s, "&", &save)); s = NULL) {
		if (!strncmp(tok, "seconds=", 8)) {
			char *end;
			long n = strtol(tok + 8, &end, 10);

			v = !*end && n > 0 ? n : 0;
		}
	}
	CU.free(q);
	return v;
}

/* The first line of an error body (kiln's servers answer errors as text),
 * printable characters only, into out; "" for a binary body. */
static void first_line(const struct kiln_buf *b, char *out, size_t n)
{
	size_t i, k = 0;

	out[0] = '\0';
	for (i = 0; i < b->len && k + 1 < n; i++) {
		unsigned char ch = (unsigned char)b->data[i];

		if (ch == '\n' || ch == '\r')
			break;
		if (ch < 32 && ch != '\t') {
			out[0] = '\0';
			return;
		}
		out[k++] = (char)ch;
	}
	out[k] = '\0';
}

/* Prints why the transfer failed; returns the exit status. */
static int transfer_error(CURL *h, CURLcode rc, const struct fetch *f,
			  const char *errbuf)
{
	char lim[32];
	long oserr = 0;
	double connect_s = 0;

	if (f->nomem) {
		kiln_cli_error("'%s': out of memory", f->url);
		return KILN_EXIT_FAIL;
	}
	if (f->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		kiln_cli_error("'%s': more than %s of input, the limit for what "
			       "is not a regular file (set KILN_MAX_INPUT to raise it)",
			       f->url, kiln_size_str(f->limit, lim, sizeof(lim)));
		return KILN_EXIT_USAGE;
	}
	CU.easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		kiln_cli_error("cannot fetch '%s': %s (is the server running and "
			       "listening there, e.g. with KILN_HTTP=ADDR?)", f->url,
			       oserr ? strerror((int)oserr) : errbuf);
		break;
	case CURLE_OPERATION_TIMEDOUT:
		CU.easy_getinfo(h, CURLINFO_CONNECT_TIME, &connect_s);
		if (connect_s <= 0)
			kiln_cli_error("cannot fetch '%s': no connection within "
				       "%ld s", f->url, CONNECT_TIMEOUT_S);
		else
			kiln_cli_error("cannot fetch '%s': no complete answer "
				       "within %ld s (the profile asked for %ld s)",
				       f->url, f->seconds + f->seconds / 2 + MARGIN_S,
				       f->seconds);
		break;
	default:
		kiln_cli_error("cannot fetch '%s': %s", f->url,
			       errbuf[0] ? errbuf : CU.easy_strerror(rc));
		break;
	}
	return KILN_EXIT_USAGE;
}

/* Prints an answer other than 2xx with the body's first line. */
static int status_error(long code, const struct fetch *f)
{
	char line[256];
	const char *hint = "";

	first_line(f->body, line, sizeof(line));
	if (code == 401) {
		const char *t = getenv("KILN_HTTP_TOKEN");

		hint = t && *t ? " (KILN_HTTP_TOKEN is not the server's token)"
			       : " (the server asks for a token: set "
				 "KILN_HTTP_TOKEN to it)";
	}
	if (f->status[0])
		kiln_cli_error("cannot fetch '%s': HTTP %s%s%s%s", f->url, f->status,
			       line[0] ? ": " : "", line, hint);
	else
		kiln_cli_error("cannot fetch '%s': HTTP %ld%s%s%s", f->url, code,
			       line[0] ? ": " : "", line, hint);
	return KILN_EXIT_USAGE;
}

int kiln_cli_fetch(const char *url, struct kiln_buf *body)
{
	struct fetch f = { .url = url, .body = body };
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	const char *token = getenv("KILN_HTTP_TOKEN");
	CURLU *u = NULL;
	CURLUcode uc;
	CURLcode rc;
	CURL *h = NULL;
	long code = 0;
	int ret = KILN_EXIT_FAIL;
	struct kiln_diag d = { "" };

	if (kiln_lazylib_open(&curl, &d)) {
		kiln_cli_error("cannot fetch '%s': %s", url, d.msg);
		return KILN_EXIT_FAIL;
	}
	if (CU.global_init(CURL_GLOBAL_DEFAULT)) {
		kiln_cli_error("cannot fetch '%s': libcurl did not start", url);
		return KILN_EXIT_FAIL;
	}
	/* Checked before any connection: a typo is a usage error. */
	u = CU.url();
	if (!u)
		goto out_nomem;
	uc = CU.url_set(u, CURLUPART_URL, url, 0);
	if (uc) {
		kiln_cli_error("'%s': not a valid URL: %s", url,
			       CU.url_strerror(uc));
		ret = KILN_EXIT_USAGE;
		goto out_cleanup;
	}
	f.seconds = query_seconds(u);
	f.limit = kiln_input_limit();
	f.progress = !kiln_cli_quiet && isatty(STDERR_FILENO);
	f.t0 = f.last = kiln_cli_now();
	h = CU.easy_init();
	if (!h)
		goto out_nomem;
	if (token && *token) {
		struct kiln_buf auth = KILN_BUF_INIT;
		struct curl_slist *l;

		kiln_buf_addf(&auth, "Authorization: Bearer %s", token);
		l = auth.data ? CU.slist_append(NULL, auth.data) : NULL;
		kiln_buf_release(&auth);
		if (!l)
			goto out_nomem;
		headers = l;
	}
	CU.easy_setopt(h, CURLOPT_CURLU, u);
	CU.easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	CU.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	CU.easy_setopt(h, CURLOPT_USERAGENT, "kiln");
	CU.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	/* Redirects as Go's client follows them, but only to HTTP(S); curl
	 * keeps a set Authorization header off other hosts. */
	CU.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	CU.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	CU.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	CU.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	CU.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	if (f.seconds > 0)
		CU.easy_setopt(h, CURLOPT_TIMEOUT,
				 f.seconds + f.seconds / 2 + MARGIN_S);
	/* A told length past the limit fails at once, before any byte. */
	CU.easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f.limit);
	CU.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	CU.easy_setopt(h, CURLOPT_WRITEDATA, &f);
	CU.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	CU.easy_setopt(h, CURLOPT_HEADERDATA, &f);
	CU.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	CU.easy_setopt(h, CURLOPT_XFERINFODATA, &f);
	CU.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	rc = CU.easy_perform(h);
	if (f.shown)
		fputs("\r\033[K", stderr);
	if (rc) {
		ret = transfer_error(h, rc, &f, errbuf);
		goto out_cleanup;
	}
	CU.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299) {
		ret = status_error(code, &f);
		goto out_cleanup;
	}
	ret = KILN_EXIT_OK;
	goto out_cleanup;
out_nomem:
	kiln_cli_error("'%s': out of memory", url);
out_cleanup:
	CU.easy_cleanup(h);
	CU.slist_free_all(headers);
	CU.url_cleanup(u);
	CU.global_cleanup();
	return ret;
}
