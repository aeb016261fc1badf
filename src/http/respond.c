/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Responses and query parameters of the HTTP endpoints (httpint.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "http/httpint.h"

/* ---- responses ---- */

struct MHD_Response *khttp_response_take(struct kiln_buf *b, const char *ctype)
{
	struct MHD_Response *r;
	size_t len = b->len;
	char *data = kiln_buf_detach(b, NULL);

	if (!data && len)
		return NULL;
	r = MHD_create_response_from_buffer(len, data ? data : (char *)"",
					    data ? MHD_RESPMEM_MUST_FREE :
					    MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(data);
		return NULL;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	return r;
}

/* A plain-text answer (errors and small pages): "message\n". */
struct MHD_Response *khttp_text_response(const char *fmt, ...)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct MHD_Response *r;
	va_list ap;

	va_start(ap, fmt);
	kiln_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	kiln_buf_addc(&b, '\n');
	r = khttp_response_take(&b, "text/plain; charset=utf-8");
	kiln_buf_release(&b);
	return r;
}

enum MHD_Result khttp_queue(struct MHD_Connection *c, unsigned code,
			     struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;	/* out of memory: MHD closes the connection */
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * Copies a client-supplied value for an error message: at most 64 bytes,
 * anything but printable ASCII shown as '?'.
 */
const char *khttp_quote(const char *v, char *out, size_t n)
{
	size_t i;

	for (i = 0; v[i] && i + 1 < n && i < 64; i++)
		out[i] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
	out[i] = '\0';
	return out;
}

/* ---- parameters ---- */

const char *khttp_arg(struct MHD_Connection *c, const char *key)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
}

/*
 * Parses a decimal integer parameter in [lo, hi]; def when absent.
 * 0, or -EINVAL with *resp set to the 400 answer naming the parameter.
 */
int khttp_int_arg(struct MHD_Connection *c, const char *key, long lo, long hi,
		   long def, const char *what, long *out, struct MHD_Response **resp)
{
	const char *v = khttp_arg(c, key);
	char q[80];
	char *end;
	long x;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = strtol(v, &end, 10);
	if (!*v || *end || errno || x < lo || x > hi || !isdigit((unsigned char)*v)) {
		*resp = khttp_text_response("bad %s '%s': want %s from %ld to %ld",
					    key, khttp_quote(v, q, sizeof(q)), what, lo, hi);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

