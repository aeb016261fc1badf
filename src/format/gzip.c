/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gzip and zlib streams (format stage): inflating compressed input under
 * the input limit, deflating pprof output.  A file of its own so that what
 * links only these (libkiln.so writes gzip-compressed pprof) does not pull
 * in every reader and the libraries they need.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "format/format.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/limit.h"

bool kiln_is_gzip(const char *data, size_t len)
{
	return len >= 2 && (unsigned char)data[0] == 0x1f &&
	       (unsigned char)data[1] == 0x8b;
}

/* zlib counts in uInt: larger buffers go through in pieces. */
static uInt piece(size_t n)
{
	return (uInt)(n > UINT_MAX ? UINT_MAX : n);
}

int kiln_gunzip(const char *data, size_t len, struct kiln_buf *out,
		struct kiln_diag *d)
{
	const unsigned char *in = (const unsigned char *)data;
	size_t limit = kiln_input_limit(), at, start = out->len;
	char lim[32];
	z_stream z;
	int rc, err = 0;

	memset(&z, 0, sizeof(z));
	/* 32 + 15: accept gzip and zlib headers, largest window. */
	if (inflateInit2(&z, 32 + 15) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)in;
	z.avail_in = piece(len);
	for (;;) {
		size_t room;

		/* Room for twice the input at first, then doubling. */
		/* Past the limit by a piece at most: the
		 * buffer stops there instead of doubling beyond it. */
		err = kiln_buf_grow_most(out, out->len - start < len ?
					 len * 2 + 65536 : out->len - start,
					 start + limit + 65536 + 2);
		if (err)
			goto out_end;
		room = out->cap - out->len - 1;
		z.next_out = (unsigned char *)out->data + out->len;
		z.avail_out = piece(room);
		rc = inflate(&z, Z_NO_FLUSH);
		out->len = (size_t)((char *)z.next_out - out->data);
		out->data[out->len] = '\0';
		at = (size_t)(z.next_in - in);
		/* The input past the first 4 GiB, a piece at a time. */
		if (z.avail_in == 0 && at < len)
			z.avail_in = piece(len - at);
		if (out->len - start > limit) {
			err = kiln_diag(d, "byte %zu: the data inflates to more than "
					"%s, the limit for decompressed input (set "
					"KILN_MAX_INPUT to raise it)", at,
					kiln_size_str(limit, lim, sizeof(lim)));
			goto out_end;
		}
		if (rc == Z_STREAM_END) {
			/* Concatenated gzip members are one stream to gzip(1). */
			if (at < len && kiln_is_gzip(data + at, len - at)) {
				inflateReset(&z);
				z.avail_in = piece(len - at);
				continue;
			}
			break;
		}
		if (rc == Z_BUF_ERROR && at == len) {
			err = kiln_diag(d, "byte %zu: the gzip stream is truncated "
					"(file cut short?)", at);
			goto out_end;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			if (rc == Z_MEM_ERROR) {
				err = -ENOMEM;
				goto out_end;
			}
			err = kiln_diag(d, "byte %zu: corrupt gzip data: %s", at,
					z.msg ? z.msg : "inflate failed");
			goto out_end;
		}
		if (at == len && rc == Z_OK && z.avail_out != 0) {
			err = kiln_diag(d, "byte %zu: the gzip stream is truncated "
					"(file cut short?)", len);
			goto out_end;
		}
	}
out_end:
	inflateEnd(&z);
	return err;
}

int kiln_gzip(const void *data, size_t len, int level, struct kiln_buf *out)
{
	z_stream z;
	int rc, err = 0;

	int wbits = 9, mem;

	memset(&z, 0, sizeof(z));
	/* A window no larger than the input (it holds all of it anyway),
	 * and hash tables to match: zlib's state for a 32 KiB window is
	 * 256 KiB, allocated and touched for a profile of a few KiB. */
	while (wbits < 15 && ((size_t)1 << wbits) < len)
		wbits++;
	mem = wbits - 7 < 1 ? 1 : wbits - 7;
	/* 16 + wbits: gzip header. */
	if (deflateInit2(&z, level, Z_DEFLATED, 16 + wbits, mem,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	err = kiln_buf_grow(out, deflateBound(&z, (uLong)len) + 64);
	if (err)
		goto out_end;
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	z.next_out = (unsigned char *)out->data + out->len;
	z.avail_out = (uInt)(out->cap - out->len - 1);
	rc = deflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) {
		err = -ENOMEM;
		goto out_end;
	}
	out->len = (size_t)((char *)z.next_out - out->data);
	out->data[out->len] = '\0';
out_end:
	deflateEnd(&z);
	return err;
}
