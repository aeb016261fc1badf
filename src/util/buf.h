/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable byte buffer (util stage): the one way kiln builds strings and
 * output files in memory.  Not for signal handlers or malloc hooks.
 */
#ifndef KILN_UTIL_BUF_H
#define KILN_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct kiln_buf {
	char *data;	/* always NUL-terminated when cap > 0 */
	size_t len;
	size_t cap;
};

#define KILN_BUF_INIT { NULL, 0, 0 }

void kiln_buf_init(struct kiln_buf *b);
/* Frees the contents; the buffer is empty and reusable afterwards. */
void kiln_buf_release(struct kiln_buf *b);
/* Makes room for at least `extra` more bytes.  0 or -ENOMEM. */
int kiln_buf_grow(struct kiln_buf *b, size_t extra);
/*
 * As kiln_buf_grow(), but the capacity never goes past most bytes (the
 * NUL included): room for fewer than extra bytes where most says so, yet
 * always for one.  For input read or inflated up to a limit, so that a
 * buffer that reaches the limit has not doubled past it (an endless input
 * stopped at KILN_MAX_INPUT took twice that before).  0 or -ENOMEM.
 */
int kiln_buf_grow_most(struct kiln_buf *b, size_t extra, size_t most);
int kiln_buf_add(struct kiln_buf *b, const void *data, size_t len);
int kiln_buf_adds(struct kiln_buf *b, const char *s);
int kiln_buf_addc(struct kiln_buf *b, char c);
int kiln_buf_addf(struct kiln_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int kiln_buf_vaddf(struct kiln_buf *b, const char *fmt, va_list ap);
/* Appends s escaped for XML/HTML text and attribute values. */
int kiln_buf_add_xml(struct kiln_buf *b, const char *s, size_t len);
/* Appends s as a JSON string literal, quotes included. */
int kiln_buf_add_json(struct kiln_buf *b, const char *s, size_t len);
/* Hands the memory to the caller (free() it); the buffer is left empty. */
char *kiln_buf_detach(struct kiln_buf *b, size_t *len);

/*
 * Grows the array *p of *alloc elements of `size` bytes (realloc, by
 * doubling from 64) until it holds at least `need`.  0, or -ENOMEM with
 * the array unchanged.
 */
int kiln_array_grow(void **p, size_t *alloc, size_t need, size_t size);

/* The same, doubling from first elements. */
int kiln_array_grow_from(void **p, size_t *alloc, size_t need, size_t size,
			 size_t first);

/*
 * kiln_array_grow_from() for an array arr (any T *) and its size_t
 * capacity cap, the way kiln appends:
 *
 *	if (KILN_GROW(st->v, st->alloc, st->n + 1, 256))
 *		return -ENOMEM;
 *	st->v[st->n++] = x;
 */
#define KILN_GROW(arr, cap, need, first) \
	((size_t)(need) <= (cap) ? 0 : \
	 kiln_array_grow_from((void **)&(arr), &(cap), (need), \
			      sizeof(*(arr)), (first)))

static inline void kiln_buf_reset(struct kiln_buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

#endif
