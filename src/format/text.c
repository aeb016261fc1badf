/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every text reader shares (format stage): text as UTF-8 whatever
 * its byte order mark said, the refusal of binary data, and the count of
 * malformed lines skipped among good ones.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/format.h"
#include "util/buf.h"
#include "util/diag.h"

int kiln_text_check(const char *data, size_t len, struct kiln_diag *d)
{
	const char *nul = memchr(data, '\0', len);
	size_t line = 1;
	const char *q;

	if (!nul)
		return 0;
	for (q = data; (q = memchr(q, '\n', (size_t)(nul - q))); q++)
		line++;
	return kiln_diag(d, "line %zu: a NUL byte (byte %zu) in text: the file "
			 "is binary or corrupt", line, (size_t)(nul - data));
}

/* Appends code point c as UTF-8 (c < 0x110000). */
static int put_utf8(struct kiln_buf *b, uint32_t c)
{
	char u[4];
	size_t n;

	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6);
		u[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12);
		u[1] = (char)(0x80 | (c >> 6 & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | c >> 18);
		u[1] = (char)(0x80 | (c >> 12 & 0x3f));
		u[2] = (char)(0x80 | (c >> 6 & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	return kiln_buf_add(b, u, n);
}

int kiln_text_utf8(const char **data, size_t *len, struct kiln_buf *conv)
{
	const unsigned char *u = (const unsigned char *)*data;
	size_t n = *len, i;
	bool be;
	int err;

	if (n >= 3 && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf) {
		*data += 3;
		*len -= 3;
		return 0;
	}
	if (n < 2 || !((u[0] == 0xff && u[1] == 0xfe) ||
		       (u[0] == 0xfe && u[1] == 0xff)))
		return 0;
	/* Windows tools (PowerShell's '>', Notepad's "Unicode") write
	 * UTF-16 with a byte order mark: FF FE little-endian, FE FF big. */
	be = u[0] == 0xfe;
	/* At most 3 bytes of UTF-8 per 2 of UTF-16 (4 per surrogate pair). */
	err = kiln_buf_grow(conv, n / 2 * 3 + 4);
	if (err)
		return err;
	for (i = 2; i + 1 < n; i += 2) {
		uint32_t c = be ? (uint32_t)u[i] << 8 | u[i + 1] :
				  (uint32_t)u[i + 1] << 8 | u[i];

		if (c >= 0xd800 && c < 0xdc00 && i + 3 < n) {
			uint32_t lo = be ? (uint32_t)u[i + 2] << 8 | u[i + 3] :
					   (uint32_t)u[i + 3] << 8 | u[i + 2];

			if (lo >= 0xdc00 && lo < 0xe000) {
				c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
				i += 2;
			}
		}
		/* An unpaired surrogate is no character: U+FFFD, as
		 * decoders that do not stop do. */
		if (c >= 0xd800 && c < 0xe000)
			c = 0xfffd;
		err = put_utf8(conv, c);
		if (err)
			return err;
	}
	/* An odd last byte: half a character, cut off. */
	if (i < n) {
		err = put_utf8(conv, 0xfffd);
		if (err)
			return err;
	}
	*data = conv->data ? conv->data : "";
	*len = conv->len;
	return 0;
}

void kiln_text_skip(struct kiln_text_skips *s, size_t lineno,
		    const struct kiln_diag *why)
{
	if (!s->n++) {
		s->first = lineno;
		memcpy(s->why.msg, why->msg, sizeof(s->why.msg));
	}
}

void kiln_text_skips_shift(struct kiln_text_skips *s, size_t by)
{
	const char *colon = strstr(s->why.msg, ": ");
	char why[sizeof(s->why.msg)];

	if (!s->n || !by)
		return;
	s->first += by;
	if (strncmp(s->why.msg, "line ", 5) || !colon)
		return;
	snprintf(why, sizeof(why), "%s", colon + 2);
	kiln_diag(&s->why, "line %zu: %s", s->first, why);
}

int kiln_text_skips_end(struct kiln_text_skips *s, size_t good,
			struct kiln_diag *d)
{
	const char *why = s->why.msg;
	const char *colon;

	if (!s->n)
		return 0;
	/* As many bad lines as good ones or more: not a damaged file of the
	 * format but another thing, refused with what the first bad line
	 * showed. */
	if (s->n >= good) {
		if (d)
			memcpy(d->msg, s->why.msg, sizeof(d->msg));
		return -EINVAL;
	}
	/* "line 17: why" -> "why": the line is said once. */
	colon = strstr(why, ": ");
	if (!strncmp(why, "line ", 5) && colon)
		why = colon + 2;
	kiln_diag_warn(d, "skipped %zu malformed line%s, first at line %zu: %s",
		       s->n, s->n == 1 ? "" : "s", s->first, why);
	return 0;
}
