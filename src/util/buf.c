/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer and arrays (util stage). */
#include "util/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void kiln_buf_init(struct kiln_buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void kiln_buf_release(struct kiln_buf *b)
{
	free(b->data);
	kiln_buf_init(b);
}

/* Room for extra more bytes and the NUL, the capacity doubled up to it
 * but never past most (where most still holds it). */
static int grow(struct kiln_buf *b, size_t extra, size_t most)
{
	size_t need = b->len + extra + 1;
	size_t cap;
	char *p;

	if (need <= b->cap)
		return 0;
	if (need < b->len)
		return -ENOMEM;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	if (cap > most && most >= need)
		cap = most;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int kiln_buf_grow(struct kiln_buf *b, size_t extra)
{
	return grow(b, extra, SIZE_MAX);
}

int kiln_buf_grow_most(struct kiln_buf *b, size_t extra, size_t most)
{
	if (most < b->len + 2)
		most = b->len + 2;
	if (extra > most - b->len - 1)
		extra = most - b->len - 1;
	return grow(b, extra, most);
}

int kiln_buf_add(struct kiln_buf *b, const void *data, size_t len)
{
	int err = kiln_buf_grow(b, len);

	if (err)
		return err;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int kiln_buf_adds(struct kiln_buf *b, const char *s)
{
	return kiln_buf_add(b, s, strlen(s));
}

int kiln_buf_addc(struct kiln_buf *b, char c)
{
	if (b->len + 2 > b->cap) {
		int err = kiln_buf_grow(b, 1);

		if (err)
			return err;
	}
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
	return 0;
}

int kiln_buf_vaddf(struct kiln_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, err;

	va_copy(cp, ap);
	n = vsnprintf(b->data ? b->data + b->len : NULL,
		      b->cap ? b->cap - b->len : 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	if (b->len + (size_t)n + 1 > b->cap) {
		err = kiln_buf_grow(b, (size_t)n);
		if (err)
			return err;
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	}
	b->len += (size_t)n;
	return 0;
}

int kiln_buf_addf(struct kiln_buf *b, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = kiln_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return err;
}

int kiln_buf_add_xml(struct kiln_buf *b, const char *s, size_t len)
{
	size_t i, start = 0;
	int err = 0;

	for (i = 0; i < len && !err; i++) {
		const char *rep;

		switch (s[i]) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default:
			/* Control bytes are not allowed in XML 1.0. */
			if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
				rep = "?";
			else
				continue;
		}
		err = kiln_buf_add(b, s + start, i - start);
		if (!err)
			err = kiln_buf_adds(b, rep);
		start = i + 1;
	}
	if (!err)
		err = kiln_buf_add(b, s + start, len - start);
	return err;
}

int kiln_buf_add_json(struct kiln_buf *b, const char *s, size_t len)
{
	size_t i, start = 0;
	int err = kiln_buf_addc(b, '"');

	for (i = 0; i < len && !err; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		err = kiln_buf_add(b, s + start, i - start);
		if (err)
			break;
		if (c == '"' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			err = kiln_buf_add(b, tmp, 2);
		} else {
			snprintf(tmp, sizeof(tmp), "\\u%04x", c);
			err = kiln_buf_adds(b, tmp);
		}
		start = i + 1;
	}
	if (!err)
		err = kiln_buf_add(b, s + start, len - start);
	if (!err)
		err = kiln_buf_addc(b, '"');
	return err;
}

char *kiln_buf_detach(struct kiln_buf *b, size_t *len)
{
	char *p = b->data;

	if (len)
		*len = b->len;
	if (!p)
		p = calloc(1, 1);
	kiln_buf_init(b);
	return p;
}

int kiln_array_grow(void **p, size_t *alloc, size_t need, size_t size)
{
	return kiln_array_grow_from(p, alloc, need, size, 64);
}

int kiln_array_grow_from(void **p, size_t *alloc, size_t need, size_t size,
			 size_t first)
{
	size_t na;
	void *q;

	if (need <= *alloc)
		return 0;
	na = *alloc ? *alloc : (first ? first : 1);
	while (na < need) {
		if (na > SIZE_MAX / 2)
			return -ENOMEM;
		na *= 2;
	}
	if (size && na > SIZE_MAX / size)
		return -ENOMEM;
	q = realloc(*p, na * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*alloc = na;
	return 0;
}
